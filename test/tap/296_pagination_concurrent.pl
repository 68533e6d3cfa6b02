# Deep pagination while documents are written at the same time (issue 17):
# a separate process indexes new documents, changes the sort field of old
# ones, deletes others, refreshes and force-merges without pause, while
# this one pages through a point in time (search_after, and sliced), and
# through scrolls (plain and sliced).  The pages of each, put together,
# must equal one sorted result of the same snapshot: no duplicate, no gap,
# none of the concurrent writes seen -- and the writer must really have
# changed the live index meanwhile, or the test proves nothing.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);
use POSIX ();
use SeTest;
use SeCluster;

my $node = SeTest::new_node('pages');
my $N = 3000;

sub req { return SeCluster::request($node, @_); }

my ($st, $b) = req('PUT', '/cp', '{"settings":{"number_of_shards":3,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"n":{"type":"long"},"g":{"type":"keyword"}}}}');
is($st, 200, 'an index of 3 shards');
for my $part (0 .. 2)
{
	($st, $b) = req('POST', '/cp/_bulk?refresh=true',
		join('', map { qq({"index":{"_id":"d$_"}}\n{"n":@{[$_ % 700]},"g":"g@{[$_ % 5]}"}\n) }
			  ($part * 1000 + 1) .. ($part * 1000 + 1000)));
	ok($st == 200 && !$b->{errors}, "documents " . ($part * 1000 + 1) . "-" . ($part * 1000 + 1000));
}

# the writer: its own process and connection, until told to stop
my $tmp = PostgreSQL::Test::Utils::tempdir();
my ($stop, $done) = ("$tmp/stop", "$tmp/iterations");
my $writer = fork();
die "fork: $!" unless defined $writer;
if ($writer == 0)
{
	srand(42);
	my $it = 0;
	while (!-e $stop)
	{
		$it++;
		my $ndjson = join('', map { qq({"index":{"_id":"w${it}_$_"}}\n{"n":@{[int(rand(700))]},"g":"new"}\n) } 1 .. 20)
		  . join('', map { my $d = 1 + int(rand($N)); qq({"index":{"_id":"d$d"}}\n{"n":@{[int(rand(700))]},"g":"moved"}\n) } 1 .. 10)
		  . join('', map { my $d = 1 + int(rand($N)); qq({"delete":{"_id":"d$d"}}\n) } 1 .. 5);
		$ndjson =~ s/'/''/g;
		system('psql', '-X', '-q', '-o', '/dev/null', '-d', $node->connstr('postgres'), '-c',
			"SELECT search_engine.request('POST', '/cp/_bulk?refresh=true', '$ndjson')");
		system('psql', '-X', '-q', '-o', '/dev/null', '-d', $node->connstr('postgres'), '-c',
			"SELECT search_engine.request('POST', '/cp/_forcemerge?max_num_segments=1')")
		  if $it % 7 == 0;
		open(my $fh, '>', "$done.tmp") or die;
		print $fh $it;
		close $fh;
		rename("$done.tmp", $done);
	}
	# not exit: the test framework's END blocks would stop the server
	POSIX::_exit(0);
}

sub writer_iterations
{
	open(my $fh, '<', $done) or return 0;
	my $n = <$fh>;
	return $n // 0;
}

sub ids_of { return [ map { $_->{_id} } @{ $_[0]{hits}{hits} } ]; }

sub no_duplicates
{
	my ($ids) = @_;
	my %seen;
	return !grep { $seen{$_}++ } @$ids;
}

# wait until the writer is going
for (1 .. 600) { last if writer_iterations() >= 2; usleep(50_000); }
ok(writer_iterations() >= 2, 'the writer is writing');

# 1. a point in time paged with search_after on a field the writer changes
($st, $b) = req('POST', '/cp/_pit?keep_alive=5m');
is($st, 200, 'a point in time');
my $pit = $b->{id};
sub pit_ids
{
	my ($st, $b) = req('POST', '/_search', encode_json({ size => 10000, _source => JSON::PP::false,
		sort => [ { n => 'asc' } ], pit => { id => $pit } }));
	return ids_of($b);
}
sub pit_count_of_writes
{
	my ($st, $b) = req('POST', '/_search', encode_json({ size => 0, pit => { id => $pit },
		query => { terms => { g => [ 'new', 'moved' ] } } }));
	return $b->{hits}{total}{value};
}
my $at_open = pit_ids();
my $writes_at_open = pit_count_of_writes();
ok(@$at_open > 2000, 'its snapshot (' . scalar(@$at_open) . ' documents)');
my $it0 = writer_iterations();
my (@paged, $after, $pages);
my $sorted = 1;
my $last = -1;
for my $page (1 .. 200)
{
	my $q = { size => 97, _source => JSON::PP::false, sort => [ { n => 'asc' } ],
		pit => { id => $pit, keep_alive => '5m' }, track_total_hits => JSON::PP::false };
	$q->{search_after} = $after if $after;
	($st, $b) = req('POST', '/_search', encode_json($q));
	last unless $st == 200 && @{ $b->{hits}{hits} };
	$pages++;
	for my $h (@{ $b->{hits}{hits} })
	{
		$sorted = 0 if $h->{sort}[0] < $last;
		$last = $h->{sort}[0];
	}
	push @paged, @{ ids_of($b) };
	$after = $b->{hits}{hits}[-1]{sort};
	$pit = $b->{pit_id} if $b->{pit_id};
	usleep(20_000);
}
my $it1 = writer_iterations();
my $whole = pit_ids();
is_deeply($whole, $at_open, 'the point in time holds what it held when opened');
ok($pages > 25, "$pages pages");
ok($sorted, 'every page continues the order');
ok(no_duplicates(\@paged), 'no document twice');
is_deeply(\@paged, $whole, 'the pages equal one sorted result of the point in time');
ok($it1 - $it0 >= 3, 'the writer went on meanwhile (' . ($it1 - $it0) . ' bulks)');

# 2. the same point in time in 3 slices, each paged on its own
my @sliced;
my $sliced_ok = 1;
for my $id (0 .. 2)
{
	my ($a, @mine);
	for (1 .. 200)
	{
		my $q = { size => 101, _source => JSON::PP::false, sort => [ { n => 'asc' } ],
			pit => { id => $pit }, slice => { id => $id, max => 3 } };
		$q->{search_after} = $a if $a;
		($st, $b) = req('POST', '/_search', encode_json($q));
		$sliced_ok = 0, last unless $st == 200;
		last unless @{ $b->{hits}{hits} };
		push @mine, @{ ids_of($b) };
		$a = $b->{hits}{hits}[-1]{sort};
	}
	ok(@mine > 0 && @mine < $N, "slice $id holds part (" . scalar(@mine) . ")");
	push @sliced, @mine;
}
ok($sliced_ok, 'every sliced page answered');
ok(no_duplicates(\@sliced), 'the slices are disjoint');
is_deeply([ sort @sliced ], [ sort @$whole ], 'together they are the point in time');

# the live index has moved on: the snapshot was not the live index
($st, $b) = req('POST', '/cp/_search', '{"size":0,"track_total_hits":true}');
my $live_total = $b->{hits}{total}{value};
($st, $b) = req('POST', '/cp/_search', '{"size":0,"query":{"term":{"g":"moved"}}}');
ok($live_total != scalar(@$whole) || $b->{hits}{total}{value} > $writes_at_open,
	"the live index changed meanwhile ($live_total documents, $b->{hits}{total}{value} moved)");
is(pit_count_of_writes(), $writes_at_open, 'the point in time sees none of the writes after it');
($st) = req('DELETE', '/_pit', encode_json({ id => $pit }));
is($st, 200, 'closed');

# 3. scrolls, plain and sliced: their pages are the snapshot taken by the
# first page (its hits.total), whatever is written between the pages
for my $slices (1, 2)
{
	my @ids;
	my $total = 0;
	my $ok = 1;
	my $w0 = writer_iterations();
	for my $id (0 .. $slices - 1)
	{
		my $q = { size => 89, _source => JSON::PP::false, sort => ['_doc'] };
		$q->{slice} = { id => $id, max => $slices } if $slices > 1;
		($st, $b) = req('POST', '/cp/_search?scroll=2m', encode_json($q));
		$ok = 0 unless $st == 200;
		$total += $b->{hits}{total}{value};
		my $sid = $b->{_scroll_id};
		while ($st == 200 && @{ $b->{hits}{hits} })
		{
			push @ids, @{ ids_of($b) };
			usleep(20_000);
			($st, $b) = req('POST', '/_search/scroll', encode_json({ scroll => '2m', scroll_id => $sid }));
			$ok = 0 unless $st == 200;
			$sid = $b->{_scroll_id} // $sid;
		}
		req('DELETE', '/_search/scroll', encode_json({ scroll_id => $sid }));
	}
	ok($ok, "scroll in $slices slice(s): every page answered");
	ok(no_duplicates(\@ids), "scroll in $slices slice(s): no document twice");
	is(scalar(@ids), $total, "scroll in $slices slice(s): as many documents as its first page counted ($total)");
	ok(writer_iterations() - $w0 >= 2, "scroll in $slices slice(s): the writer went on meanwhile");
}

open(my $fh, '>', $stop) or die;
close $fh;
waitpid($writer, 0);
is($? >> 8, 0, 'the writer ended cleanly (' . writer_iterations() . ' bulks)');
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP|PANIC|server process .* was terminated/, 'no crash in the server log');
$node->stop;
done_testing();
