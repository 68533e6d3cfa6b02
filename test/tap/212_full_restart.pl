# A full-cluster restart: every data node stops (as when each server is
# restarted for an upgrade) and comes back.  Each copy is found again on the
# node that holds its files -- primaries from their store, replicas by peer
# recovery -- the cluster goes green and nothing is lost.  After an
# immediate stop the first node back, its name still held by its dead
# process's etcd lease, must not answer green from the state it persisted
# before the stop.
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

my $TTL = 5;
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap212');
my %node;
for my $n (qw(n1 n2))
{
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => 'master,data',
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my ($status, $body);
ok($cluster->wait_for('a master and two members', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 2;
}), 'the cluster formed');

# the only copy of a shard on n2 (the shape a restarted bench cluster left
# INITIALIZING), shards on both nodes, and a replicated index
req('n1', 'PUT', '/solo', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.require._name": "n2"}}');
req('n1', 'PUT', '/spread', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}');
req('n1', 'PUT', '/rep', '{"settings": {"number_of_shards": 2, "number_of_replicas": 1}}');
($status, $body) = req('n1', 'GET', '/_cluster/health?wait_for_status=green&timeout=60s');
is("$status $body->{status}", '200 green', 'green before the restarts');

my %want = (solo => 0, spread => 0, rep => 0);
sub load
{
	my ($round, $flush) = @_;
	for my $index (sort keys %want)
	{
		my $nd = join('', map { qq({"index": {"_id": "$round-$_"}}\n{"r": $round, "i": $_}\n) } 1 .. 50);
		($status, $body) = req('n1', 'POST', "/$index/_bulk", $nd);
		is("$status " . ($body->{errors} ? 'errors' : 'ok'), '200 ok', "round $round: 50 documents into $index");
		$want{$index} += 50;
		req('n1', 'POST', "/$index/_flush") if $flush;
	}
}

# a restart: both nodes stop, then start in the given order; the cluster
# must go green with every acknowledged document
sub restart
{
	my ($label, $mode, @order) = @_;
	$node{$_}->stop($mode) for qw(n2 n1);
	for my $n (@order)
	{
		$node{$n}->start;
		if ($n ne $order[0] || $mode ne 'immediate')
		{
			sleep 2;
			next;
		}
		# the other node is down: whatever the first one says of the
		# cluster, it is not green with two nodes
		my @seen;
		for (1 .. 20)
		{
			my ($s, $b) = req($n, 'GET', '/_cluster/health?timeout=1s&master_timeout=1s');
			push @seen, $s == 200 ? "$s:$b->{status}:$b->{number_of_nodes}" : "$s:" . ($b->{error}{type} // '?');
			select(undef, undef, undef, 0.2);
		}
		my @green = grep { /^200:green/ } @seen;
		is(scalar(@green), 0, "$label: $n alone never answers green");
		diag(join(' ', @seen)) if @green;
	}
	my $green = $cluster->wait_for("$label: green", 90, sub {
		my ($s, $b) = req($order[0], 'GET', '/_cluster/health');
		return $s == 200 && $b->{status} eq 'green' && $b->{number_of_nodes} == 2;
	});
	ok($green, "$label: the cluster is green again");
	if (!$green)
	{
		my ($s, $b) = req($order[0], 'GET', '/_cat/shards?format=json');
		diag(encode_json($b));
	}
	for my $index (sort keys %want)
	{
		req($order[0], 'POST', "/$index/_refresh");
		my ($s, $b) = req($order[0], 'GET', "/$index/_count");
		is($b->{count}, $want{$index}, "$label: $index has all $want{$index} documents");
	}
	my ($s, $b) = req($order[0], 'GET', '/_cat/shards/solo?format=json&h=node,state');
	is(join(' ', map { "$_->{node}:$_->{state}" } @$b), 'n2:STARTED', "$label: solo's only copy is back on n2");
}

load(1, 1);
load(2, 0);    # these only in the translog
restart('fast stop, n1 first', 'fast', qw(n1 n2));
load(3, 0);
# an immediate stop of both: their old etcd leases outlive the quick
# restart, so the first node back must not answer from the state it had
# before the stop until a master has published a membership with it
restart('immediate stop, n2 first', 'immediate', qw(n2 n1));
load(4, 0);
# writes go on after the last restart
($status, $body) = req('n1', 'GET', '/_cluster/health?wait_for_status=green&timeout=30s');
is($body->{status}, 'green', 'green at the end');

$cluster->teardown;
done_testing();
