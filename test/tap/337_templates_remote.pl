# Search templates in a cluster (issue 17): a stored mustache script put
# through a data node lives in the cluster state (as ES keeps it: the
# source as JSON text with its content_type option) and every node reads
# it; _search/template and _msearch/template through the dedicated master
# (which holds no shard) render there and search the data nodes' shards;
# _render/template answers on any node.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;
use SeCluster;

my ($cluster, $nodes) = SeCluster->data_nodes_and_master(etcd_members => 1, name => 'tap337', wait => 60);
my %node = %$nodes;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my ($st, $b) = req('n1', 'PUT', '/_scripts/tpl',
	'{"script":{"lang":"mustache","source":{"query":{"match":{"m":"{{q}}"}},"size":"{{size}}{{^size}}10{{/size}}"}}}');
is($st, 200, 'a search template put through a data node') or diag(explain $b);
like($cluster->etcd_get('state/scripts') // '', qr/"tpl":\{"lang":"mustache","source":"\{/,
	'committed to the state/scripts key as JSON text');
for my $n (qw(n2 n3))
{
	ok($cluster->wait_for("$n has the template", 30, sub {
		my ($s, $r) = req($n, 'GET', '/_scripts/tpl');
		$s == 200 && $r->{found} && $r->{script}{lang} eq 'mustache'
		  && ($r->{script}{options}{content_type} // '') eq 'application/json;charset=utf-8'
	}), "$n reads it");
}

$cluster->index_on_data_nodes(\%node, 'tr', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"m":{"type":"text"},"k":{"type":"keyword"}}}}');
($st, $b) = req('n3', 'POST', '/tr/_bulk?refresh=true',
	join('', map { qq({"index":{"_id":"d$_"}}\n{"m":"word@{[$_ % 2 ? ' odd' : ' even']}","k":"k$_"}\n) } 1 .. 30));
ok($st == 200 && !$b->{errors}, '30 documents') or diag(explain $b);

# by id through the master: every shard remote
($st, $b) = req('n3', 'POST', '/tr/_search/template', '{"id":"tpl","params":{"q":"odd","size":30}}');
is($st, 200, 'a stored template searched through the master') or diag(explain $b);
is($b->{hits}{total}{value}, 15, 'the odd documents of both shards');
is(scalar(grep { $_->{_id} =~ /^d(\d+)$/ && $1 % 2 } @{ $b->{hits}{hits} }), 15, 'only odd ones');
is($b->{_shards}{successful}, 2, 'both shards answered');

# inline, with toJson, and the default size
($st, $b) = req('n3', 'POST', '/tr/_search/template',
	'{"source":"{\"query\":{\"terms\":{\"k\":{{#toJson}}ks{{/toJson}}}}}","params":{"ks":["k1","k2","k29"]}}');
is(join(',', sort map { $_->{_id} } @{ $b->{hits}{hits} }), 'd1,d2,d29', 'an inline template with toJson');

# _msearch/template: one response per template, an error in its own slot
($st, $b) = req('n3', 'POST', '/tr/_msearch/template',
	qq({}\n{"id":"tpl","params":{"q":"even","size":1}}\n{}\n{"id":"nope"}\n));
is($st, 200, '_msearch/template through the master') or diag(explain $b);
is($b->{responses}[0]{hits}{total}{value}, 15, 'the first: the even documents');
is(scalar(@{ $b->{responses}[0]{hits}{hits} }), 1, 'of size 1');
is($b->{responses}[1]{error}{type}, 'resource_not_found_exception', 'the second: an unknown id');

# _render/template on the other data node
($st, $b) = req('n2', 'POST', '/_render/template/tpl', '{"params":{"q":"x"}}');
is_deeply($b, {template_output => {query => {match => {m => 'x'}}, size => '10'}}, 'rendered on n2');

# deleted: 404 everywhere
($st, $b) = req('n2', 'DELETE', '/_scripts/tpl');
is($st, 200, 'deleted');
ok($cluster->wait_for('n3 applied the removal', 30, sub {
	(req('n3', 'POST', '/tr/_search/template', '{"id":"tpl"}'))[0] == 404
}), 'a search by the deleted id: 404');

my $log = join('', map { slurp_file($node{$_}->logfile) } qw(n1 n2 n3));
unlike($log, qr/PANIC|terminated by signal 11|TRAP:/, 'no crash in any server log');
$cluster->teardown;
done_testing();
