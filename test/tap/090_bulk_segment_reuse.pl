# A backend keeps its bulk DSM segment for the next bulk (bulk.c,
# bulk_segment), but never one that an interrupted bulk left with a
# sub-request still queued: a worker taking that stale queue entry would
# apply the next bulk's items a second time.  With the only write worker
# stopped (SIGSTOP), a bulk waits in the queue and is cancelled by
# statement_timeout; the session's next bulk must be applied exactly once
# and the cancelled one never.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use SeTest;

my $node = SeTest::new_node('reuse', write_threads => 1);
$node->safe_psql('postgres', q{SELECT search_engine.create_index('r',
  '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}')});

# bulks reuse the kept segment across sizes: every item applied once
for my $n (5, 400, 3, 900, 1)
{
	my $res = $node->safe_psql('postgres', qq{
	  SELECT count(*) FILTER (WHERE i->'index'->>'result' = 'created' AND (i->'index'->>'_version')::int = 1), count(*)
	    FROM json_array_elements(search_engine.bulk(
	           (SELECT string_agg(format(E'{"index": {"_id": "s$n-%s"}}\\n{"n": %s}', g, g), E'\\n') || E'\\n'
	              FROM generate_series(1, $n) g), 'r')->'items') i});
	is($res, "$n|$n", "one session's bulk of $n items: all created once");
}

# Stop the only write worker, so that a bulk stays queued.
my $pm = SeTest::postmaster_pid($node);
my ($worker) = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'write worker'`;
ok($worker, "found the write worker ($worker)");
kill 'STOP', $worker;

# Session B: a bulk cancelled by statement_timeout while queued, then
# another bulk in the same session (it waits for the worker).
my $dir = PostgreSQL::Test::Utils::tempdir;
my $pid = fork();
die "fork" unless defined $pid;
if ($pid == 0)
{
	eval {
		my ($out, $err) = ('', '');
		$node->psql('postgres', q{
SET statement_timeout = '300ms';
SELECT search_engine.bulk(E'{"index": {"_id": "b1"}}\n{"n": 1}\n{"index": {"_id": "b2"}}\n{"n": 2}\n', 'r');
RESET statement_timeout;
SELECT string_agg(i->'index'->>'_id' || ':' || (i->'index'->>'result') || ':' || (i->'index'->>'_version'), ',')
  FROM json_array_elements(search_engine.bulk(E'{"index": {"_id": "c1"}}\n{"n": 1}\n{"index": {"_id": "c2"}}\n{"n": 2}\n', 'r')->'items') i;
}, stdout => \$out, stderr => \$err, on_error_stop => 0);
		open(my $fh, '>', "$dir/out") or die;
		print $fh "$out\n---\n$err\n";
		close $fh;
	};
	POSIX::_exit(0);
}
# the second bulk is queued once its statement is running
$node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%"c1"%' AND state = 'active' AND pid <> pg_backend_pid()})
  or do { kill 'CONT', $worker; die 'the second bulk did not start' };
sleep(1);
kill 'CONT', $worker;
waitpid($pid, 0);
open(my $fh, '<', "$dir/out") or die;
my ($out, $err) = split /\n---\n/, do { local $/; <$fh> };
close $fh;
like($err, qr/canceling statement due to statement timeout/, 'the first bulk was cancelled while queued');
is($out, 'c1:created:1,c2:created:1', 'the next bulk of that session is answered once');

$node->safe_psql('postgres', "SELECT search_engine.refresh('r')");
is($node->safe_psql('postgres', q{SELECT search_engine.get_doc('r', 'c1')->>'_version' || ',' || (search_engine.get_doc('r', 'c2')->>'_version')}),
	'1,1', 'and applied once: no stale queue entry applied it again');
is($node->safe_psql('postgres', q{SELECT (search_engine.get_doc('r', 'b1')->>'found') || ',' || (search_engine.get_doc('r', 'b2')->>'found')}),
	'false,false', 'the cancelled bulk was never applied');
is($node->safe_psql('postgres', "SELECT search_engine.count('r')"), 5 + 400 + 3 + 900 + 1 + 2,
	'the index holds every other document once');
# A session's bulks reuse their heap (bulk.c, keep_bulk_heap): with glibc's
# defaults each 2000-item bulk sent as a statement mapped and faulted in
# ~200 fresh pages (its text, items, answer and their copies).
my $pad = 'x' x 100;
my $body = join('', map { sprintf('{"index": {"_id": "pf-%d"}}\\n{"n": %d, "s": "%s"}\\n', $_, $_, $pad) } 1 .. 2000);
my $minflt = q{SELECT split_part(pg_read_file('/proc/self/stat'), ' ', 10);};
my $script = "SELECT length(search_engine.bulk(E'$body', 'pf')::text) > 0;\n$minflt\n"
  . join('', map { "SELECT length(search_engine.bulk(E'$body', 'pf')::text) > 0;\n" } 1 .. 10)
  . "$minflt\n";
my @out = split /\n/, $node->safe_psql('postgres', $script);
my $faults = ($out[-1] - $out[1]) / 10;
cmp_ok($faults, '<', 60, "a session's next bulks reuse their heap ($faults page faults per 2000-item bulk)");

$node->stop;
done_testing();
