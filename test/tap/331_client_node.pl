# The official Node.js client @elastic/elasticsearch 8.x (the version
# test/clients/package-lock.json pins), unchanged, against the HTTP endpoint
# (test/clients/node_client.js): helpers.bulk against a tiny write queue
# (its own retry of 429 items), helpers.scrollSearch and scrollDocuments,
# msearch and the msearch helper.  The client's product check needs
# X-Elastic-Product on every answer; its requests carry ES's
# vnd.elasticsearch+json; compatible-with=8 media types.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeClients;

my $clients = "$FindBin::RealBin/../clients";
plan skip_all => 'node is not installed (test/setup_deps.sh installs it)'
  unless system('node --version >/dev/null 2>&1') == 0;
plan skip_all => 'the Node client is not installed in test/clients/node_modules (test/setup_deps.sh runs npm ci)'
  unless -d "$clients/node_modules/\@elastic/elasticsearch";

my ($node, $base) = SeClients::http_node('nodeclient', write_threads => 1,
	extra => "search_engine.write_queue_size = 2\nsearch_engine.max_open_scroll_context = 8\n");
my $docs = 3000;
my ($rc, $out, $err) = SeClients::run_client(600, 'node', "$clients/node_client.js", $base, $docs);
is($rc, 0, 'the Node client ran through') or diag("stdout:\n$out\nstderr:\n$err");
my $f = SeClients::figures($out);

like($f->{version} // '', qr/^8\./, 'the client accepted the server (product check)');
is($f->{bulk_total}, $docs, 'helpers.bulk: every document sent');
is($f->{bulk_successful}, $docs, 'helpers.bulk: every document indexed');
is($f->{bulk_failed}, 0, 'helpers.bulk: none failed');
is($f->{bulk_dropped}, 0, 'helpers.bulk: none dropped');
is($f->{bulk_retried}, 1, 'helpers.bulk retried rejected (429) items');
is($f->{count}, $docs, 'count over HTTP');
is(SeClients::sql_count($node, 'nd'), $docs, 'the same count through SQL');
is($f->{scroll_docs}, $docs / 2, 'scrollSearch: every matching document once');
cmp_ok($f->{scroll_pages} // 0, '>=', 6, 'scrollSearch: over several pages');
is($f->{scroll_documents}, $docs / 2, 'scrollDocuments after it: the first scroll was cleared');
is($f->{msearch_odd}, $docs / 2, 'msearch: first search total');
is($f->{msearch_top}, 42, 'msearch: second search finds its document first');
is($f->{msearch_missing_status}, 404, 'msearch: a missing index fails its own item only');
is($f->{msearch_helper}, '5,6', 'the msearch helper: each search its own answer');

$node->stop;
done_testing();
