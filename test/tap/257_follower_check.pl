# Follower checks (issue 16, ES's FollowersChecker): a node that is merely
# slow is not removed by one failed check.  The lease TTL is 30 s, so only
# the master's checks can remove a node here.  With
# cluster.fault_detection.follower_check.timeout 2s and retry_count 3, a
# primary's node paused (SIGSTOP) for 3 s fails at most two checks in a row
# (each waits up to the timeout): it stays a member, its copy stays the
# primary, the term does not move.  Paused for good, it is removed only
# after retry_count timeouts in a row -- not at the first -- and well
# before its lease ends; resumed, it rejoins and its copy recovers.  (kill
# -9, where a refused connection counts at once, is TAP 255.)
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

my $TTL = 30;
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap257');
my %node;
# two data nodes and a master that holds no data (never the paused one)
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => $n eq 'n3' ? 'master' : 'data',
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	SeCluster::master_of($node{n1}) eq 'n3' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
}), 'two data nodes and a master n3');

my ($status, $body) = req('n3', 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.fault_detection.follower_check.interval":"1s",'
	  . '"cluster.fault_detection.follower_check.timeout":"2s",'
	  . '"cluster.fault_detection.follower_check.retry_count":3}}');
is($status, 200, 'follower checks: every 1s, timeout 2s, 3 in a row') or diag(explain $body);

($status, $body) = req('n3', 'PUT', '/fc',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,'
	  . '"unassigned.node_left.delayed_timeout":"0"}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub health
{
	my ($st, $b) = req('n3', 'GET', '/_cluster/health/fc');
	return $st == 200 ? $b->{status} : "status $st";
}
sub primary_node
{
	my ($st, $b) = req('n3', 'GET', '/_cat/shards/fc?format=json&h=prirep,node,state');
	return '' unless $st == 200;
	my ($p) = grep { $_->{prirep} eq 'p' && $_->{state} eq 'STARTED' } @$b;
	return $p ? $p->{node} : '';
}
sub term
{
	my ($st, $b) = req('n3', 'GET', '/_cluster/state');
	return $st == 200 ? $b->{metadata}{indices}{fc}{primary_terms}{0} : -1;
}
sub member { exists SeCluster::nodes_of($node{n3})->{ $_[0] } }
sub removals
{
	my ($victim) = @_;
	my @l = slurp_file($node{n3}->logfile) =~ /master \[n3\] removes node \[$victim\]/g;
	return scalar @l;
}
# the postmaster and its children: a whole node paused or resumed
sub node_pids
{
	my ($n) = @_;
	my $pm = SeTest::postmaster_pid($node{$n});
	return ($pm, grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`);
}

ok($cluster->wait_for('green', 60, sub { health() eq 'green' }), 'both copies started: green');
($status) = req('n1', 'PUT', '/fc/_doc/1', '{"v":1}');
is($status, 201, 'a write with both copies');
my $p = primary_node();
my $t = term();
ok($p =~ /^n[12]$/ && $t == 1, "the primary is on $p, term 1");

# ---- paused for 3 s: one or two failed checks, not three in a row
my @pids = node_pids($p);
kill 'STOP', @pids;
my $t0 = time;
usleep(50_000) while time - $t0 < 3;
kill 'CONT', reverse @pids;
# let a check after the resume complete before looking
sleep 3;
ok(member($p), "$p, paused 3 s, is still a member");
is(removals($p), 0, 'the master did not remove it');
is(primary_node(), $p, 'its copy is still the primary');
is(term(), 1, 'no promotion: the term is still 1');
ok($cluster->wait_for('a write again', 20, sub { (req('n1', 'PUT', '/fc/_doc/2', '{"v":2}'))[0] == 201 }),
	'writes are acknowledged by the same primary');
is(health(), 'green', 'still green: no copy was failed');

# ---- paused for good: removed after retry_count timeouts, not at the first
@pids = node_pids($p);
kill 'STOP', @pids;
$t0 = time;
my $took = $cluster->wait_for("$p removed", 25, sub { !member($p) });
ok(defined $took, "the paused $p was removed by the master");
$took //= 99;
ok($took >= 4, sprintf('after %.1f s: not at its first failed check (timeout 2 s)', $took));
ok($took < 20, sprintf('and well before its %d s lease could end', $TTL));
like(slurp_file($node{n3}->logfile),
	qr/master \[n3\] removes node \[$p\]: 3 follower check\(s\) failed in a row: /,
	'the master says three checks failed in a row');
my ($other) = grep { $_ ne $p } qw(n1 n2);
ok($cluster->wait_for("$other promoted", 20, sub { primary_node() eq $other && term() == 2 }),
	"the replica on $other became the primary with term 2");
kill 'CONT', reverse @pids;
ok($cluster->wait_for("$p rejoined", 30, sub { member($p) }), "$p, resumed, rejoined");
ok($cluster->wait_for('green again', 90, sub { health() eq 'green' }), 'its copy recovered: green');
($status, $body) = req('n3', 'POST', '/fc/_refresh');
($status, $body) = req('n3', 'GET', '/fc/_count');
is($body->{count}, 2, 'both acknowledged writes are there');

$cluster->teardown;
done_testing();
