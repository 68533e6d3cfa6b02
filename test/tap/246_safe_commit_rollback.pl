# A replica whose last commit is past the new primary's global checkpoint
# rolls back without a fresh peer recovery (issue 16; ES keeps a "safe
# commit" -- CombinedDeletionPolicy: the newest commit whose max_seq_no is
# at or below the global checkpoint -- beside the last one).  Three data
# nodes, one shard with two replicas.  The idle global checkpoint sync is
# skipped (debug flag search_engine_skip_gcp_sync on the primary's node), so
# the replicas learn the global checkpoint only with the next write; two
# writes and a flush leave both replicas with a commit past the global
# checkpoint they know.  The primary's node is killed: one replica is
# promoted and resyncs what is above its global checkpoint, the other rolls
# back to it -- from its safe commit and its own translog -- and stays
# started: no new peer recovery to it, and the copies are equal.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SeTest;
use SeCluster;

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap246');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5,
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n"
		  . "search_engine.debug_waitpoints = on\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('three nodes in the cluster', 60, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
	  && SeCluster::master_of($node{n2}) eq $m && SeCluster::master_of($node{n3}) eq $m;
}), 'three data nodes agree on a master');

my ($status, $body) = req('n1', 'PUT', '/rb',
	'{"settings":{"number_of_shards":1,"number_of_replicas":2,"refresh_interval":"1s","unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"n":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with two replicas') or diag(explain $body);

sub health
{
	my ($n) = @_;
	my ($st, $b) = req($n, 'GET', '/_cluster/health/rb');
	return $st == 200 ? $b->{status} : '';
}
ok($cluster->wait_for('green', 90, sub { health('n1') eq 'green' }), 'all three copies started');

sub shards
{
	my ($n) = @_;
	my ($st, $b) = req($n, 'GET', '/_cat/shards/rb?format=json&h=prirep,node,state');
	return $st == 200 ? $b : [];
}
my ($pnode) = map { $_->{node} } grep { $_->{prirep} eq 'p' } @{ shards('n1') };
my @replicas = grep { $_ ne $pnode } qw(n1 n2 n3);
ok($pnode, "the primary is on $pnode, replicas on @replicas");

sub bulk
{
	my ($from, $to) = @_;
	my $nd = join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_}\n) } $from .. $to);
	my ($st, $b) = req($pnode, 'POST', '/rb/_bulk', $nd);
	return $st == 200 && !$b->{errors};
}

sub recoveries_to
{
	my ($n, $target) = @_;
	my ($st, $b) = req($n, 'GET', '/_cat/recovery/rb?format=json&h=target_node,stage');
	return scalar grep { $_->{target_node} eq $target } @{ $st == 200 ? $b : [] };
}

ok(bulk(1, 50), 'documents 1..50 (seq_no 0..49)');
sleep 3;	# the idle global checkpoint sync: 49 everywhere
is((req($pnode, 'POST', '/rb/_flush'))[0], 200, 'flushed: a safe commit on every copy');
my $flag = $node{$pnode}->data_dir . '/search_engine_skip_gcp_sync';
open(my $fh, '>', $flag) or die $!;
close $fh;
ok(bulk(51, 100), 'documents 51..100 (the replicas hear global checkpoint 49 with them)');
ok(bulk(101, 150), 'documents 101..150 (global checkpoint 99 with them; none after)');
is((req($pnode, 'POST', '/rb/_flush'))[0], 200,
	'flushed: the replicas\' last commits hold seq_no 149, past the 99 they know');
my %before = map { $_ => recoveries_to($replicas[0], $_) } @replicas;

SeTest::crash($node{$pnode});
SeTest::after_crash($node{$pnode});
my @alive = @replicas;
my $new_primary;
ok($cluster->wait_for('a replica promoted', 60, sub {
	($new_primary) = map { $_->{node} } grep { $_->{prirep} eq 'p' && $_->{state} eq 'STARTED' }
	  @{ shards($alive[0]) };
	return $new_primary && $new_primary ne $pnode;
}), 'the primary\'s node killed: a replica was promoted') or diag(explain shards($alive[0]));
my ($other) = grep { $_ ne ($new_primary // '') } @alive;
ok($cluster->wait_for("$other rolled back", 60, sub {
	$node{$other}->log_contains('resets to its safe commit')
}), "$other reset to its safe commit to roll back to the global checkpoint");
ok($cluster->wait_for('yellow', 60, sub { health($other) eq 'yellow' }),
	'yellow: two copies started (the third has no node to go to)');
my ($row) = grep { $_->{node} eq $other } @{ shards($other) };
is($row->{state} // '', 'STARTED', "the copy on $other stayed started");
is(recoveries_to($other, $other), $before{$other}, "no new peer recovery to $other");
ok(!$node{$other}->log_contains('cannot roll back to the global checkpoint'),
	'it did not fail for a fresh recovery');

sub copy_of { return SeCluster::copy_of($node{ $_[0] }, 'rb'); }
my ($p, $r);
ok($cluster->wait_for('copies equal', 30, sub {
	$p = copy_of($new_primary);
	$r = copy_of($other);
	return $p eq $r && $p =~ /d150:/;
}), 'the copies are equal, every acknowledged document included') or is($r, $p, 'copies');
ok($node{$new_primary}->log_contains('resyncs operations'), 'the new primary resynced');

$cluster->teardown;
done_testing();
