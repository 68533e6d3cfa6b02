# The master's allocator on a real cluster (three etcd members, two data
# nodes tagged hot and cold, a coordinating-only node): index and cluster
# allocation filters decide where shards go, allocation explain says why a
# copy stays unassigned, a copy whose filter changes is placed by the
# reroute that commits the change, a data node's copies wait unassigned
# while it is gone (rolling restart with allocation.enable: primaries) and
# come back on it with their documents -- a closed index's too -- a changed
# tier filter moves an index between the hot and the cold node, and the
# flood stage blocks writes with 429 until the disk figures are fine again.
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
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap220');
my %attrs = (n1 => 'box_type:hot,zone:a', n2 => 'box_type:cold,zone:b', n3 => '');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => ($n eq 'n3' ? '' : 'master,data'),
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n"
		  . "search_engine.node_attributes = '$attrs{$n}'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

# the master's routing of index: "node:STATE" per shard, in shard order
sub routing { my ($n, $index) = @_; return SeCluster::primaries($node{$n}, $index); }

my ($status, $body);
ok($cluster->wait_for('a master and three members', 30, sub {
	my $m = SeCluster::master_of($node{n3});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n3}) }) == 3;
}), 'the cluster formed');

# the copies stay where they are placed here: rebalancing (TAP 260) off
($status, $body) = req('n3', 'PUT', '/_cluster/settings',
	'{"persistent": {"cluster.routing.rebalance.enable": "none"}}');
is($status, 200, 'cluster.routing.rebalance.enable: none');

# ---- index-level require: every shard on the hot node
($status, $body) = req('n3', 'PUT', '/hot',
	'{"settings": {"number_of_shards": 3, "number_of_replicas": 0, "index.routing.allocation.require.box_type": "hot"}}');
is($status, 200, 'an index for the hot tier');
ok($cluster->wait_for('hot placed', 20, sub { routing('n3', 'hot') eq 'n1:STARTED n1:STARTED n1:STARTED' }),
	'index.routing.allocation.require.box_type: hot puts every shard on n1');

# ---- a cluster-level exclude
($status) = req('n3', 'PUT', '/_cluster/settings',
	'{"persistent": {"cluster.routing.allocation.exclude._name": "n1"}}');
is($status, 200, 'cluster settings through the coordinating-only node');
is($node{n1}->safe_psql('postgres', q{SELECT search_engine.cluster_settings(true)->'persistent'->>'cluster.routing.allocation.exclude._name'}),
	'n1', 'every node applied the cluster setting');
($status) = req('n1', 'PUT', '/spread', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}');
ok($cluster->wait_for('spread placed', 20, sub { routing('n3', 'spread') eq 'n2:STARTED n2:STARTED' }),
	'with exclude._name n1 a new index goes to n2 only');
req('n3', 'PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.exclude._name": null}}');
($status, $body) = req('n3', 'GET', '/_cluster/health?wait_for_nodes=3&wait_for_active_shards=5&level=indices&timeout=10s');
is("$status $body->{number_of_nodes} $body->{active_shards} $body->{indices}{hot}{status} $body->{indices}{spread}{active_shards}",
	'200 3 5 green 2', '_cluster/health waits for 3 nodes and 5 active shards, per index with level=indices (replicas: 230_replica_routing.pl)');
($status, $body) = req('n3', 'GET', '/_cat/allocation?format=json&h=node,shards,disk.total');
is(join(' ', map { "$_->{node}=$_->{shards}" } @$body), 'n1=3 n2=2', '_cat/allocation: the copies per data node');
ok(!grep({ !$_->{'disk.total'} } @$body), 'with their disks');

# ---- nowhere to go: unassigned, and explain says why
($status, $body) = req('n3', 'PUT', '/warm?wait_for_active_shards=0',
	'{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.require.box_type": "warm"}}');
is($status, 200, 'an index no node may hold');
is(routing('n3', 'warm'), '-:UNASSIGNED', 'its shard stays unassigned');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "warm", "shard": 0, "primary": true}');
is("$status $body->{current_state} $body->{can_allocate}", '200 unassigned no', 'explain: it cannot be allocated');
is(join(',', map { $_->{node_name} . '=' . join('+', map { $_->{decider} } @{ $_->{deciders} }) }
		sort { $a->{node_name} cmp $b->{node_name} } @{ $body->{node_allocation_decisions} }),
	'n1=filter,n2=filter', 'each data node refuses by its filter, the coordinating node is not asked');
like($body->{node_allocation_decisions}[0]{deciders}[0]{explanation},
	qr/node does not match index\.routing\.allocation\.require\.box_type:"warm"/, 'with the filter named');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain');
is("$status $body->{index}", '200 warm', 'explain without a body: the unassigned copy');
like($body->{note}, qr/randomly chosen unassigned shard/, 'with ES\'s note');
($status, $body) = req('n2', 'GET', '/_cluster/health/warm');
is($body->{status}, 'red', 'the index is red');
($status, $body) = req('n3', 'GET', '/_cat/allocation?format=json&h=node,shards');
is($body->[-1]{node} . '=' . $body->[-1]{shards}, 'UNASSIGNED=1', '_cat/allocation counts the unassigned copy');
# the filter changes: the reroute that commits the change places the copy
($status) = req('n3', 'PUT', '/warm/_settings', '{"index.routing.allocation.require.box_type": "cold"}');
ok($cluster->wait_for('warm placed', 20, sub { routing('n3', 'warm') eq 'n2:STARTED' }),
	'a filter it meets places it (on the cold node)');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "warm", "shard": 0, "primary": true}');
is("$status $body->{current_state} $body->{current_node}{name} $body->{can_remain_on_current_node}",
	'200 started n2 yes', 'explain of a started copy');

# ---- POST /_cluster/reroute
($status, $body) = req('n3', 'POST', '/_cluster/reroute',
	'{"commands": [{"move": {"index": "warm", "shard": 0, "from_node": "n2", "to_node": "n1"}}]}');
is("$status $body->{error}{type}", '400 illegal_argument_exception', 'a move the filter forbids is refused');
like($body->{error}{reason}, qr/\[move_allocation\] can't move \[warm\]\[0\], from n2, to n1, since its not allowed, reason: .*require\.box_type/,
	'saying which decider said no');
($status, $body) = req('n3', 'POST', '/_cluster/reroute?explain=true&dry_run=true',
	'{"commands": [{"cancel": {"index": "warm", "shard": 0, "node": "n2"}}]}');
is("$status $body->{explanations}[0]{command} $body->{explanations}[0]{decisions}[0]{decision}", '200 cancel NO',
	'explain=true explains a refused command');
like($body->{explanations}[0]{decisions}[0]{explanation}, qr/shard is primary/, 'a primary needs allow_primary');
($status, $body) = req('n3', 'POST', '/_cluster/reroute?dry_run=true',
	'{"commands": [{"cancel": {"index": "warm", "shard": 0, "node": "n2", "allow_primary": true}}]}');
is($status, 200, 'a dry run of a cancel');
is(routing('n3', 'warm'), 'n2:STARTED', 'changes nothing');

# ---- documents on the cold node, and an index closed there
req('n3', 'POST', '/warm/_bulk?refresh=true',
	join('', map { qq({"index": {"_id": "$_"}}\\n{"n": $_}\\n) } 1 .. 20) =~ s/\\n/\n/gr);
($status, $body) = req('n3', 'GET', '/warm/_count');
is($body->{count}, 20, '20 documents on n2');

# ---- hot/cold: a changed tier filter moves the index, documents and all
# (a relocation: rebalancing being off does not stop a copy that may not
# remain where it is from moving)
($status) = req('n3', 'PUT', '/warm/_settings', '{"index.routing.allocation.require.box_type": "hot"}');
is($status, 200, 'warm now requires the hot tier');
ok($cluster->wait_for('warm moved to hot', 60, sub { routing('n3', 'warm') eq 'n1:STARTED' }),
	'its copy moved to the hot node (n1)');
($status, $body) = req('n3', 'GET', '/warm/_count');
is($body->{count}, 20, 'with its 20 documents');
($status) = req('n3', 'PUT', '/warm/_settings', '{"index.routing.allocation.require.box_type": "cold"}');
ok($cluster->wait_for('warm back on cold', 60, sub { routing('n3', 'warm') eq 'n2:STARTED' }),
	'and back to the cold node (n2)');
($status, $body) = req('n3', 'GET', '/warm/_count');
is($body->{count}, 20, 'still with its 20 documents');
# six shards: more than node_initial_primaries_recoveries (4), which copies
# of a closed index must not hold (they recover nothing) when n2 comes back
my $six = join(' ', ('n2:STARTED') x 6);
req('n3', 'PUT', '/shut', '{"settings": {"number_of_shards": 6, "number_of_replicas": 0, "index.routing.allocation.require._name": "n2"}}');
ok($cluster->wait_for('shut placed', 30, sub { routing('n3', 'shut') eq $six }), 'another index on n2');
req('n3', 'POST', '/shut/_bulk?refresh=true', qq({"index": {"_id": "a"}}\n{"t": "kept"}\n));
($status) = req('n3', 'POST', '/shut/_close');
is($status, 200, 'and closed');

# ---- rolling restart of n2 with allocation.enable: primaries
($status) = req('n3', 'PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.enable": "primaries"}}');
is($status, 200, 'allocation.enable: primaries');
$node{n2}->stop('fast');
ok($cluster->wait_for('n2 left', 30, sub { routing('n3', 'warm') eq '-:UNASSIGNED' }),
	'n2 left: its copy is unassigned');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "warm", "shard": 0, "primary": true}');
is("$body->{unassigned_info}{reason} $body->{can_allocate}", 'NODE_LEFT no_valid_shard_copy',
	'explain: NODE_LEFT, and no other node holds its data (it is not rebuilt empty elsewhere)');
is(routing('n3', 'spread'), '-:UNASSIGNED -:UNASSIGNED', 'nor are the others');
($status, $body) = req('n3', 'POST', '/_cluster/reroute',
	'{"commands": [{"allocate_empty_primary": {"index": "spread", "shard": 0, "node": "n1"}}]}');
like("$status $body->{error}{reason}", qr/^400 .*accept_data_loss/, 'allocate_empty_primary wants accept_data_loss');
$node{n2}->start;
ok($cluster->wait_for('n2 back', 60, sub {
	routing('n3', 'warm') eq 'n2:STARTED' && routing('n3', 'spread') eq 'n2:STARTED n2:STARTED'
}), 'n2 is back: its copies come back on it');
($status, $body) = req('n3', 'GET', '/_cat/allocation?format=json&h=node,shards');
is(join(' ', map { "$_->{node}=$_->{shards}" } @$body), 'n1=3 n2=9',
	'the closed index\'s six copies are back on n2 too (they take no recovery slot from the open ones)');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "shut", "shard": 5, "primary": true}');
is("$body->{current_state} $body->{current_node}{name}", 'started n2', 'a closed copy placed back is started: nothing recovers it');
($status, $body) = req('n3', 'GET', '/warm/_count');
is($body->{count}, 20, 'with their documents');
($status) = req('n3', 'POST', '/shut/_open');
ok($cluster->wait_for('shut open', 30, sub { routing('n3', 'shut') eq $six }),
	'the index closed on n2 reopens there');
($status, $body) = req('n3', 'GET', '/shut/_count');
is($body->{count}, 1, 'with its document');
req('n3', 'PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.enable": null}}');

# ---- max retries: copies that fail to open on n2 stop being tried; retry_failed
my $dir = $node{n2}->data_dir . '/search_engine/indices';
my $mode = (stat $dir)[2] & 07777;
chmod 0555, $dir;
($status) = req('n3', 'PUT', '/fails?wait_for_active_shards=0',
	'{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.require._name": "n2", "index.allocation.max_retries": 2}}');
my $u;
ok($cluster->wait_for('two failed attempts', 30, sub {
	my ($s, $b) = req('n3', 'GET', '/_cluster/state/routing_table');
	$u = $b->{routing_table}{indices}{fails}{shards}{0}[0];
	$u->{state} eq 'UNASSIGNED' && ($u->{unassigned_info}{failed_attempts} // 0) == 2;
}), 'a copy that fails to open is tried index.allocation.max_retries times');
($status, $body) = req('n3', 'GET', '/_cluster/allocation/explain', '{"index": "fails", "shard": 0, "primary": true}');
ok((grep { $_->{decider} eq 'max_retry' } @{ $body->{node_allocation_decisions}[0]{deciders} }),
	'explain names max_retry');
chmod $mode, $dir;
sleep 6;    # a periodic reroute comes and goes: still not tried
is(routing('n3', 'fails'), '-:UNASSIGNED', 'and then left unassigned');
($status) = req('n3', 'POST', '/_cluster/reroute?retry_failed=true');
is($status, 200, 'retry_failed');
ok($cluster->wait_for('fails started', 30, sub { routing('n3', 'fails') eq 'n2:STARTED' }),
	'the copy is tried again and starts');

# ---- the flood stage: every node above it (watermarks as free bytes no disk has)
($status) = req('n3', 'PUT', '/_cluster/settings', '{"transient": {
	"cluster.routing.allocation.disk.watermark.low": "1000tb",
	"cluster.routing.allocation.disk.watermark.high": "900tb",
	"cluster.routing.allocation.disk.watermark.flood_stage": "800tb"}}');
is($status, 200, 'watermarks no node meets');
ok($cluster->wait_for('flood block', 30, sub {
	my ($s, $b) = req('n3', 'GET', '/warm/_settings');
	($b->{warm}{settings}{index}{blocks}{read_only_allow_delete} // '') eq 'true';
}), 'the master sets index.blocks.read_only_allow_delete on the indices of nodes above the flood stage');
($status, $body) = req('n3', 'PUT', '/warm/_doc/x', '{"n": 0}');
is("$status $body->{error}{type}", '429 cluster_block_exception', 'a write gets 429 cluster_block_exception');
($status, $body) = req('n3', 'GET', '/warm/_count');
is($body->{count}, 20, 'reads go on');
req('n3', 'PUT', '/_cluster/settings', '{"transient": {"cluster.routing.allocation.disk.watermark.*": null}}');
ok($cluster->wait_for('block lifted', 30, sub {
	my ($s, $b) = req('n3', 'PUT', '/warm/_doc/x', '{"n": 0}');
	$s == 201;
}), 'below the watermarks again, the block is lifted and writes are accepted');

$cluster->teardown;
done_testing();
