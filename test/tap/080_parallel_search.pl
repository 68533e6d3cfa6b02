# The search thread pool: a search over several shards runs its other
# shards in search workers and must give exactly what the backend alone
# gives (search_parallel = off), also when it is cancelled, when a worker
# dies, and when refresh/merge change the shards while it runs.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use SeTest;

my $node = SeTest::new_node('parsearch',
	extra => "search_engine.search_threads = 2\nsearch_engine.merge_threads = 0\nrestart_after_crash = on\nsearch_engine.search_parallel_min_docs = 0\n");
my $mapping = '{"properties": {"body": {"type": "text"}, "tag": {"type": "keyword"}, "n": {"type": "long"}, "r": {"type": "double"}}}';
$node->safe_psql('postgres', qq{SELECT search_engine.create_index('p1', '{"settings": {"number_of_shards": 4, "number_of_replicas": 0}, "mappings": $mapping}')});
$node->safe_psql('postgres', qq{SELECT search_engine.create_index('p2', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": $mapping}')});

srand(42);
my @words = qw(alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi);
sub rword { $words[int(rand(@words))] }
# several bulks with refreshes between them: shards with several segments, some deletes
for my $batch (0 .. 3)
{
	for my $index ('p1', 'p2')
	{
		my @lines;
		for my $i (1 .. 400)
		{
			my $id = "$batch-$i";
			my $body = join(' ', map { rword() } 1 .. 1 + int(rand(12)));
			my $doc = qq({"body": "$body", "tag": "@{[rword()]}") . (rand() < 0.8 ? qq(, "n": @{[int(rand(50))]}) : '') . qq(, "r": @{[sprintf('%.2f', rand(10))]}});
			push @lines, qq({"index": {"_id": "$id"}}), $doc;
		}
		push @lines, qq({"delete": {"_id": "@{[$batch - 1]}-$_"}}) for ($batch > 0 ? (1 .. 30) : ());
		my $body = join("\n", @lines) . "\n";
		$body =~ s/'/''/g;
		$node->safe_psql('postgres', "SELECT search_engine.bulk('$body', '$index', refresh => 'true')->'errors'");
	}
}

sub pool_completed
{
	return $node->safe_psql('postgres', "SELECT completed FROM search_engine.thread_pool WHERE name = 'search'");
}

# random queries: the pool's answers equal the backend's
my @sorts = ('', '"sort": [{"n": "desc"}, {"tag": "asc"}],', '"sort": [{"tag": {"order": "desc"}}, "_score"], "track_scores": true,',
	'"sort": ["_doc"],', '"sort": [{"r": "asc"}],', '"sort": [{"n": {"order": "asc", "missing": "_first"}}],');
my @totals = ('', '"track_total_hits": true,', '"track_total_hits": false,', '"track_total_hits": 7,');
my @queries;
for my $i (1 .. 160)
{
	my $w1 = rword();
	my $w2 = rword();
	my @q = (qq({"match": {"body": "$w1"}}), qq({"match": {"body": "$w1 $w2"}}),
		qq({"match": {"body": {"query": "$w1 $w2", "operator": "and"}}}), qq({"match_phrase": {"body": "$w1 $w2"}}),
		qq({"bool": {"must": [{"match": {"body": "$w1"}}], "filter": [{"range": {"n": {"gte": @{[int(rand(40))]}}}}]}}),
		qq({"term": {"tag": "$w1"}}), qq({"match_all": {}}));
	my $q = $q[int(rand(@q))];
	my $from = int(rand(4)) == 0 ? int(rand(30)) : 0;
	my $size = (1, 3, 10, 25, 0)[int(rand(5))];
	my $minscore = rand() < 0.1 ? '"min_score": 1.5,' : '';
	push @queries, qq({"query": $q, $sorts[int(rand(@sorts))] $totals[int(rand(@totals))] $minscore "from": $from, "size": $size});
}
my $values = join(",\n", map { my $q = $queries[$_]; $q =~ s/'/''/g; "($_, '" . ($_ % 3 == 0 ? 'p1,p2' : 'p1') . "', '$q'::jsonb)" } 0 .. $#queries);
my $before = pool_completed();
my $diff = $node->safe_psql('postgres', qq{
CREATE TABLE q(id int, idx text, body jsonb);
INSERT INTO q VALUES $values;
SET search_engine.search_parallel = off;
CREATE TABLE r_off AS SELECT id, search_engine.search(idx, body) - 'took' AS r FROM q;
SET search_engine.search_parallel = on;
CREATE TABLE r_on AS SELECT id, search_engine.search(idx, body) - 'took' AS r FROM q;
SELECT string_agg(q.body::text || E'\\n  off ' || r_off.r::text || E'\\n  on  ' || r_on.r::text, E'\\n')
FROM q JOIN r_off USING (id) JOIN r_on USING (id) WHERE r_off.r IS DISTINCT FROM r_on.r});
is($diff, '', 'parallel search equals the backend-only search on ' . scalar(@queries) . ' random queries');
cmp_ok(pool_completed() - $before, '>=', scalar(@queries), 'the search workers ran shard requests');
is($node->safe_psql('postgres', q{SELECT count(*) FROM r_on WHERE (r->'hits'->'total'->>'value')::int > 0}) > 100, 1,
	'most random queries have hits');

# the shards' error is the backend's error
my ($ret, $out, $err1) = $node->psql('postgres', q{SELECT search_engine.search('p1', '{"sort": [{"body": "asc"}]}')});
my ($ret2, $out2, $err2) = $node->psql('postgres', q{SET search_engine.search_parallel = off; SELECT search_engine.search('p1', '{"sort": [{"body": "asc"}]}')});
like($err1, qr/Fielddata is disabled on \[body\]/, 'sort on a text field fails');
is($err1, $err2, 'with the same error either way');

my $q = q{'p1', '{"query": {"match": {"body": "alpha beta"}}, "size": 20}'};
my $expected = $node->safe_psql('postgres', "SET search_engine.search_parallel = off; SELECT search_engine.search($q) - 'took'");

sub dsm_maps
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/maps") or return -1;
	my $n = grep { m{/PostgreSQL\.\d+} } <$fh>;
	return $n;
}
sub search_workers
{
	my $pm = SeTest::postmaster_pid($node);
	return grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'search_engine search worker'`;
}
sub wait_pool_idle
{
	for (1 .. 100)
	{
		return 1 if $node->safe_psql('postgres', "SELECT active + queue FROM search_engine.thread_pool WHERE name = 'search'") eq '0';
		usleep(100_000);
	}
	return 0;
}

# cancellation: statement_timeout while the workers hold the shard requests
my @w = search_workers();
is(scalar(@w), 2, 'two search workers run');
my %maps_before = map { $_ => dsm_maps($_) } @w;
my $cancel_sql = qq{
SELECT count(*) FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\\n') AS l WHERE l ~ '/PostgreSQL\\.[0-9]+';
SET search_engine.search_debug_delay = '1500ms';
SET statement_timeout = '300ms';
SELECT search_engine.search($q);
RESET statement_timeout;
RESET search_engine.search_debug_delay;
SELECT count(*) FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\\n') AS l WHERE l ~ '/PostgreSQL\\.[0-9]+';
SELECT search_engine.search($q) - 'took';
};
($ret, $out, my $err) = $node->psql('postgres', $cancel_sql, on_error_stop => 0);
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels a parallel search');
my @lines = split /\n/, $out;
is($lines[0], $lines[1], 'the cancelled backend holds no DSM segment afterwards');
is($lines[2], $expected, 'and its next search is right');
ok(wait_pool_idle(), 'the workers finish the abandoned requests');
is_deeply({ map { $_ => dsm_maps($_) } @w }, \%maps_before, 'and hold no DSM segment afterwards');

# pg_cancel_backend from another session
my ($cout, $cerr) = ('', '');
my $h = IPC::Run::start(['psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	"SET search_engine.search_debug_delay = '2s'; SELECT search_engine.search($q)"], '>', \$cout, '2>', \$cerr);
my $cancelled = 0;
for (1 .. 50)
{
	usleep(100_000);
	$cancelled = $node->safe_psql('postgres', q{SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%search_debug_delay%' AND pid <> pg_backend_pid() AND state = 'active'});
	last if $cancelled;
}
$h->finish;
like($cerr, qr/canceling statement due to user request/, 'pg_cancel_backend cancels a parallel search');
ok(wait_pool_idle(), 'the workers finish the cancelled requests');
is($node->safe_psql('postgres', "SELECT search_engine.search($q) - 'took'"), $expected, 'searches go on');

# a snapshot that changes while the search runs: the search answers for the
# point in time it started at, though refresh and merge removed its segments
my $pit = $node->safe_psql('postgres', "SET search_engine.search_parallel = off; SELECT search_engine.search($q) - 'took'");
($cout, $cerr) = ('', '');
$h = IPC::Run::start(['psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	"SET search_engine.search_debug_delay = '2s'; SELECT search_engine.search($q) - 'took'"], '>', \$cout, '2>', \$cerr);
usleep(500_000);
my @more = map { (qq({"index": {"_id": "new-$_"}}), qq({"body": "alpha beta alpha", "tag": "new"})) } 1 .. 200;
$node->safe_psql('postgres', "SELECT search_engine.bulk('" . join("\n", @more) . "\n', 'p1', refresh => 'true')->'errors'");
$node->safe_psql('postgres', "SELECT search_engine.force_merge('p1', 1)");
$h->finish;
chomp $cout;
is($cerr, '', 'the search survives refresh and merge');
is($cout, $pit, 'and answers for the point in time it started at');
isnt($node->safe_psql('postgres', "SELECT search_engine.search($q) - 'took'"), $pit, 'a new search sees the change');
$expected = $node->safe_psql('postgres', "SET search_engine.search_parallel = off; SELECT search_engine.search($q) - 'took'");

# a worker that exits mid-request (SIGTERM): the backend runs the shard itself
($cout, $cerr) = ('', '');
$h = IPC::Run::start(['psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	"SET search_engine.search_debug_delay = '3s'; SELECT search_engine.search($q) - 'took'"], '>', \$cout, '2>', \$cerr);
usleep(700_000);
@w = search_workers();
kill 'TERM', @w;
$h->finish;
chomp $cout;
is($cerr, '', 'a search whose workers exit does not fail');
is($cout, $expected, 'and gives the right answer');
my $restarted = 0;
for (1 .. 100)
{
	my %old = map { $_ => 1 } @w;
	my @new = grep { !$old{$_} } search_workers();
	if (@new == 2) { $restarted = 1; last; }
	usleep(100_000);
}
ok($restarted, 'the postmaster restarts the search workers');

# kill -9 of a search worker: the server restarts (as for any backend crash);
# the searching backend fails cleanly and searches work afterwards
($cout, $cerr) = ('', '');
$h = IPC::Run::start(['psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	"SET search_engine.search_debug_delay = '3s'; SELECT search_engine.search($q) - 'took'"], '>', \$cout, '2>', \$cerr);
for (1 .. 50)
{
	last if $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%search_debug_delay%' AND pid <> pg_backend_pid() AND state = 'active'});
	usleep(100_000);
}
usleep(300_000);
@w = search_workers();
kill 'KILL', $w[0];
$h->finish;
chomp $cout;
# terminated by the crash (no answer), or finished before it: never a wrong answer
ok($cout eq '' || $cout eq $expected, 'a search during the crash gives no wrong answer');
$node->poll_query_until('postgres', "SELECT threads = '2' FROM search_engine.thread_pool WHERE name = 'search'")
  or die 'server did not come back';
SeTest::wait_ready($node);
is($node->safe_psql('postgres', "SELECT search_engine.search($q) - 'took'"),
	$node->safe_psql('postgres', "SET search_engine.search_parallel = off; SELECT search_engine.search($q) - 'took'"),
	'after the restart parallel searches are right');

$node->stop;
done_testing();
