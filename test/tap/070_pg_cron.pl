# Scheduled bulk updates with pg_cron: cron.schedule runs
# search_engine.update_by_query on schedule; the run is visible in
# cron.job_run_details and in search_engine.tasks.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SeTest;

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'search_engine,pg_cron'\n"
	  . "search_engine.database = 'postgres'\ncron.database_name = 'postgres'\n"
	  . "cron.use_background_workers = on\nmax_worker_processes = 20\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION search_engine; CREATE EXTENSION pg_cron;');
$node->safe_psql('postgres', q{SELECT search_engine.create_index('c', '{"settings": {"number_of_replicas": 0}}')});
$node->safe_psql('postgres', q{SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n{"n": %s, "status": "new"}', i, i), E'\n') FROM generate_series(1, 500) i), 'c', refresh => 'true')});
my $job = $node->safe_psql('postgres', q{SELECT cron.schedule('mark-old', '* * * * *',
  $$SELECT search_engine.update_by_query('c', '{"query": {"term": {"status.keyword": "new"}}, "script": {"source": "ctx._source.status = \"processed\""}}', refresh => true)$$)});
ok($job > 0, "job scheduled ($job)");

my $status = '';
for my $i (1 .. 150)
{
	$status = $node->safe_psql('postgres', "SELECT status FROM cron.job_run_details WHERE jobid = $job ORDER BY runid LIMIT 1");
	last if $status eq 'succeeded' || $status eq 'failed';
	usleep(500_000);
}
is($status, 'succeeded', 'pg_cron ran the job');
is($node->safe_psql('postgres', q{SELECT search_engine.count('c', '{"query": {"term": {"status.keyword": "processed"}}}')}), '500', 'every document was updated');
is($node->safe_psql('postgres', q{SELECT count(*) FROM search_engine.tasks WHERE action = 'indices:data/write/update/byquery' AND status = 'completed' AND updated = 500}), '1',
	'the run is visible in search_engine.tasks');
$node->safe_psql('postgres', "SELECT cron.unschedule($job)");
$node->stop;
done_testing();
