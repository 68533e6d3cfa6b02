# cancel_task stops an update-by-query slice within a fraction of a second
# wherever it is: in the middle of scanning a large shard for matches (a
# sloppy phrase of 3000 terms over long documents takes many seconds per
# shard) and in the middle of a batch whose script is slow.  The task then
# reports "canceled": "by user request", what it wrote before stays
# written, and nothing fails.  Before the scan checked the task's cancel
# flag, the slice scanned the whole shard first; before the batch loop
# did, it finished the batch.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SeTest;

my $node = SeTest::new_node('taskcancel',
	extra => "search_engine.task_threads = 1\nsearch_engine.merge_threads = 0\n");

# 2000 documents of 5000 words over a vocabulary of 100 in one shard: every
# document is a candidate of the phrase (none matches) and the sloppy
# matcher walks all of its positions (test/tap/130: more than 2 s for 1000
# of them even on a quiet host)
my $t0 = time;
$node->safe_psql('postgres', q{
SELECT search_engine.create_index('long', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0},
  "mappings": {"properties": {"body": {"type": "text"}, "touched": {"type": "integer"}}}}');
SELECT setseed(0.42);
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n{"body": "%s"}', g,
         (SELECT string_agg('w' || (random() * 99)::int, ' ') FROM generate_series(1, 5000) WHERE g > 0)), E'\n') || E'\n',
       'long', refresh => 'true')->>'errors'
  FROM generate_series(1, 2000) g;
CREATE TABLE q AS SELECT jsonb_build_object('match_phrase',
    jsonb_build_object('body', jsonb_build_object('slop', 100,
      'query', (SELECT string_agg('w' || (random() * 99)::int, ' ') FROM generate_series(1, 3000))))) AS query;
-- cancel the task, wait for its end: seconds from the cancel to the end
CREATE FUNCTION cancel_and_wait(task text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  PERFORM search_engine.cancel_task(task);
  PERFORM search_engine.get_task(task, true);
  RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
});
note(sprintf('loaded in %.1f s', time - $t0));
is($node->safe_psql('postgres', q{SELECT search_engine.count('long')}), '2000', '2000 long documents');

sub start_task
{
	my ($body, $args) = @_;
	return $node->safe_psql('postgres',
		"SELECT search_engine.update_by_query('long', $body, slices => '1', conflicts => 'proceed', wait_for_completion => false $args)->>'task'");
}

# state and documents handled so far, from the tasks view
sub progress
{
	my ($task) = @_;
	return $node->safe_psql('postgres',
		"SELECT status || ' ' || (coalesce(updated, 0) + coalesce(noops, 0)) FROM search_engine.tasks WHERE task_id = '$task'");
}

# 1. cancelled while it scans: a second in, the slice is still scanning
# (running, no document handled: the phrase matches none, so a finished
# scan ends the task at once); it ends within 0.3 s, nothing failed
my $phrase = q{(SELECT jsonb_build_object('query', query, 'script', '{"source": "ctx.op = \"noop\""}'::jsonb) FROM q)};
my $task = start_task($phrase, '');
usleep(1_000_000);
is(progress($task), 'running 0', 'scan: a second in, the slice is still scanning the shard');
my $took = $node->safe_psql('postgres', "SELECT cancel_and_wait('$task')");
cmp_ok($took, '<', 0.3, sprintf('scan: the task ends within 0.3 s of cancel_task (%.3f s)', $took));
my ($canceled, $failures, $noops) = split /\|/, $node->safe_psql('postgres',
	"SELECT r->>'canceled', jsonb_array_length(r->'failures'), r->>'noops'
	   FROM (SELECT search_engine.get_task('$task')->'response' r) x");
is($canceled, 'by user request', 'scan: the response says canceled by user request');
is($failures, '0', 'scan: no failures');
is($noops, '0', 'scan: no document was processed');
is(progress($task), 'cancelled 0', 'scan: the tasks view shows it cancelled');

# 2. cancelled in the middle of a batch of 300 whose script takes
# milliseconds a document (seconds a batch; 150,000 iterations stay within
# the statement budget): done within 0.3 s; the first batch stays
# written, the cancelled one is not sent
my $slow = q{'{"script": {"source": "long x = 0; for (int i = 0; i < 150000; i++) { x += i } ctx._source.touched = 1"}}'};
my $start = time;
$task = start_task($slow, ", scroll_size => 300");
my $updated = 0;
for (1 .. 3000)
{
	my ($st, $n) = split / /, progress($task);
	$updated = $n;
	last if $n > 0 || $st ne 'running';
	usleep(20_000);
}
my $first = time - $start;
note(sprintf('batch: the first batch of 300 was written after %.1f s', $first));
is($updated, '300', 'batch: the first batch was written');
cmp_ok($first, '>', 0.6, 'batch: the premise: a batch takes longer than the bound and the wait before the cancel');
usleep(300_000);
$took = $node->safe_psql('postgres', "SELECT cancel_and_wait('$task')");
cmp_ok($took, '<', 0.3, sprintf('batch: the task ends within 0.3 s of cancel_task (%.3f s)', $took));
my $upd;
($canceled, $failures, $upd) = split /\|/, $node->safe_psql('postgres',
	"SELECT r->>'canceled', jsonb_array_length(r->'failures'), r->>'updated'
	   FROM (SELECT search_engine.get_task('$task')->'response' r) x");
is($canceled, 'by user request', 'batch: canceled by user request');
is($failures, '0', 'batch: no failures');
cmp_ok($upd, '>=', 300, "batch: what was written is reported ($upd)");
cmp_ok($upd, '<', 2000, 'batch: the job stopped early');
$node->safe_psql('postgres', "SELECT search_engine.refresh('long')");
is($node->safe_psql('postgres', q{SELECT search_engine.count('long', '{"query": {"term": {"touched": 1}}}')}),
	$upd, 'batch: every update reported is in the index');
is($node->safe_psql('postgres', q{SELECT search_engine.count('long')}), '2000', 'no document was lost');

# the worker is healthy: a new task runs to its end
$task = start_task(q{'{"query": {"term": {"_id": "7"}}, "script": {"source": "ctx._source.touched = 2"}}'}, '');
$node->safe_psql('postgres', "SELECT search_engine.get_task('$task', true)");
is($node->safe_psql('postgres', "SELECT search_engine.get_task('$task')->'response'->>'updated'"), '1',
	'a task after the cancellations runs to its end');
my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|terminated by signal|server process .* was terminated/, 'no crash in the server log');
$node->stop;
done_testing();
