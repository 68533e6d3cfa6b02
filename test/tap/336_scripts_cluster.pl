# Stored scripts and script_fields in a cluster (issue 17): two data nodes
# (n1, n2) and a dedicated master (n3, which holds no shard and so runs
# every shard's phases remotely).  A script put through a data node is
# forwarded to the master and committed to etcd's state/scripts key; every
# node reads it; a search through n3 runs it by id on the data nodes (in
# script_score, script_fields and terms_set), each hit's script_fields
# (and a doc[...] with a computed name) computed where its shard lives,
# equal to the values of the documents themselves; a restarted node reads
# the scripts back from etcd; a delete removes it everywhere.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;
use SeCluster;

my ($cluster, $node) = SeCluster->data_nodes_and_master(etcd_members => 1, name => 'tap336', wait => 60);
my %node = %$node;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

# put through a data node: forwarded to the master, committed to etcd
my ($st, $b) = req('n1', 'PUT', '/_scripts/likes-by',
	'{"script":{"lang":"painless","source":"doc.n.value * params.f"}}');
is($st, 200, 'a stored script put through a node that is not the master') or diag(explain $b);
like($cluster->etcd_get('state/scripts') // '', qr/"likes-by":\{"lang":"painless","source":/,
	'committed to the state/scripts key');
for my $n (qw(n2 n3))
{
	ok($cluster->wait_for("$n has the script", 30, sub {
		my ($s, $r) = req($n, 'GET', '/_scripts/likes-by');
		$s == 200 && $r->{found} && $r->{script}{source} eq 'doc.n.value * params.f'
	}), "$n reads it");
}
($st, $b) = req('n2', 'PUT', '/_scripts/need', '{"script":{"lang":"painless","source":"Math.min(params.num_terms, doc.k.value)"}}');
is($st, 200, 'a second one, through the other data node');

$cluster->index_on_data_nodes(\%node, 'sc', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"n":{"type":"long"},"k":{"type":"integer"},"tags":{"type":"keyword"},"f":{"type":"keyword"}}}}');
my @tags = qw(a b c);
($st, $b) = req('n3', 'POST', '/sc/_bulk?refresh=true',
	join('', map {
		my @t = @tags[0 .. ($_ % 3)];
		qq({"index":{"_id":"d$_"}}\n{"n":$_,"k":@{[1 + $_ % 4]},"tags":[@{[join(',', map { qq("$_") } @t)]}],"f":"n"}\n)
	} 1 .. 40));
ok($st == 200 && !$b->{errors}, '40 documents') or diag(explain $b);

# script_score by id, through the master (every shard remote)
($st, $b) = req('n3', 'POST', '/sc/_search',
	'{"size":40,"query":{"script_score":{"query":{"match_all":{}},"script":{"id":"likes-by","params":{"f":2}}}},"_source":false,'
	  . '"script_fields":{"twice":{"script":{"id":"likes-by","params":{"f":2}}},"by_name":{"script":"doc[doc.f.value].value + 1000"}}}');
is($st, 200, 'a search running stored scripts on remote shards') or diag(explain $b);
is(scalar(@{ $b->{hits}{hits} }), 40, 'every doc');
my $bad = 0;
for my $h (@{ $b->{hits}{hits} })
{
	my ($i) = $h->{_id} =~ /^d(\d+)$/;
	$bad++ unless $h->{_score} == 2 * $i && $h->{fields}{twice}[0] == 2 * $i && $h->{fields}{by_name}[0] == 1000 + $i;
}
is($bad, 0, 'scores and script_fields equal to the documents\' values on both shards');

# terms_set by a stored script: at least min(num_terms, k) of a, b, c
($st, $b) = req('n3', 'POST', '/sc/_search',
	'{"size":40,"_source":false,"query":{"terms_set":{"tags":{"terms":["a","b","c"],"minimum_should_match_script":{"id":"need"}}}}}');
my @want = grep { my $k = 1 + $_ % 4; 1 + $_ % 3 >= ($k < 3 ? $k : 3) } 1 .. 40;
is($b->{hits}{total}{value}, scalar(@want), 'terms_set with a stored script, over both shards') or diag(explain $b);

# an unknown id: ES's 404 from any node
($st, $b) = req('n1', 'POST', '/sc/_search', '{"query":{"script_score":{"query":{"match_all":{}},"script":{"id":"nope"}}}}');
is($st, 404, 'an unknown stored script');
is($b->{error}{type}, 'resource_not_found_exception', 'resource_not_found_exception');

# a restarted node reads the scripts from etcd
$node{n2}->restart;
ok($cluster->wait_for('n2 back with the scripts', 60, sub {
	my ($s, $r) = req('n2', 'GET', '/_scripts/need');
	$s == 200 && $r->{found}
}), 'the restarted node reads the scripts back');

# deleted everywhere
($st, $b) = req('n2', 'DELETE', '/_scripts/likes-by');
is($st, 200, 'deleted through a data node');
for my $n (qw(n1 n3))
{
	ok($cluster->wait_for("$n applied the removal", 30, sub {
		(req($n, 'GET', '/_scripts/likes-by'))[0] == 404
	}), "gone on $n");
}
($st, $b) = req('n3', 'DELETE', '/_scripts/likes-by');
is($st, 404, 'a second delete: 404');

my $log = join('', map { slurp_file($node{$_}->logfile) } qw(n1 n2 n3));
unlike($log, qr/PANIC|terminated by signal 11|TRAP:/, 'no crash in any server log');
$cluster->teardown;
done_testing();
