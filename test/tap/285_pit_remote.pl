# Point in time and scroll over shards on other nodes (issue 17): two data
# nodes (n1, n2) and a dedicated master (n3, which holds no shard and so
# coordinates every shard remotely), an index of 2 shards, no replica.
# A point in time opened on n3 pins each shard on the node holding it
# (transport action pit_open); documents are then written, deleted and
# merged away on the data nodes, yet every page searched through n3 -- or
# through n1, which holds one of the shards itself -- sees the documents
# of the point in time, and the pages put together equal one sorted result
# with no duplicates or gaps.  A scroll coordinated by n3 does the same
# while documents are written between its pages.  Closing on n1 frees the
# contexts on both data nodes (pit_close); searching it then fails.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use SeTest;
use SeCluster;

my ($cluster, $node) = SeCluster->data_nodes_and_master(etcd_members => 3, name => 'tap285');
my %node = %$node;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my ($st, $b);
$cluster->index_on_data_nodes(\%node, 'pt', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"n":{"type":"long"},"g":{"type":"keyword"}}}}');
($st, $b) = req('n1', 'POST', '/pt/_bulk?refresh=true',
	join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_,"g":"g@{[$_ % 5]}"}\n) } 1 .. 60));
ok($st == 200 && !$b->{errors}, '60 documents');

($st, $b) = req('n3', 'POST', '/pt/_pit?keep_alive=5m');
is_deeply([ $st, $b->{_shards}{total}, $b->{_shards}{successful} ], [ 200, 2, 2 ],
	'a point in time opened on n3 (no shard there)') or diag(explain $b);
my $pit = $b->{id};

# writes, deletes and a merge after it, on both data nodes
($st, $b) = req('n1', 'POST', '/pt/_bulk?refresh=true',
	join('', map { qq({"index":{"_id":"e$_"}}\n{"n":$_,"g":"g@{[$_ % 5]}"}\n) } 1 .. 30)
	  . join('', map { qq({"delete":{"_id":"d$_"}}\n) } 1 .. 20));
ok($st == 200 && !$b->{errors}, '30 written, 20 deleted');
($st, $b) = req('n1', 'POST', '/pt/_forcemerge?max_num_segments=1');
is($st, 200, 'merged to one segment per shard');
($st, $b) = req('n3', 'POST', '/pt/_search', '{"size":0}');
is($b->{hits}{total}{value}, 70, 'the index now holds 70');

sub pit_pages
{
	my ($coord, $size) = @_;
	my @ids;
	my $after;
	for my $page (1 .. 100)
	{
		my $body = { size => $size, sort => [ { g => 'asc' } ], pit => { id => $pit, keep_alive => '2m' } };
		$body->{search_after} = $after if $after;
		my ($s, $r) = req($coord, 'POST', '/_search', encode_json($body));
		return "status $s: " . encode_json($r) unless $s == 200;
		my @h = @{ $r->{hits}{hits} };
		last unless @h;
		push @ids, map { $_->{_id} } @h;
		$after = $h[-1]{sort};
	}
	return \@ids;
}
my ($s, $whole) = req('n3', 'POST', '/_search',
	encode_json({ size => 100, sort => [ { g => 'asc' } ], pit => { id => $pit } }));
is_deeply([ $s, $whole->{hits}{total}{value}, $whole->{_shards}{successful} ], [ 200, 60, 2 ],
	'n3 searches the point in time on both data nodes: the 60 documents it had')
  or diag(explain $whole);
my @whole = map { $_->{_id} } @{ $whole->{hits}{hits} };
for my $coord (qw(n3 n1))
{
	my $ids = pit_pages($coord, 7);
	is_deeply($ids, \@whole, "pages of 7 through $coord equal the one sorted result")
	  or diag(explain $ids);
	my %seen;
	is(scalar(grep { !$seen{$_}++ } @$ids), 60, "$coord: 60 distinct, none written since")
	  if ref $ids;
}

# a scroll coordinated by n3, with writes between its pages
($st, $b) = req('n3', 'POST', '/pt/_search?scroll=1m&size=9', '{"sort":["n"]}');
is($st, 200, 'a scroll opened on n3') or diag(explain $b);
my @scrolled = map { $_->{_id} } @{ $b->{hits}{hits} };
my $sid = $b->{_scroll_id};
my $k = 0;
while (1)
{
	($st, $b) = req('n1', 'POST', "/pt/_doc/w$k?refresh=true", '{"n":1}') if $k < 5;
	($st, $b) = req('n3', 'POST', '/_search/scroll', encode_json({ scroll => '1m', scroll_id => $sid }));
	last unless $st == 200 && @{ $b->{hits}{hits} };
	push @scrolled, map { $_->{_id} } @{ $b->{hits}{hits} };
	$sid = $b->{_scroll_id};
	last if ++$k > 50;
}
my %seen;
is_deeply([ scalar(@scrolled), scalar(grep { !$seen{$_}++ } @scrolled), scalar(grep { /^w/ } @scrolled) ],
	[ 70, 70, 0 ], 'the scroll served the 70 documents once each, none written after it began');
($st, $b) = req('n3', 'DELETE', '/_search/scroll', encode_json({ scroll_id => $sid }));
is_deeply([ $st, $b->{num_freed} ], [ 200, 2 ], 'clearing the scroll frees both data nodes\' contexts');

# a point in time is bound to the role that opened it (ES: the user), on
# the nodes holding its shards too: the coordinator names the role in
# pit_open, pit_close and each shard request
for my $n (qw(n1 n2 n3))
{
	$node{$n}->safe_psql('postgres', 'CREATE ROLE alice IN ROLE search_engine_read; CREATE ROLE bob IN ROLE search_engine_read');
}
sub req_as
{
	my ($n, $role, $method, $path, $body) = @_;
	my $arg = defined $body ? "'$body'" : 'NULL';
	my ($ret, $out, $err) = $node{$n}->psql('postgres',
		"SET ROLE $role; SELECT status || ' ' || coalesce(body::text, 'null') FROM search_engine.request('$method', '$path', $arg)",
		on_error_stop => 0);
	return (0, { error => $err }) if $ret != 0 || $out !~ /^(\d+) (.*)$/s;
	return ($1, decode_json($2));
}
($st, $b) = req_as('n3', 'alice', 'POST', '/pt/_pit?keep_alive=5m');
is($st, 200, 'alice opens a point in time through n3') or diag(explain $b);
my $apit = $b->{id};
($st, $b) = req_as('n3', 'bob', 'POST', '/_search', encode_json({ size => 0, pit => { id => $apit } }));
is_deeply([ $st, $b->{error}{type} ], [ 404, 'search_context_missing_exception' ],
	'bob cannot search it: neither data node serves him alice\'s contexts') or diag(explain $b);
($st, $b) = req_as('n1', 'bob', 'DELETE', '/_pit', encode_json({ id => $apit }));
is_deeply([ $st, $b->{num_freed} ], [ 404, 0 ], 'nor close them') or diag(explain $b);
($st, $b) = req_as('n1', 'alice', 'POST', '/_search', encode_json({ size => 0, pit => { id => $apit } }));
is_deeply([ $st, $b->{_shards}{successful} ], [ 200, 2 ], 'alice still searches both shards')
  or diag(explain $b);
($st, $b) = req_as('n3', 'alice', 'DELETE', '/_pit', encode_json({ id => $apit }));
is_deeply([ $st, $b->{num_freed} ], [ 200, 2 ], 'and closes them') or diag(explain $b);

($st, $b) = req('n1', 'DELETE', '/_pit', encode_json({ id => $pit }));
is_deeply([ $st, $b->{num_freed} ], [ 200, 2 ], 'closed on n1: both shard contexts freed')
  or diag(explain $b);
($st, $b) = req('n3', 'POST', '/_search', encode_json({ pit => { id => $pit } }));
is_deeply([ $st, $b->{error}{type} ], [ 404, 'search_context_missing_exception' ],
	'a search of the closed point in time fails') or diag(explain $b);

$cluster->teardown;
done_testing();
