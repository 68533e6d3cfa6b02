# Index templates in a cluster: put through a node that is not the master
# (forwarded, committed to etcd's state/templates key), applied on every
# node, checked against the state the master changes (an overlapping
# template refused from any node), applied when another node auto-creates
# a daily index from a bulk (rsyslog's case), removed everywhere, and read
# back by a node restarted from etcd.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;
use SeCluster;

my $cluster = SeCluster->new(etcd_members => 1, name => 'tap335');
my %node;
for my $n (qw(n1 n2))
{
	$node{$n} = $cluster->new_node($n, extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my $master;
ok($cluster->wait_for('a master both agree on', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return 0 if $m eq '' || SeCluster::master_of($node{n2}) ne $m;
	return 0 if grep { keys(%{ SeCluster::nodes_of($node{$_}) }) != 2 } qw(n1 n2);
	$master = $m;
}), "the nodes agree on master $master");
my ($other) = grep { $_ ne $master } qw(n1 n2);

# put through the node that is not the master
my ($status, $body) = req($other, 'PUT', '/_component_template/rl-map',
	'{"template":{"mappings":{"properties":{"host":{"type":"keyword"}}}}}');
is($status, 200, 'component template put through a non-master node') or diag(explain $body);
($status, $body) = req($other, 'PUT', '/_index_template/rl',
	'{"index_patterns":["rlogs-*"],"composed_of":["rl-map"],"priority":5,"template":{"settings":{"number_of_shards":3,"number_of_replicas":0}}}');
is($status, 200, 'index template put through a non-master node') or diag(explain $body);
like($cluster->etcd_get('state/templates') // '', qr/"rl":\{"index_patterns":\["rlogs-\*"\]/,
	'committed to the state/templates key');
ok($cluster->wait_for('the master applied the template', 30, sub {
	(req($master, 'GET', '/_index_template/rl'))[0] == 200
}), 'the master reads it');

# the master's checks, from either node
($status, $body) = req($master, 'PUT', '/_index_template/rl2', '{"index_patterns":["rlogs-2*"],"priority":5}');
is($status, 400, 'an overlapping template at the same priority: 400 on the master');
($status, $body) = req($other, 'PUT', '/_index_template/rl3', '{"index_patterns":["rlogs-3*"],"priority":5}');
is($body->{error}{type}, 'illegal_argument_exception', 'and through the other node');
($status, $body) = req($other, 'DELETE', '/_component_template/rl-map');
like($body->{error}{reason} // '', qr/still in use by index templates \[rl\]/, 'a component in use stays');

# rsyslog's daily index, auto-created by a bulk on the other node
($status, $body) = req($other, 'POST', '/_bulk?refresh=true',
	'{"index":{"_index":"rlogs-2026.12.02"}}' . "\n" . '{"host":"web-1","msg":"up"}' . "\n");
is($status, 200, 'a bulk into a daily index nobody created');
ok(!$body->{errors}, 'without item errors') or diag(explain $body);
for my $n ($other, $master)
{
	ok($cluster->wait_for("$n applied the new index", 30, sub {
		(req($n, 'GET', '/rlogs-2026.12.02'))[0] == 200
	}), "$n sees the index");
	($status, $body) = req($n, 'GET', '/rlogs-2026.12.02');
	is($body->{'rlogs-2026.12.02'}{settings}{index}{number_of_shards}, '3', "$n: the template's shard count");
	is($body->{'rlogs-2026.12.02'}{mappings}{properties}{host}{type}, 'keyword', "$n: the component's mapping");
}
($status, $body) = req($master, 'POST', '/rlogs-2026.12.02/_search', '{"query":{"term":{"host":"web-1"}}}');
is($body->{hits}{total}{value}, 1, 'a keyword term finds the line');

# a restarted node reads the templates from etcd
$node{$other}->restart;
ok($cluster->wait_for("$other back with the template", 60, sub {
	my ($s, $b) = req($other, 'GET', '/_index_template/rl');
	$s == 200 && $b->{index_templates}[0]{index_template}{priority} == 5
}), 'the restarted node reads the template back');

# removed everywhere
($status, $body) = req($master, 'DELETE', '/_index_template/rl');
is($status, 200, 'template deleted');
ok($cluster->wait_for("$other applied the removal", 30, sub {
	(req($other, 'GET', '/_index_template/rl'))[0] == 404
}), 'gone on the other node too');
($status, $body) = req($other, 'DELETE', '/_component_template/rl-map');
is($status, 200, 'its component can go now');

my $log = join('', map { slurp_file($node{$_}->logfile) } qw(n1 n2));
unlike($log, qr/PANIC|terminated by signal 11|TRAP:/, 'no crash in any server log');
$cluster->teardown;
done_testing();
