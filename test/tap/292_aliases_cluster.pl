# Index aliases in a cluster (issues 17 and 18): two data nodes, n1 the
# master.  Aliases are index metadata, so an alias changed through the
# node that is not the master is forwarded to it, committed to the
# indices' etcd keys and applied on every node: it resolves on the other
# node (search with its filter over shards on both nodes, get, a write to
# the write index), a failing POST /_aliases changes nothing anywhere,
# and the aliases survive a restart of either node (read back from etcd).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use SeTest;
use SeCluster;

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap292');
my %node;
$node{n1} = $cluster->new_node('n1', ttl => 5, roles => 'master,data');
$node{n2} = $cluster->new_node('n2', ttl => 5, roles => 'data');

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

sub formed
{
	return $cluster->wait_for('the cluster formed', 60, sub {
		return SeCluster::master_of($node{n1}) eq 'n1' && SeCluster::master_of($node{n2}) eq 'n1'
		  && keys(%{ SeCluster::nodes_of($node{n2}) }) == 2;
	});
}

ok(formed(), 'two data nodes, n1 the master');
for my $i (qw(al-a al-b))
{
	my ($st, $b) = req('n1', 'PUT', "/$i", '{"settings":{"number_of_shards":2,"number_of_replicas":0}}');
	is($st, 200, "index $i") or diag(explain $b);
}
ok($cluster->wait_for('green', 60, sub {
	my ($s, $h) = req('n1', 'GET', '/_cluster/health');
	return $s == 200 && $h->{status} eq 'green';
}), 'green');
my %on = map { $_ => SeCluster::primaries($node{n1}, $_) } qw(al-a al-b);
ok(join(' ', values %on) =~ /n1/ && join(' ', values %on) =~ /n2/, "shards on both nodes ($on{'al-a'} / $on{'al-b'})");
my ($st, $b) = req('n1', 'POST', '/_bulk?refresh=true',
	join('', map { qq({"index":{"_index":"al-@{[ $_ % 2 ? 'a' : 'b' ]}","_id":"d$_"}}\n{"k":"@{[ $_ % 3 ? 'red' : 'blue' ]}","n":$_}\n) } 1 .. 30));
ok($st == 200 && !$b->{errors}, '30 documents') or diag(explain $b);

# aliases changed through n2 (not the master): forwarded, applied everywhere
($st, $b) = req('n2', 'POST', '/_aliases', encode_json({ actions => [
	{ add => { indices => [ 'al-a', 'al-b' ], alias => 'al-all' } },
	{ add => { index => 'al-b', alias => 'al-all', is_write_index => JSON::PP::true } },
	{ add => { index => 'al-a', alias => 'al-red', filter => { term => { k => 'red' } } } } ] }));
is_deeply([ $st, $b ], [ 200, { acknowledged => JSON::PP::true } ], 'POST /_aliases through n2') or diag(explain $b);
for my $n (qw(n1 n2))
{
	($st, $b) = req($n, 'GET', '/_alias/al-*');
	is_deeply($b, {
		'al-a' => { aliases => { 'al-all' => {}, 'al-red' => { filter => { term => { k => 'red' } } } } },
		'al-b' => { aliases => { 'al-all' => { is_write_index => JSON::PP::true } } } },
		"$n sees the aliases") or diag(explain $b);
}
my $key = $cluster->etcd_get('state/indices/al-a');
ok(defined $key && decode_json($key)->{aliases}{'al-red'}{filter}, 'in al-a\'s etcd key');

my $red_a = scalar(grep { $_ % 2 && $_ % 3 } 1 .. 30);
for my $n (qw(n1 n2))
{
	($st, $b) = req($n, 'POST', '/al-all/_search', '{"size":0}');
	is($b->{hits}{total}{value}, 30, "$n: al-all searches both indices over both nodes");
	($st, $b) = req($n, 'POST', '/al-red/_search', '{"size":100}');
	is($b->{hits}{total}{value}, $red_a, "$n: al-red's filter applies on every shard");
	ok(!(grep { $_->{_source}{k} ne 'red' || $_->{_index} ne 'al-a' } @{ $b->{hits}{hits} }), "$n: red hits of al-a only");
	($st, $b) = req($n, 'GET', '/al-red/_doc/d1');
	is_deeply([ $st, $b->{_index}, $b->{found} ], [ 200, 'al-a', JSON::PP::true ], "$n: get through an alias of one index");
}
($st, $b) = req('n2', 'PUT', '/al-all/_doc/w1?refresh=true', '{"k":"red","n":100}');
is_deeply([ $st, $b->{_index} ], [ 201, 'al-b' ], 'a write through n2 goes to the write index') or diag(explain $b);
($st, $b) = req('n1', 'GET', '/al-b/_doc/w1');
is($b->{found}, JSON::PP::true, 'and is there');

# atomic: a failing action (second) leaves the first undone on both nodes
($st, $b) = req('n2', 'POST', '/_aliases', encode_json({ actions => [
	{ remove => { index => 'al-a', alias => 'al-red' } },
	{ add => { index => 'al-a', alias => 'al-b' } } ] }));
is_deeply([ $st, $b->{error}{type} ], [ 400, 'invalid_alias_name_exception' ], 'an alias named like an index is refused');
for my $n (qw(n1 n2))
{
	($st, $b) = req($n, 'HEAD', '/_alias/al-red');
	is($st, 200, "$n: al-red is still there");
}

# a restart of the data node, then of the master: read back from etcd
$node{n2}->restart;
ok(formed(), 'n2 back');
($st, $b) = req('n2', 'GET', '/_alias/al-red');
is_deeply($b, { 'al-a' => { aliases => { 'al-red' => { filter => { term => { k => 'red' } } } } } }, 'n2 has al-red after its restart')
  or diag(explain $b);
ok($cluster->wait_for('n2 searches through al-red', 30, sub {
	($st, $b) = req('n2', 'POST', '/al-red/_search', '{"size":0}');
	return $st == 200 && $b->{hits}{total}{value} == $red_a;
}), 'and searches through it');
$node{n1}->restart;
ok(formed(), 'n1 back as the master');
for my $n (qw(n1 n2))
{
	ok($cluster->wait_for("$n writes through al-all", 30, sub {
		($st, $b) = req($n, 'PUT', "/al-all/_doc/after-$n", '{"k":"blue"}');
		return $st == 201 && $b->{_index} eq 'al-b';
	}), "$n: al-all still writes to al-b after the master's restart");
}

# deleting an index drops it from its aliases, everywhere
($st, $b) = req('n2', 'DELETE', '/al-a');
is($st, 200, 'al-a deleted through n2');
for my $n (qw(n1 n2))
{
	($st, $b) = req($n, 'GET', '/_alias/al-all');
	is_deeply([ sort keys %$b ], [ 'al-b' ], "$n: al-all is al-b's alone");
}

my $log = join('', map { slurp_file($node{$_}->logfile) } qw(n1 n2));
unlike($log, qr/PANIC|terminated by signal 11|TRAP:/, 'no crash in any server log');
$cluster->teardown;
done_testing();
