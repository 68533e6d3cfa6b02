# Debian's python3-elasticsearch (7.17), unchanged, against the HTTP
# endpoint (test/clients/python_client.py): index creation, helpers.bulk and
# helpers.streaming_bulk of thousands of documents against a tiny write
# queue (one write thread, queue 2, an 8-shard index: most shard requests of
# each bulk are rejected with 429 and the helpers retry them), every
# document indexed once (counted through SQL too), helpers.scan over
# scroll, search, update_by_query with wait_for_completion=false and the
# tasks API.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeClients;

my $python = '/usr/bin/python3';
plan skip_all => 'python3-elasticsearch is not installed (test/setup_deps.sh installs it)'
  unless system("$python -c 'import elasticsearch' 2>/dev/null") == 0;

my ($node, $base) = SeClients::http_node('pyclient', write_threads => 1,
	extra => "search_engine.write_queue_size = 2\nsearch_engine.max_open_scroll_context = 8\n");
my $docs = 3000;
my ($rc, $out, $err) = SeClients::run_client(600, $python, '-W', 'ignore',
	"$FindBin::RealBin/../clients/python_client.py", $base, $docs);
is($rc, 0, 'the Python client ran through') or diag("stdout:\n$out\nstderr:\n$err");
my $f = SeClients::figures($out);

like($f->{version} // '', qr/^8\./, 'the client accepted the server (product check on GET /)');
is($f->{bulk_ok}, $docs, 'helpers.bulk: every document indexed');
is($f->{bulk_failed}, 0, 'helpers.bulk: none failed after its retries');
is($f->{stream_statuses}, "201:$docs", 'streaming_bulk: every item created once, 429s retried, not yielded');
cmp_ok($f->{write_rejected} // 0, '>', 0, 'the write queue did reject: the retries were needed');
is($f->{count}, 2 * $docs, 'count over HTTP');
is(SeClients::sql_count($node, 'py'), 2 * $docs, 'the same count through SQL');
is($f->{scan}, $docs, 'helpers.scan: every streamed document once');
is($f->{search_total}, 2 * $docs, 'search: total hits');
is($f->{search_top_has_7}, 1, 'search: the matching document ranks in the top 3');
is($f->{task_id_form}, 1, 'update_by_query wait_for_completion=false answers a node:id task');
is($f->{task_updated}, $docs, 'the task completed, its response counts the updates');
is($f->{task_failures}, 0, 'no failures in the task');
is($f->{updated_count}, $docs, 'the updated documents are found');
is($f->{tasks_list_ok}, 1, 'the tasks list answers');

is($f->{scan_again}, $docs, 'a second scan: the first cleared its scroll contexts (clear_scroll)');

$node->stop;
done_testing();
