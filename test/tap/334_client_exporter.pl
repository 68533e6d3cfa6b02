# Debian's prometheus-elasticsearch-exporter, unchanged, scraping the HTTP
# endpoint (GET /, /_cluster/health, /_nodes/_local/stats): its health and
# thread-pool metrics are present and equal to what the server reports
# through SQL; after a bulk with rejections the write pool's rejected and
# completed counters move in the metrics too.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeClients;

my $exporter = '/usr/bin/prometheus-elasticsearch-exporter';
plan skip_all => 'prometheus-elasticsearch-exporter is not installed (test/setup_deps.sh installs it)'
  unless -x $exporter;

my ($node, $base) = SeClients::http_node('exporter', write_threads => 1,
	extra => "search_engine.write_queue_size = 2\nsearch_engine.node_name = 'exp-node'\n");
$node->safe_psql('postgres', q{SELECT search_engine.create_index('m', '{"settings": {"number_of_shards": 8, "number_of_replicas": 0}}')});
# one bulk over 8 shards: 3 admitted, 5 rejected
my $bulk = join('\n', map { qq({"index": {"_id": "$_"}}\\n{"n": $_}) } 1 .. 400);
$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$bulk\\n', 'm')");
# published before the scrape, so the indices figures hold still
$node->safe_psql('postgres', "SELECT search_engine.refresh('m')");

my $mport = PostgreSQL::Test::Cluster::get_free_port();
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ $exporter, "--es.uri=$base", "--web.listen-address=127.0.0.1:$mport" ],
	'<', \undef, '>', \$out, '2>', \$err);

sub scrape
{
	for (1 .. 100)
	{
		my ($st, $m) = SeClients::curl("http://127.0.0.1:$mport/metrics");
		return $m if $st == 200 && $m =~ /^elasticsearch_node_stats_up /m;
		select(undef, undef, undef, 0.2);
	}
	return '';
}

# the value of a metric whose labels include all of %l
sub metric
{
	my ($m, $name, %l) = @_;
	for my $line (split /\n/, $m)
	{
		next unless $line =~ /^\Q$name\E(?:\{(.*)\})? (\S+)$/;
		my ($labels, $v) = ($1 // '', $2);
		next if grep { $labels !~ /(?:^|,)\Q$_\E="\Q$l{$_}\E"/ } keys %l;
		return $v + 0;
	}
	return undef;
}

my $m = scrape();
ok($m ne '', 'the exporter serves metrics') or diag($err);
is(metric($m, 'elasticsearch_cluster_health_up'), 1, 'health collector up');
is(metric($m, 'elasticsearch_node_stats_up'), 1, 'node stats collector up');
is(metric($m, 'elasticsearch_clusterinfo_up'), 1, 'cluster info (GET /) up');
is(metric($m, 'elasticsearch_cluster_health_status', color => 'green'), 1, 'status green');
is(metric($m, 'elasticsearch_cluster_health_status', color => 'red'), 0, 'not red');
is(metric($m, 'elasticsearch_cluster_health_number_of_nodes'), 1, 'one node');
is(metric($m, 'elasticsearch_cluster_health_active_primary_shards'), 8, 'active primaries: the index\'s 8');
is(metric($m, 'elasticsearch_cluster_health_unassigned_shards'), 0, 'none unassigned');

my %tp = map { my @r = split /\|/; ($r[0] => { threads => $r[1], queue_size => $r[2], rejected => $r[3], completed => $r[4] }) }
  split /\n/, $node->safe_psql('postgres', q{SELECT name, threads, queue_size, rejected, completed FROM search_engine.thread_pool});
cmp_ok($tp{write}{rejected}, '>=', 5, 'the bulk had shard requests rejected');
for my $pool ('write', 'search')
{
	is(metric($m, 'elasticsearch_thread_pool_threads_count', type => $pool, name => 'exp-node'),
		$tp{$pool}{threads}, "$pool pool: threads as the server reports");
	is(metric($m, 'elasticsearch_thread_pool_rejected_count', type => $pool, name => 'exp-node'),
		$tp{$pool}{rejected}, "$pool pool: rejected as the server reports");
	is(metric($m, 'elasticsearch_thread_pool_completed_count', type => $pool, name => 'exp-node'),
		$tp{$pool}{completed}, "$pool pool: completed as the server reports");
	is(metric($m, 'elasticsearch_thread_pool_queue_count', type => $pool), 0, "$pool pool: queue empty at rest");
}
ok(defined metric($m, 'elasticsearch_filesystem_data_size_bytes', name => 'exp-node'), 'data path size reported');
cmp_ok(metric($m, 'elasticsearch_filesystem_data_available_bytes', name => 'exp-node') // 0, '>', 0,
	'data path available bytes');

ok(defined metric($m, 'elasticsearch_os_load1', name => 'exp-node'), 'os load average reported');
cmp_ok(metric($m, 'elasticsearch_os_mem_free_bytes', name => 'exp-node') // 0, '>', 0, 'os free memory');
cmp_ok(metric($m, 'elasticsearch_os_mem_used_bytes', name => 'exp-node') // 0, '>', 0, 'os used memory');

# the sections that were missing (and scraped as 0): process, jvm, breakers,
# indices, os cpu -- PostgreSQL's figures in ES's places
cmp_ok(metric($m, 'elasticsearch_process_open_files_count', name => 'exp-node') // 0, '>', 0, 'process: open files');
cmp_ok(metric($m, 'elasticsearch_process_max_files_descriptors', name => 'exp-node') // 0, '>', 0, 'process: max files');
cmp_ok(metric($m, 'elasticsearch_process_cpu_seconds_total', name => 'exp-node') // 0, '>', 0, 'process: cpu time');
cmp_ok(metric($m, 'elasticsearch_process_mem_resident_size_bytes', name => 'exp-node') // 0, '>', 0, 'process: resident memory');
cmp_ok(metric($m, 'elasticsearch_jvm_memory_max_bytes', area => 'heap') // 0, '>', 0, 'jvm: heap max (shared buffers)');
cmp_ok(metric($m, 'elasticsearch_jvm_memory_used_bytes', area => 'heap') // 0, '>', 0, 'jvm: heap used (buffers holding pages)');
ok(defined metric($m, 'elasticsearch_jvm_gc_collection_seconds_count', gc => 'old'), 'jvm: old collector (checkpoints)');
cmp_ok(metric($m, 'elasticsearch_breakers_limit_size_bytes', breaker => 'in_flight_requests') // 0, '>', 0,
	'breakers: in_flight_requests limit');
ok(defined metric($m, 'elasticsearch_os_cpu_percent', name => 'exp-node'), 'os: cpu percent');
is(metric($m, 'elasticsearch_indices_docs', name => 'exp-node'),
	$node->safe_psql('postgres', q{SELECT (search_engine.request('GET', '/_stats/docs')).body->'_all'->'total'->'docs'->>'count'}),
	'indices: the node\'s docs as _stats counts them');
cmp_ok(metric($m, 'elasticsearch_indices_store_size_bytes', name => 'exp-node') // 0, '>', 0, 'indices: store size');
cmp_ok(metric($m, 'elasticsearch_indices_indexing_index_total', name => 'exp-node') // 0, '>', 0, 'indices: indexing total');

# another rejected bulk moves the counters in the next scrape
$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$bulk\\n', 'm')");
my $before = $tp{write}{rejected};
my $after = $node->safe_psql('postgres', q{SELECT rejected FROM search_engine.thread_pool WHERE name = 'write'});
cmp_ok($after, '>', $before, 'the second bulk had rejections too');
$m = scrape();
is(metric($m, 'elasticsearch_thread_pool_rejected_count', type => 'write'), $after,
	'the next scrape shows the new rejected count');

$h->kill_kill;
$node->stop;
done_testing();
