# A replica that failed a write while the master could not remove it
# (issue 16; found by the Jepsen disk scenario).  The primary applied the
# write, the replica did not, and the master's shard_failed refused (it
# stands for a master on a full disk or out of reach): the write gets 503,
# and the replica -- which now lacks an operation the primary has -- stays
# owed to the master.  Every later write reports it again and is not
# acknowledged without the master's removal, even once the replica answers
# again; when the master can act, the shard-state worker's idle report
# removes the copy, a new one recovers from the primary, and the two copies
# end identical.  Without the owed report the replica stayed in sync with a
# hole and later writes were acknowledged on both copies around it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use JSON::PP;
use SeTest;
use SeCluster;

my $TTL = 5;
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap256');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => $n eq 'n3' ? 'master' : 'data',
		extra => "search_engine.transport_conninfo = 'user=se_peer'\nsearch_engine.debug_waitpoints = on\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}
sub req { my ($n, @call) = @_; return SeCluster::request($node{$n}, @call); }
sub fault
{
	my ($n, $name, $on) = @_;
	my $f = $node{$n}->data_dir . "/search_engine_fault_$name";
	if ($on) { open(my $fh, '>', $f) or die "$f: $!"; close $fh; }
	else { unlink $f; }
}

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	SeCluster::master_of($node{n1}) eq 'n3' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
}), 'two data nodes and their master');
my ($st, $body) = req('n1', 'PUT', '/ow',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,"unassigned.node_left.delayed_timeout":"0"}}');
is($st, 200, 'a one-shard index with one replica') or diag(explain $body);
sub health { my ($s, $h) = req('n1', 'GET', '/_cluster/health/ow'); return $s == 200 ? $h->{status} : "status $s"; }
ok($cluster->wait_for('green', 60, sub { health() eq 'green' }), 'green');

sub copies
{
	my ($s, $r) = req('n1', 'GET', '/_cat/shards/ow?format=json&h=prirep,node,state');
	return $s == 200 ? $r : [];
}
my ($p) = map { $_->{node} } grep { $_->{prirep} eq 'p' } @{ copies() };
my ($r) = grep { $_ ne $p } qw(n1 n2);
ok($p && $r, "primary on $p, replica on $r");
sub in_sync
{
	my ($s, $c) = req('n1', 'GET', '/_cluster/state/metadata');
	return join(',', sort @{ $c->{metadata}{indices}{ow}{in_sync_allocations}{0} // [] });
}
my $sync0 = in_sync();

sub put
{
	my ($id) = @_;
	my ($s, $res) = req($p, 'PUT', "/ow/_doc/$id", '{"v":1}');
	return ($s, $res);
}
($st, $body) = put('before');
is($st, 201, 'a write acknowledged by both copies');
is("$body->{_shards}{total}/$body->{_shards}{successful}", '2/2', '_shards: total 2, successful 2')
  or diag(explain $body);

# the replica fails the write and the master cannot remove it
fault($r, 'replica_ops', 1);
fault('n3', 'shard_failed', 1);
($st, $body) = put('hole');
is($st, 503, 'the replica failed and the master could not remove it: 503, not acknowledged');
is($body->{error}{type}, 'unavailable_shards_exception', 'unavailable_shards_exception') or diag(explain $body);
is(in_sync(), $sync0, 'the replica is still in the in-sync set');

# the replica answers again, the master still cannot act
fault($r, 'replica_ops', 0);
($st, $body) = put('after');
is($st, 503, 'the replica answers again, but lacks the failed write: the next write still waits for the master')
  or diag(explain $body);

# the master can act: the owed report goes through without another write
fault('n3', 'shard_failed', 0);
ok($cluster->wait_for('the replica removed from the in-sync set', 30, sub { in_sync() ne $sync0 }),
	'the shard-state worker reported the owed replica once the master could act');
ok($cluster->wait_for('green again', 90, sub { health() eq 'green' }), 'a new replica recovered: green again');
($st) = put('last');
is($st, 201, 'writes are acknowledged again');

# both copies hold the same documents, each read on its own node
sub copy_on
{
	my ($n) = @_;
	my ($s, $res) = req($n, 'POST', '/ow/_search?preference=_only_local',
		'{"size":100,"seq_no_primary_term":true,"query":{"match_all":{}}}');
	return "status $s" unless $s == 200;
	return join(',', map { "$_->{_id}:$_->{_seq_no}:$_->{_primary_term}" }
		sort { $a->{_id} cmp $b->{_id} } @{ $res->{hits}{hits} });
}
req($p, 'POST', '/ow/_refresh');
my ($rp, $rr) = (copy_on($p), copy_on($r));
is($rr, $rp, "the copies are identical ($rp)");
like($rp, qr/hole:/, 'the write answered 503 is on both copies (the primary applied it; the new replica recovered it)');

$cluster->teardown;
done_testing();
