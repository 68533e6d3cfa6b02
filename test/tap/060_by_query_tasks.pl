# Update-by-query as a task: conflicts=proceed vs abort with a concurrent
# writer, cancel stops the slices promptly with partial counts, rethrottle
# takes effect, and a restart while a task runs keeps every applied update
# and marks the task failed instead of losing it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use POSIX ();
use SeTest;

my $node = SeTest::new_node('tasks', extra => "search_engine.task_threads = 2\n");
my $N = 6000;
$node->safe_psql('postgres', q{SELECT search_engine.create_index('t', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "integer"}, "v": {"type": "integer"}}}}')});
$node->safe_psql('postgres', qq{SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\\n{"n": %s, "v": 0}', i, i), E'\\n') FROM generate_series(1, $N) i), 't', refresh => 'true')});

sub start_task
{
	my ($args) = @_;
	# the task reads a point-in-time snapshot: make earlier writes visible
	$node->safe_psql('postgres', "SELECT search_engine.refresh('t')");
	return $node->safe_psql('postgres', "SELECT search_engine.update_by_query('t', $args, wait_for_completion => false)->>'task'");
}

sub field
{
	my ($task, $path) = @_;
	return $node->safe_psql('postgres', "SELECT search_engine.get_task('$task', true)$path");
}

# wait until the task has taken its snapshot and is writing
sub wait_started
{
	my ($task) = @_;
	for my $i (1 .. 300)
	{
		my $u = $node->safe_psql('postgres', "SELECT coalesce(updated, 0) + coalesce(version_conflicts, 0) FROM search_engine.tasks WHERE task_id = '$task'");
		return if $u ne '' && $u > 0;
		usleep(20_000);
	}
}

# a writer that rewrites random documents while the task runs
sub run_writer
{
	my ($seconds) = @_;
	my $pid = fork();
	die unless defined $pid;
	if ($pid == 0)
	{
		# one session writing in a loop: a psql per write managed a handful
		# of writes under a loaded machine, sometimes none that conflicted
		# never let a child run the node's END teardown
		eval {
			$node->psql('postgres', qq{DO \$\$
DECLARE t0 timestamptz := clock_timestamp(); id int;
BEGIN
  WHILE clock_timestamp() < t0 + interval '$seconds s' LOOP
    id := 1 + floor(random() * $N)::int;
    PERFORM search_engine.index_doc('t', id::text, jsonb_build_object('n', id, 'v', -1));
    PERFORM pg_sleep(0.002);
  END LOOP;
END \$\$});
		};
		POSIX::_exit(0);
	}
	return $pid;
}

# 1. conflicts=proceed: conflicts are counted, the job finishes
my $task = start_task(q{'{"script": {"source": "ctx._source.v += 1"}}', slices => 'auto', conflicts => 'proceed', scroll_size => 100, requests_per_second => 1000});
wait_started($task);
my $w = run_writer(3);
waitpid($w, 0);
my ($total, $updated, $conflicts, $failures) = split /\|/, $node->safe_psql('postgres',
	"SELECT r->'total', r->'updated', r->'version_conflicts', jsonb_array_length(r->'failures') FROM (SELECT search_engine.get_task('$task', true)->'response' r) x");
cmp_ok($conflicts, '>', 0, "proceed: concurrent writes were counted as version conflicts ($conflicts)");
is($updated + $conflicts, $total, 'proceed: every matched document was updated or conflicted');
is($failures, '0', 'proceed: no failures');

# 2. conflicts=abort: the first conflict stops the job and is reported
$task = start_task(q{'{"script": {"source": "ctx._source.v += 1"}}', slices => '1', conflicts => 'abort', scroll_size => 50, requests_per_second => 1000});
wait_started($task);
$w = run_writer(3);
waitpid($w, 0);
my ($upd2, $conf2, $ftype) = split /\|/, $node->safe_psql('postgres',
	"SELECT r->'updated', r->'version_conflicts', r->'failures'->0->'cause'->>'type' FROM (SELECT search_engine.get_task('$task', true)->'response' r) x");
cmp_ok($conf2, '>=', 1, 'abort: the conflict is counted');
is($ftype, 'version_conflict_engine_exception', 'abort: and reported in failures');
cmp_ok($upd2, '<', $N, "abort: the job stopped early ($upd2 updated)");

# 3. cancel stops promptly with partial counts
$task = start_task(q{'{"script": {"source": "ctx._source.v += 1"}}', slices => '2', conflicts => 'proceed', scroll_size => 50, requests_per_second => 200});
usleep(1_500_000);
$node->safe_psql('postgres', "SELECT search_engine.cancel_task('$task')");
my $t0 = time();
my ($canceled, $upd3) = split /\|/, $node->safe_psql('postgres',
	"SELECT r->>'canceled', r->'updated' FROM (SELECT search_engine.get_task('$task', true)->'response' r) x");
cmp_ok(time() - $t0, '<', 5, 'cancel: the slices stopped within seconds');
is($canceled, 'by user request', 'cancel: the response says so');
cmp_ok($upd3, '>', 0, "cancel: partial count reported ($upd3)");
cmp_ok($upd3, '<', $N, 'cancel: not everything was updated');
is($node->safe_psql('postgres', "SELECT status FROM search_engine.tasks WHERE task_id = '$task'"), 'cancelled', 'tasks view shows it cancelled');

# 4. rethrottle: a slow job speeds up
$task = start_task(q{'{"script": {"source": "ctx._source.v += 1"}}', slices => '1', conflicts => 'proceed', scroll_size => 50, requests_per_second => 100});
usleep(1_000_000);
my $before = $node->safe_psql('postgres', "SELECT updated FROM search_engine.tasks WHERE task_id = '$task'");
cmp_ok($before, '<', 400, "throttled to 100 docs/s: $before updated after 1s");
$node->safe_psql('postgres', "SELECT search_engine.rethrottle_task('$task', -1)");
$t0 = time();
is($node->safe_psql('postgres', "SELECT search_engine.get_task('$task', true)->'response'->'updated'"), $N, 'rethrottled job completes');
cmp_ok(time() - $t0, '<', 30, 'and much faster than 100 docs/s would allow (' . int(time() - $t0) . 's)');

# 5. a restart while a task runs: applied updates stay, the task is failed
$node->safe_psql('postgres', "SELECT search_engine.refresh('t')");
$task = start_task(q{'{"script": {"source": "ctx._source.marker = 1"}}', slices => '1', conflicts => 'proceed', scroll_size => 50, requests_per_second => 300});
usleep(2_000_000);
$node->restart;
SeTest::wait_ready($node);
my ($completed, $etype) = split /\|/, $node->safe_psql('postgres',
	"SELECT t->'completed', t->'error'->>'type' FROM (SELECT search_engine.get_task('$task') t) x");
is($completed, 'true', 'the interrupted task is completed after the restart');
is($etype, 'task_cancelled_exception', 'and marked failed by the restart');
$node->safe_psql('postgres', "SELECT search_engine.refresh('t')");
my $marked = $node->safe_psql('postgres', q{SELECT search_engine.count('t', '{"query": {"exists": {"field": "marker"}}}')});
cmp_ok($marked, '>', 0, "updates applied before the restart are kept ($marked)");
cmp_ok($marked, '<', $N, 'the task did not finish');
is($node->safe_psql('postgres', "SELECT status FROM search_engine.tasks WHERE task_id = '$task'"), 'failed', 'tasks view shows it failed');
is($node->safe_psql('postgres', "SELECT search_engine.count('t')"), $N, 'no document was lost');
$node->stop;
done_testing();
