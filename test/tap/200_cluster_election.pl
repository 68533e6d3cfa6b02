# A cluster of three PostgreSQL nodes (two master-eligible, one
# coordinating-only) over a real three-member etcd cluster: election,
# membership, failover after kill -9, fencing of a master stopped past its
# lease, a node name that is already taken, and a master cut off from etcd.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use Time::Local qw(timegm);
use POSIX ();
use SeTest;
use SeCluster;

my $TTL = 5;
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap200');
ok(1, 'three etcd members are healthy');

my %node;
$node{n1} = $cluster->new_node('n1', ttl => $TTL);
$node{n2} = $cluster->new_node('n2', ttl => $TTL);
$node{n3} = $cluster->new_node('n3', ttl => $TTL, roles => '');
my $last_start = time;

# every live node names the same master and sees the same members
sub agreed
{
	my (@names) = @_;
	my $master = SeCluster::master_of($node{ $names[0] });
	return undef if $master eq '';
	for my $n (@names)
	{
		return undef if SeCluster::master_of($node{$n}) ne $master;
		my $seen = join(',', sort keys %{ SeCluster::nodes_of($node{$n}) });
		return undef if $seen ne join(',', sort keys %node);
	}
	return $master;
}

my $took = $cluster->wait_for('all nodes agree on the master and members', 30,
	sub { agreed(qw(n1 n2 n3)) });
ok(defined $took && $took <= 3,
	sprintf('all nodes agree on one master and three members %.2fs after the last start (<= 3s)', $took // -1));
my $master = agreed(qw(n1 n2 n3));
ok($master eq 'n1' || $master eq 'n2', "the master ($master) is master-eligible");

my $nodes = SeCluster::nodes_of($node{n3});
is(join(' ', map { "$_:$nodes->{$_}{'node.role'}:$nodes->{$_}{master}" } sort keys %$nodes),
	join(' ', map { "$_:" . ($_ eq 'n3' ? '-' : 'dm') . ':' . ($_ eq $master ? '*' : '-') } qw(n1 n2 n3)),
	'_cat/nodes lists the three nodes with their roles and the master');
my ($status, $health) = SeCluster::request($node{n2}, 'GET', '/_cluster/health');
is("$health->{number_of_nodes}/$health->{number_of_data_nodes}", '3/2', '_cluster/health counts 3 nodes, 2 of them data nodes');
($status, my $state) = SeCluster::request($node{n3}, 'GET', '/_cluster/state/nodes,master_node');
is($state->{nodes}{ $state->{master_node} }{name}, $master, '_cluster/state names the master by its ephemeral id');
is($node{n1}->safe_psql('postgres', "SELECT string_agg(name || ':' || \"node.role\", ',' ORDER BY name) FROM search_engine.nodes"),
	'n1:dm,n2:dm,n3:-', 'the search_engine.nodes view lists the members');
my $published = $cluster->published;
is($published->{master}, $master, 'the master published the membership in etcd (state/nodes)');
is(scalar(@{ $published->{nodes} }), 3, 'with the three nodes');

# ---- kill -9 of the master: another master-eligible node acts within TTL + 2 s
sub log_time
{
	my ($line) = @_;
	return undef unless $line =~ /^(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)\.(\d+) UTC/;
	return timegm($6, $5, $4, $3, $2 - 1, $1) + $7 / 1000;
}

# time of the first log line after offset matching re, or undef
sub logged_at
{
	my ($n, $offset, $re) = @_;
	my $log = slurp_file($n->logfile, $offset);
	for my $line (split /\n/, $log)
	{
		return log_time($line) if $line =~ $re;
	}
	return undef;
}

my ($other) = grep { $_ ne $master } qw(n1 n2);
my $old_term = $published->{term};
my $offset = -s $node{$other}->logfile;
my $killed_at = time;
SeTest::crash($node{$master});
SeTest::after_crash($node{$master});
$took = $cluster->wait_for("$other publishes as the new master", 30, sub {
	my $p = $cluster->published;
	return $p && $p->{master} eq $other && $p->{term} > $old_term;
});
ok(defined $took, "$other became master after kill -9 of $master");
my $acting_at = logged_at($node{$other}, $offset, qr/acting as master/);
ok(defined $acting_at && $acting_at - $killed_at <= $TTL + 2,
	sprintf('the new master acts %.2fs after the kill (<= lease TTL + 2s)', defined $acting_at ? $acting_at - $killed_at : -1));
is(SeCluster::master_of($node{n3}), $other, 'the coordinating-only node follows the new master');
my $term2 = $cluster->published->{term};
ok($term2 > $old_term, "the term grew ($old_term -> $term2)");

# the killed node comes back and joins again (a new ephemeral id)
$node{$master}->start;
$took = $cluster->wait_for("$master rejoins", 30, sub {
	my $p = $cluster->published;
	return $p && grep { $_->{name} eq $master } @{ $p->{nodes} };
});
ok(defined $took, "$master rejoined; the master published it");

# ---- SIGSTOP of the master past its lease: a new master, and nothing from the old one
my ($stopped, $successor) = ($other, $master);
my @pids = (SeTest::postmaster_pid($node{$stopped}));
push @pids, grep { /^\d+$/ } split /\s+/, `pgrep -P $pids[0]`;
$offset = -s $node{$stopped}->logfile;
kill 'STOP', @pids;
$took = $cluster->wait_for("$successor takes over from the stopped master", 30, sub {
	my $p = $cluster->published;
	return $p && $p->{master} eq $successor && $p->{term} > $term2;
});
ok(defined $took, "$successor became master while $stopped was stopped");
my $term3 = $cluster->published->{term};
kill 'CONT', @pids;
$took = $cluster->wait_for("$stopped logs it stopped acting", 10, sub {
	defined logged_at($node{$stopped}, $offset, qr/stopped acting as master/);
});
ok(defined $took, "after SIGCONT $stopped logs that it stopped acting as master");
$took = $cluster->wait_for("$stopped rejoins under the new master", 20, sub {
	SeCluster::master_of($node{$stopped}) eq $successor &&
	  (grep { $_->{name} eq $stopped } @{ $cluster->published->{nodes} });
});
ok(defined $took, "$stopped follows $successor and is a member again");
$published = $cluster->published;
is("$published->{master}/$published->{term}", "$successor/$term3",
	'state/nodes was last written by the new master, in its term');
my $after = slurp_file($node{$stopped}->logfile, $offset);
unlike($after, qr/published membership|won the election/,
	'the stopped master committed nothing after SIGCONT');

# ---- a second live node with a name in use is refused, never steals the key
my $n3_id = (grep { $_->{name} eq 'n3' } @{ $published->{nodes} })[0]{ephemeral_id};
my $dup = $cluster->new_node('n3dup', ttl => $TTL, roles => '',
	extra => "search_engine.node_name = 'n3'\n");
$took = $cluster->wait_for('the duplicate name is refused in the log', 15, sub {
	slurp_file($dup->logfile) =~ /node name "n3" is already used by a live node/;
});
ok(defined $took, 'a node started with a name in use logs that it is refused');
my $key = $cluster->etcd_get('nodes/n3');
like($key, qr/"ephemeral_id":"\Q$n3_id\E"/, 'the live node keeps its key');
$dup->stop('immediate');

# ---- commits from a backend go through the master's coordinator, fenced on its term
my $m = $node{$successor};
my $rev = $m->safe_psql('postgres', "SELECT search_engine._cluster_commit('test/k', 'v1')");
ok($rev > $term3, "a backend on the master commits state/test/k (revision $rev)");
is($cluster->etcd_get('state/test/k'), 'v1', 'etcd holds the committed value');
my ($ret, $out, $err) = $node{n3}->psql('postgres', "SELECT search_engine._cluster_commit('test/k', 'v2')");
like($err, qr/not the elected master.*\n.*master_not_discovered_exception/s,
	'a backend on another node is refused: master_not_discovered_exception');

# The master's coordinator stalls after its acting check, with a commit in
# hand, until its lease lapses and another node is elected: its txn then
# meets the fence (the leader key's create revision is no longer its term).
$m->safe_psql('postgres', 'ALTER SYSTEM SET search_engine.debug_waitpoints = on; SELECT pg_reload_conf()');
my $pause = $m->data_dir . '/search_engine_pause_coordinator_commit';
open(my $fh, '>', $pause) or die "create $pause: $!";
close $fh;
$offset = -s $m->logfile;
my $result = PostgreSQL::Test::Utils::tempdir() . '/fenced_commit.out';
my $child = fork();
if ($child == 0)
{
	my ($r, $o, $e) = $m->psql('postgres', "SELECT search_engine._cluster_commit('test/k', 'stale')");
	open(my $out_fh, '>', $result) or die;
	print $out_fh "$r\n$o\n$e\n";
	close $out_fh;
	POSIX::_exit(0);			# not exit: the parent's END blocks stop the nodes
}
$took = $cluster->wait_for('the coordinator stalls with the commit', 20, sub {
	defined logged_at($m, $offset, qr/paused at debug point "coordinator_commit"/);
});
ok(defined $took, "${successor}'s coordinator holds the commit past its acting check");
$took = $cluster->wait_for("$stopped is elected while $successor stalls", 30, sub {
	my $p = $cluster->published;
	return $p && $p->{master} eq $stopped && $p->{term} > $term3;
});
ok(defined $took, "$stopped became master while ${successor}'s coordinator stalled");
my $term4 = $cluster->published->{term};
unlink $pause;
waitpid($child, 0);
like(slurp_file($result), qr/no longer the master \(its term was refused\)/,
	'the stalled commit is refused by the term check');
ok(defined logged_at($m, $offset, qr/fenced commit refused: term \d+ is no longer the master/),
	'the deposed master logs the refused fenced commit');
is($cluster->etcd_get('state/test/k'), 'v1', 'etcd still holds the value committed in the old term');
$m->safe_psql('postgres', 'ALTER SYSTEM RESET search_engine.debug_waitpoints; SELECT pg_reload_conf()');
$took = $cluster->wait_for("$successor rejoins under $stopped", 20, sub {
	SeCluster::master_of($m) eq $stopped &&
	  (grep { $_->{name} eq $successor } @{ $cluster->published->{nodes} });
});
ok(defined $took, "$successor follows $stopped and is a member again");

# ---- one etcd member dies: the nodes fail over to the others, nothing changes
$published = $cluster->published;
my $before = "$published->{master}/$published->{term}";
$cluster->kill_etcd(1);
sleep($TTL + 2);
$published = $cluster->published;
is("$published->{master}/$published->{term}", $before,
	'with one etcd member of three gone the master keeps its term (the nodes failed over)');
ok(defined agreed(qw(n1 n2 n3)), 'and every node still agrees on it and on the members');

# ---- the master loses etcd: it stops acting, and still serves local reads
$m = $node{$stopped};
$m->safe_psql('postgres', q{SELECT search_engine.create_index('local', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}')});
$m->safe_psql('postgres', q{SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\n{"t": "kept"}\n{"index": {"_id": "2"}}\n{"t": "kept"}\n', 'local', refresh => 'true')});
$offset = -s $m->logfile;
my $lost_at = time;
$cluster->kill_etcd;
$took = $cluster->wait_for('the master stops acting without etcd', $TTL + 5, sub {
	defined logged_at($m, $offset, qr/stopped acting as master/);
});
my $stopped_at = logged_at($m, $offset, qr/stopped acting as master/);
ok(defined $stopped_at && $stopped_at - $lost_at < $TTL,
	sprintf('cut off from etcd, the master stops acting %.2fs later (< lease TTL %ds)',
		defined $stopped_at ? $stopped_at - $lost_at : -1, $TTL));
$took = $cluster->wait_for('_cat/master answers master_not_discovered', $TTL + 5, sub {
	my ($st, $body) = SeCluster::request($m, 'GET', '/_cat/master');
	return $st == 503 && $body->{error}{type} eq 'master_not_discovered_exception';
});
ok(defined $took, 'without etcd the node knows no master (503 master_not_discovered_exception)');
is($m->safe_psql('postgres', q{SELECT search_engine.search('local', '{"query": {"match": {"t": "kept"}}}')->'hits'->'total'->>'value'}),
	'2', 'and still answers a search on its local index');

# ---- etcd comes back: the nodes reconnect, rejoin and elect a master again
$cluster->restart_etcd;
$took = $cluster->wait_for('the nodes rejoin and agree on a master', 30, sub { agreed(qw(n1 n2 n3)) });
ok(defined $took, sprintf('etcd back, the nodes rejoined and agree on a master after %.1fs', $took // -1));

# ---- a setting PostgreSQL would only warn about keeps the node from starting
my $bad = PostgreSQL::Test::Cluster->new('badroles');
$bad->init;
$bad->append_conf('postgresql.conf', "shared_preload_libraries = 'search_engine'\n"
	  . "search_engine.node_roles = 'master,ingest'\n"
	  . "search_engine.publish_conninfo = 'host=10.0.0.1 password=secret'\n");
ok(!$bad->start(fail_ok => 1), 'a node with an unknown role or a published password does not start');
my $badlog = slurp_file($bad->logfile);
like($badlog, qr/Unknown node role "ingest".*FATAL:  invalid search_engine cluster settings/s,
	'and says the role is unknown');
like($badlog, qr/cannot hold a password/, 'and that the published connection string holds a password');

$cluster->teardown;
done_testing();
