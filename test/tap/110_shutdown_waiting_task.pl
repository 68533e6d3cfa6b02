# A clean shutdown while a task worker waits for a bulk that no write
# worker will take (the write workers stop first) must not hang: the task
# worker abandons the wait.  To make the wait certain, the write worker is
# held with SIGSTOP while the update-by-query task queues its bulk, and let
# go only once the shutdown has begun; it then stops without taking it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SeTest;

my $node = SeTest::new_node('shutdown', write_threads => 1);
$node->safe_psql('postgres',
	q{SELECT search_engine.create_index('t', '{"settings": {"number_of_shards": 1}}')});
my $body = join('\n', map { qq({"index": {"_id": "$_"}}\\n{"n": $_}) } 1 .. 200);
is($node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 't', refresh => 'true')->'errors'"),
	'false', 'documents indexed');

my $pm = SeTest::postmaster_pid($node);
my ($writer) = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'search_engine write worker'`;
ok($writer, 'the write worker runs');
kill 'STOP', $writer;

my $task = $node->safe_psql('postgres',
	q{SELECT search_engine.update_by_query('t', '{"script": {"source": "ctx._source.n += 1"}}', wait_for_completion => false)->>'task'});
# the task has queued its first bulk once it is running for a moment
my $running = 0;
for my $i (1 .. 50)
{
	$running = $node->safe_psql('postgres', "SELECT status FROM search_engine.tasks WHERE task_id = '$task'") eq 'running';
	last if $running;
	usleep(100_000);
}
ok($running, 'the task runs');
usleep(500_000);
is($node->safe_psql('postgres', "SELECT coalesce(updated, 0) FROM search_engine.tasks WHERE task_id = '$task'"),
	'0', 'and waits for its first bulk');

# fast shutdown, then let the write worker see its SIGTERM
PostgreSQL::Test::Utils::system_log('pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-W', 'stop');
usleep(200_000);
kill 'CONT', $writer;
my $stopped = 0;
for my $i (1 .. 200)
{
	if (!-e $node->data_dir . '/postmaster.pid') { $stopped = 1; last; }
	usleep(100_000);
}
ok($stopped, 'the server stops within 20 s');
if ($stopped)
{
	$node->_update_pid(0);
}
else
{
	$node->stop('immediate', fail_ok => 1);
}

# nothing acknowledged is lost, and the node comes back
$node->start;
SeTest::wait_ready($node);
is($node->safe_psql('postgres', "SELECT search_engine.count('t')"), '200', 'the documents are all there after the restart');
$node->stop;
done_testing();
