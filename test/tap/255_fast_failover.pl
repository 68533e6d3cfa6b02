# Fast failover (issue 16): Elasticsearch's fault detection.  The lease TTL
# is 30 s here, so only the master's follower checks can explain a failover
# within seconds: after kill -9 of the primary's node the master removes the
# node (its membership key deleted under the master's fenced commit), the
# in-sync replica is promoted (term + 1) and writes are acknowledged again;
# the killed node, restarted, rejoins at once (its key is gone).  A live node
# removed wrongly (SIGSTOP past the checks' timeouts) notices its key gone on
# SIGCONT and rejoins, and its old primary acknowledges nothing after the
# promotion.  A dead master is deposed by the other master-eligible node's
# leader checks: a new master acts well before the old one's lease ends.
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
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap255');
my %node;
# two data nodes, two master-eligible nodes holding no data
for my $n (qw(n1 n2 n3 n4))
{
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => $n =~ /n[34]/ ? 'master' : 'data',
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}
sub master { return SeCluster::master_of($node{ $_[0] // 'n1' }) }

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	my $m = master();
	return $m =~ /^n[34]$/ && keys(%{ SeCluster::nodes_of($node{n1}) }) == 4
	  && master('n2') eq $m;
}), 'two data nodes and two master-eligible nodes');

my ($status, $body) = req('n1', 'PUT', '/ff',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,'
	  . '"unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"v":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub health
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cluster/health/ff');
	return $st == 200 ? $b->{status} : "status $st";
}
sub primary_node
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cat/shards/ff?format=json&h=prirep,node,state');
	return '' unless $st == 200;
	my ($p) = grep { $_->{prirep} eq 'p' && $_->{state} eq 'STARTED' } @$b;
	return $p ? $p->{node} : '';
}
sub term
{
	my ($n) = @_;
	my ($st, $b) = req($n, 'GET', '/_cluster/state');
	return $st == 200 ? $b->{metadata}{indices}{ff}{primary_terms}{0} : -1;
}

my %acked;
my $next = 0;
# one write through node n: true if acknowledged
sub write_one
{
	my ($n, $v) = @_;
	my $id = 'd' . $next++;
	my ($st, $b) = req($n, 'PUT', "/ff/_doc/$id", qq({"v":$v}));
	return 0 unless $st == 200 || $st == 201;
	$acked{$id} = { v => $v, seq_no => $b->{_seq_no}, term => $b->{_primary_term}, via => $n };
	return 1;
}
sub all_acked_readable
{
	my ($n) = @_;
	my $list = join(',', map { qq("$_") } sort keys %acked);
	my ($st, $b) = req($n, 'POST', '/ff/_mget', qq({"ids":[$list]}));
	return 0 unless $st == 200;
	my $bad = grep { !$_->{found} || $_->{_source}{v} != $acked{ $_->{_id} }{v} } @{ $b->{docs} };
	diag("$bad acknowledged writes missing or different on $n") if $bad;
	return $bad == 0;
}

ok($cluster->wait_for('green', 60, sub { health() eq 'green' }), 'both copies started: green');
ok(write_one('n1', $_), "write $_ acknowledged") for 1 .. 5;

# ---- kill -9 of the primary's node: removed by the checks, not by its lease
my $pnode = primary_node();
my ($rnode) = grep { $_ ne $pnode } qw(n1 n2);
my $m = master();
SeTest::crash($node{$pnode});
my $t0 = time;
ok($cluster->wait_for("$rnode promoted", 25, sub { primary_node($rnode) eq $rnode && term($rnode) == 2 }),
	"the replica on $rnode became the primary with term 2");
ok($cluster->wait_for('writes acknowledged again', 25, sub { write_one($rnode, 10) }),
	'writes are acknowledged again');
my $took = time - $t0;
ok($took < 12, sprintf('within %.1f s of the kill, well before the %d s lease could end', $took, $TTL));
like(slurp_file($node{$m}->logfile),
	qr/master \[$m\] removes node \[$pnode\]: \d+ follower check\(s\) failed in a row \(gone: counts at once\)/,
	"the master [$m] removed [$pnode] after its follower checks");
ok(!exists SeCluster::nodes_of($node{$rnode})->{$pnode}, "$pnode is no longer a member");
ok(all_acked_readable($rnode), 'every acknowledged write is on the new primary');

# the killed node restarts: its old key is gone, so it joins at once, not after its old lease
SeTest::after_crash($node{$pnode});
$node{$pnode}->start;
ok($cluster->wait_for("$pnode rejoined", 20, sub { exists SeCluster::nodes_of($node{$rnode})->{$pnode} }),
	"$pnode rejoined without waiting for its old lease");
ok($cluster->wait_for('green again', 90, sub { health($rnode) eq 'green' }), 'its copy recovered: green');
ok(write_one($rnode, 11), 'a write with both copies');

# ---- a live node removed wrongly: SIGSTOP past the checks, SIGCONT
($status, $body) = req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"cluster.fault_detection.follower_check.timeout":"1s",'
	  . '"cluster.fault_detection.follower_check.retry_count":2}}');
is($status, 200, 'follower checks: timeout 1s, 2 retries') or diag(explain $body);
my $old = primary_node($rnode);
my ($other) = grep { $_ ne $old } qw(n1 n2);
my @pids = (SeTest::postmaster_pid($node{$old}),
	grep { /^\d+$/ } split /\s+/, `pgrep -P ${\ SeTest::postmaster_pid($node{$old})}`);
kill 'STOP', @pids;
$t0 = time;
ok($cluster->wait_for("$other promoted while $old is stopped", 25,
		sub { primary_node($other) eq $other && term($other) == 3 }),
	"the stopped node's replica on $other became the primary with term 3");
ok(time - $t0 < 20, sprintf('%.1f s after the stop (lease %d s)', time - $t0, $TTL));
ok(!exists SeCluster::nodes_of($node{$other})->{$old}, "the stopped $old was removed");
kill 'CONT', reverse @pids;
# right away, writes through the old primary's node: each either fails or is
# acknowledged by the new primary (term 3) -- never by the old primary alone
my $stale = 0;
for my $v (100 .. 119)
{
	write_one($old, $v);
	my $a = $acked{ 'd' . ($next - 1) };
	$stale++ if $a && $a->{term} < 3;
}
is($stale, 0, 'the old primary acknowledged nothing after the promotion');
ok($cluster->wait_for("$old rejoined", 20, sub { exists SeCluster::nodes_of($node{$other})->{$old} }),
	"$old noticed its key gone and rejoined");
ok($cluster->wait_for('green after the rejoin', 90, sub { health($other) eq 'green' }),
	'its copy recovered from the new primary: green');
ok(all_acked_readable($other), 'every acknowledged write is on the new primary');
ok(all_acked_readable($old), 'and on the rejoined copy');

# ---- the master dies: the other master-eligible node's leader checks depose it
$m = master('n1');
my ($cand) = grep { $_ ne $m } qw(n3 n4);
SeTest::crash($node{$m});
$t0 = time;
ok($cluster->wait_for("$cand acts as master", 25, sub { master('n1') eq $cand && master($cand) eq $cand }),
	"$cand became the master");
$took = time - $t0;
ok($took < 15, sprintf('within %.1f s of the kill (the old lease was %d s)', $took, $TTL));
like(slurp_file($node{$cand}->logfile), qr/master \[$m\] failed \d+ leader check\(s\) in a row from node \[$cand\] \(gone: counts at once\)/,
	'after its leader checks failed');
ok($cluster->wait_for("$m removed", 20, sub { !exists SeCluster::nodes_of($node{n1})->{$m} }),
	'the new master removed the dead one');
ok(write_one('n1', 200), 'writes go on');
SeTest::after_crash($node{$m});
$node{$m}->start;
ok($cluster->wait_for("$m rejoined", 20, sub { exists SeCluster::nodes_of($node{n1})->{$m} }),
	"the old master rejoined as a master-eligible node");
ok(all_acked_readable('n2'), 'every acknowledged write is readable at the end');

$cluster->teardown;
done_testing();
