# Replica copies in the routing (issue 16, the master's side), on three
# master-eligible data nodes over a real three-member etcd cluster: an
# index with number_of_replicas 1 gets a replica copy per shard on
# another node than its primary; a copy whose peer recovery fails (every
# chunk its primary's node sends arrives corrupted: a debug file) fails to
# start (never opened empty as if it were in sync) and stays out of the
# in-sync set; health, _cat/shards, _cluster/state (routing_table with
# every copy, primary_terms, in_sync_allocations) and allocation explain
# show it; number_of_replicas changes at runtime; searches are served by
# the primaries; a primary whose node is gone with no in-sync replica
# leaves the shard red with explain saying why, and comes back with its
# node; the routing written before replicas (one object per shard) still
# loads.  The failover itself (an in-sync started replica promoted with
# the term + 1) is in test/unit/test_routing.c until a replica can start.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap230');
my %node;
$node{$_} = $cluster->new_node($_, ttl => 5, extra => "search_engine.debug_waitpoints = on\n")
  for qw(n1 n2 n3);
# every recovery chunk any node sends arrives corrupted: no replica can start
for my $n (qw(n1 n2 n3))
{
	open(my $fh, '>', $node{$n}->data_dir . '/search_engine_corrupt_recovery_chunk') or die $!;
	print $fh "always\n";
	close $fh;
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

# _cluster/state as n sees it, node ids turned into names
sub state_of
{
	my ($n) = @_;
	my ($status, $body) = req($n, 'GET', '/_cluster/state/metadata,routing_table,nodes');
	my %names = map { $_ => $body->{nodes}{$_}{name} } keys %{ $body->{nodes} // {} };
	for my $ix (values %{ $body->{routing_table}{indices} // {} })
	{
		for my $copies (values %{ $ix->{shards} })
		{
			$_->{node_name} = defined $_->{node} ? ($names{ $_->{node} } // $_->{node}) : '-'
			  for @$copies;
		}
	}
	return $body;
}

# "p:node:STATE r:node:STATE" per shard, shards joined by " | "
sub copies
{
	my ($n, $index) = @_;
	my $shards = state_of($n)->{routing_table}{indices}{$index}{shards} or return '';
	return join(' | ', map {
		join(' ', map { ($_->{primary} ? 'p' : 'r') . ":$_->{node_name}:$_->{state}" } @{ $shards->{$_} })
	} sort { $a <=> $b } keys %$shards);
}

ok($cluster->wait_for('a master and three members', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && !grep { keys(%{ SeCluster::nodes_of($node{$_}) }) != 3 } qw(n1 n2 n3);
}), 'the cluster formed');

# ---- an index with one replica: the replica goes to another node, fails to start
my ($status, $body) = req('n1', 'PUT', '/rep',
	'{"settings": {"number_of_shards": 2, "number_of_replicas": 1, "index.allocation.max_retries": 1}}');
is("$status $body->{shards_acknowledged}", '200 1', 'created; the primaries are active');
my $st;
ok($cluster->wait_for('the replicas tried once', 30, sub {
	$st = state_of('n2');
	my $shards = $st->{routing_table}{indices}{rep}{shards} or return 0;
	return !grep {
		my ($p, $r) = @{ $shards->{$_} };
		!($p->{state} eq 'STARTED' && $r && $r->{state} eq 'UNASSIGNED'
		  && ($r->{unassigned_info}{failed_attempts} // 0) == 1)
	} 0, 1;
}), 'each shard: primary STARTED, its replica tried and failed (max_retries 1)');
my $shards = $st->{routing_table}{indices}{rep}{shards};
for my $s (0, 1)
{
	my ($p, $r) = @{ $shards->{$s} };
	is(scalar @{ $shards->{$s} }, 2, "shard $s: two copies in the routing table");
	ok($p->{primary} && !$r->{primary}, "shard $s: the primary first, then the replica");
	is($r->{unassigned_info}{reason}, 'ALLOCATION_FAILED', "shard $s: replica unassigned after its failure");
	like($r->{unassigned_info}{details}, qr/peer recovery .* failed 3 times: checksum failed/,
		"shard $s: it failed to start because its peer recovery failed (checksum)");
	my ($on) = $r->{unassigned_info}{details} =~ /failed shard on node \[(\w+)\]/;
	ok(defined $on && $on ne $p->{node_name}, "shard $s: the replica was placed on "
		. ($on // '?') . ", not on its primary's node $p->{node_name}");
	is_deeply($st->{metadata}{indices}{rep}{in_sync_allocations}{$s}, [ $p->{allocation_id}{id} ],
		"shard $s: in_sync_allocations is the primary's id alone");
	is($st->{metadata}{indices}{rep}{primary_terms}{$s}, 1, "shard $s: primary term 1");
}
($status, $body) = req('n3', 'GET', '/_cluster/health/rep');
is("$body->{status} $body->{active_primary_shards} $body->{active_shards} $body->{unassigned_shards}",
	'yellow 2 2 2', 'health: yellow, the replicas unassigned');
($status, $body) = req('n3', 'GET', '/_cat/shards/rep?format=json&h=shard,prirep,state');
is(join(' ', map { "$_->{shard}$_->{prirep}:$_->{state}" } sort { "$a->{shard}$a->{prirep}" cmp "$b->{shard}$b->{prirep}" } @$body),
	'0p:STARTED 0r:UNASSIGNED 1p:STARTED 1r:UNASSIGNED', '_cat/shards: one row per copy, prirep p and r');
($status, $body) = req('n3', 'GET', '/_cat/indices/rep?format=json&h=health');
is($body->[0]{health}, 'yellow', '_cat/indices: yellow');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "rep", "shard": 0, "primary": false}');
is("$status $body->{primary} $body->{current_state} $body->{can_allocate}", '200 0 unassigned no',
	'explain of the replica ("primary": false)');
ok(grep({ grep { $_->{decider} eq 'max_retry' } @{ $_->{deciders} // [] } } @{ $body->{node_allocation_decisions} }),
	'explain: max_retry holds it');

# ---- searches are served by the primaries
req('n3', 'POST', '/rep/_bulk?refresh=true',
	join('', map { qq({"index": {"_id": "$_"}}\\n{"n": $_}\\n) } 1 .. 20) =~ s/\\n/\n/gr);
for my $n (qw(n1 n2 n3))
{
	($status, $body) = req($n, 'GET', '/rep/_count');
	is("$status $body->{count}", '200 20', "_count through $n: every document, from the primaries");
}
($status, $body) = req('n2', 'POST', '/rep/_search', '{"size": 0, "track_total_hits": true}');
is("$body->{hits}{total}{value} $body->{_shards}{successful}", '20 2', '_search through n2');
($status, $body) = req('n1', 'GET', '/rep/_doc/7');
is("$status $body->{_source}{n}", '200 7', 'GET of one document');

# ---- number_of_replicas at runtime: 1 -> 0 -> 1
($status) = req('n3', 'PUT', '/rep/_settings', '{"index": {"number_of_replicas": 0}}');
is($status, 200, 'number_of_replicas 1 -> 0');
ok($cluster->wait_for('no replica', 20, sub { copies('n1', 'rep') =~ /^p:\w+:STARTED \| p:\w+:STARTED$/ }),
	'the replica copies are gone from the routing');
($status, $body) = req('n3', 'GET', '/_cluster/health/rep');
is("$body->{status} $body->{unassigned_shards}", 'green 0', 'health: green');
($status, $body) = req('n3', 'GET', '/_cat/shards/rep?format=json&h=prirep');
is(join('', sort map { $_->{prirep} } @$body), 'pp', '_cat/shards: the primaries only');
($status) = req('n3', 'PUT', '/rep/_settings', '{"index": {"number_of_replicas": 1}}');
ok($cluster->wait_for('a replica again', 20, sub {
	my $c = copies('n1', 'rep');
	return $c =~ /^p:\w+:STARTED r:\S+ \| p:\w+:STARTED r:\S+$/;
}), 'number_of_replicas 0 -> 1: a replica copy per shard again');
$st = state_of('n1');
like($st->{routing_table}{indices}{rep}{shards}{0}[1]{unassigned_info}{reason} // 'placed',
	qr/^(REPLICA_ADDED|ALLOCATION_FAILED|placed)$/, 'added as ES does (REPLICA_ADDED)');
($status, $body) = req('n3', 'GET', '/rep/_count');
is($body->{count}, 20, 'the documents stay');

# ---- a primary whose node is gone, with no in-sync replica: red, and explain says why
my $p0 = $st->{routing_table}{indices}{rep}{shards}{0}[0]{node_name};
my ($ask) = grep { $_ ne $p0 } qw(n1 n2 n3);
$node{$p0}->stop('immediate');
ok($cluster->wait_for("$p0 gone", 60, sub {
	my $c = state_of($ask)->{routing_table}{indices}{rep}{shards}{0}[0];
	return $c && $c->{state} eq 'UNASSIGNED';
}), "$p0 left: shard 0's primary is unassigned");
($status, $body) = req($ask, 'GET', '/_cluster/health/rep');
is($body->{status}, 'red', 'red: no replica was in sync to take its place');
($status, $body) = req($ask, 'GET', '/_cluster/allocation/explain', '{"index": "rep", "shard": 0, "primary": true}');
is("$body->{unassigned_info}{reason} $body->{can_allocate}", 'NODE_LEFT no_valid_shard_copy',
	'explain: the data is on the node that left');
like($body->{failover_explanation}, qr/no replica of this shard can be promoted/, 'and no replica could be promoted');
$st = state_of($ask);
is($st->{metadata}{indices}{rep}{primary_terms}{0}, 1, 'no promotion: the term stays');
$node{$p0}->start;
ok($cluster->wait_for("$p0 back", 60, sub {
	copies($ask, 'rep') =~ /^p:\w+:STARTED r:\S+ \| p:\w+:STARTED r:\S+$/
}), "$p0 is back: its primary comes back on it");
($status, $body) = req($ask, 'GET', '/rep/_count');
is($body->{count}, 20, 'with every document');

# ---- the routing written before replicas (one object per shard) still loads
($status) = req('n1', 'PUT', '/old', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}');
ok($cluster->wait_for('old placed', 20, sub { copies('n1', 'old') =~ /^p:\w+:STARTED$/ }), 'an index');
req('n1', 'PUT', '/old/_doc/1?refresh=true', '{"t": "kept"}');
my $json = decode_json($cluster->etcd_get('state/indices/old'));
my $old_shape = $json->{routing}[0]{copies}[0];
delete $old_shape->{primary};
$json->{routing} = [ $old_shape ];
my $key = "/search_engine/tap230/state/indices/old";
my $value = encode_json($json);
{
	local $ENV{ETCDCTL_API} = 3;
	system('etcdctl', "--endpoints=" . $cluster->endpoints, 'put', $key, $value) == 0 or die "etcdctl put";
}
ok($cluster->wait_for('applied', 30, sub {
	my ($s, $b) = req('n2', 'GET', '/old/_doc/1');
	return $s == 200 && $b->{_source}{t} eq 'kept';
}), 'the nodes apply the old shape (one primary copy) and serve the document');
# the next change of the index is written in the new shape
($status) = req('n3', 'PUT', '/old/_settings', '{"index": {"refresh_interval": "2s"}}');
is($status, 200, 'a change of the index');
ok($cluster->wait_for('rewritten', 30, sub {
	my $v = decode_json($cluster->etcd_get('state/indices/old') // '{}');
	return ref $v->{routing}[0]{copies} eq 'ARRAY';
}), 'the master writes it back in the new shape');
$st = state_of('n2');
is_deeply($st->{metadata}{indices}{old}{in_sync_allocations}{0},
	[ $st->{routing_table}{indices}{old}{shards}{0}[0]{allocation_id}{id} ],
	'its started primary is in sync');
($status, $body) = req('n3', 'GET', '/old/_doc/1');
is($body->{_source}{t}, 'kept', 'and serves its document');

$cluster->teardown;
done_testing();
