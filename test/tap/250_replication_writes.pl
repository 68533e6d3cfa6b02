# Write replication (issue 16): on two data nodes and a dedicated master over
# a three-member etcd cluster, an index with one replica.  A write is acknowledged only once both
# copies have it (the replica's documents, _seq_no, _primary_term and
# _version equal the primary's right after the acknowledgement, before any
# refresh could hide a difference); a replica refuses replica_ops of an older
# primary term; a replica whose node is killed is failed through the master
# and the primary goes on acknowledging; after kill -9 of the primary's node
# the replica is promoted (term + 1) and no acknowledged write is lost; the
# old primary comes back as a replica, refuses the old term, and the copies
# end equal.
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
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap250');
my %node;
# a dedicated master (n3): the failover below is the master's, not an election's
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
	return SeCluster::master_of($node{n1}) eq 'n3' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
	  && SeCluster::master_of($node{n2}) eq 'n3';
}), 'two data nodes and their master');

my ($status, $body) = req('n1', 'PUT', '/rw',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,"refresh_interval":"30s",'
	  . '"unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"v":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub health
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cluster/health/rw');
	return $st == 200 ? $b->{status} : "status $st";
}
ok($cluster->wait_for('green', 60, sub { health() eq 'green' }), 'both copies started: green');

sub shards
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cat/shards/rw?format=json&h=prirep,node,state');
	return $st == 200 ? $b : [];
}
sub primary_node
{
	my ($n) = @_;
	my ($p) = grep { $_->{prirep} eq 'p' && $_->{state} eq 'STARTED' } @{ shards($n) };
	return $p ? $p->{node} : '';
}
my $pnode = primary_node();
my ($rnode) = grep { $_ ne $pnode } qw(n1 n2);
ok($pnode, "the primary is on $pnode, the replica on $rnode");

# every acknowledged write: id => "seq_no:term:version:v" (or deleted)
my %acked;
my $failed_items = 0;
sub bulk
{
	my ($n, $nd, $query) = @_;
	my ($st, $b) = req($n, 'POST', '/rw/_bulk' . ($query // ''), $nd);
	return 0 unless $st == 200;
	for my $it (@{ $b->{items} })
	{
		my ($op) = values %$it;
		if ($op->{status} >= 300 && $op->{status} != 404) { $failed_items++; next; }
		$acked{ $op->{_id} } = $op->{result} eq 'deleted' || $op->{result} eq 'not_found'
		  ? 'deleted' : "$op->{_seq_no}:$op->{_primary_term}:$op->{_version}";
	}
	return !$b->{errors};
}
sub docs
{
	my ($from, $to, $v) = @_;
	return join('', map { qq({"index":{"_id":"d$_"}}\n{"v":$v}\n) } $from .. $to);
}

# the copy on node n as its realtime get reads it (_mget goes to this node's
# copy first): id => "seq_no:term:version"
sub copy_of
{
	my ($n, @ids) = @_;
	my $list = join(',', map { qq("$_") } @ids);
	my ($st, $b) = req($n, 'POST', '/rw/_mget', qq({"ids":[$list]}));
	return {} unless $st == 200;
	return { map { $_->{_id} => ($_->{found} ? "$_->{_seq_no}:$_->{_primary_term}:$_->{_version}" : 'deleted') }
		  @{ $b->{docs} } };
}
sub count_on
{
	my ($n) = @_;
	my ($st, $b) = req($n, 'POST', '/rw/_search', '{"size":0,"track_total_hits":true}');
	return $st == 200 ? $b->{hits}{total}{value} : -1;
}

# ---- acknowledged only when both copies have it
ok(bulk($pnode, docs(1, 100, 1)), '100 documents through the primary\'s node');
ok(bulk($rnode, docs(50, 150, 2)), '101 more (50 of them updates) through the replica\'s node');
ok(bulk($rnode, join('', map { qq({"delete":{"_id":"d$_"}}\n) } 1 .. 10)), 'ten deletes');
ok(bulk($pnode, qq({"update":{"_id":"d20"}}\n{"doc":{"v":9}}\n), '?refresh=true'), 'a partial update, refresh=true');
my @ids = map { "d$_" } 1 .. 150;
my %want = map { $_ => $acked{$_} } @ids;
is_deeply(copy_of($rnode, @ids), \%want,
	'right after the acknowledgements the replica holds every write with the same _seq_no, _primary_term and _version');
is_deeply(copy_of($pnode, @ids), \%want, 'and so does the primary');
is(count_on($rnode) . ' ' . count_on($pnode), '140 140',
	'refresh=true refreshed both copies before the answer (refresh_interval 30s): each searches 140 documents');

# ---- replica_ops of an older primary term are refused
($status, $body) = req('n1', 'GET', '/_cat/indices/rw?format=json&h=uuid');
my $uuid = $body->[0]{uuid};
sub replica_ops_reply
{
	my ($n, $term) = @_;
	my $hdr = qq({"index_uuid":"$uuid","shard":0,"allocation_id":"","primary_term":$term,"global_checkpoint":-1});
	my $payload = pack('V', 1) . pack('V', length $hdr) . $hdr . pack('V', 0) . pack('V', 0);
	my $hex = unpack('H*', $payload);
	return $node{$n}->safe_psql('postgres',
		"SELECT convert_from(substr(search_engine._transport('replica_ops', decode('$hex', 'hex')), 2), 'UTF8')");
}
like(replica_ops_reply($rnode, 0), qr/illegal_state_exception.*primary term \[0\] is too old \(current \[1\]\)/,
	'the replica refuses replica_ops of primary term 0');
like(replica_ops_reply($rnode, 1), qr/"local_checkpoint":\d+/, 'and takes them (none) from the current term');

# ---- the replica's node is killed: failed through the master, writes go on
SeTest::crash($node{$rnode});
my $t0 = time;
ok(bulk($pnode, docs(200, 220, 3)), 'writes after the replica died are acknowledged');
my $took = time - $t0;
ok($took < 25, sprintf('within %.1f s (the replica reported failed to the master first)', $took));
is(health($pnode), 'yellow', 'the replica is unassigned: yellow');
# the copy went one of two ways: the primary failed it through the master
# (its write reached the dead node), or the master's follower checks
# removed the dead node first and the write never went there
my $log = slurp_file($node{$pnode}->logfile);
my $mlog = slurp_file($node{n3}->logfile);
ok($log =~ /replica \[\S+\] of \[rw\]\[0\] on node \[$rnode\] failed and was removed from the in-sync copies/
	  || $mlog =~ /master \[n3\] removes node \[$rnode\]/,
	'the primary logged the failed replica, or the master removed its node first');
ok(bulk($pnode, docs(221, 230, 3)), 'and go on being acknowledged');
($status, $body) = req($pnode, 'POST', '/rw/_bulk?wait_for_active_shards=all&timeout=500ms',
	qq({"index":{"_id":"w1"}}\n{"v":1}\n));
is($body->{items}[0]{index}{status}, 503, 'wait_for_active_shards=all with one copy active: 503');
like($body->{items}[0]{index}{error}{reason} // '',
	qr/Not enough active copies to meet shard count of \[ALL\] \(have 1, needed 2\)/,
	'unavailable_shards_exception as ES words it') or diag(explain $body);

# the node returns: its copy recovers from the primary and gets new writes again
SeTest::after_crash($node{$rnode});
$node{$rnode}->start;
ok($cluster->wait_for('green again', 90, sub { health($pnode) eq 'green' && health($rnode) eq 'green' }),
	'the replica recovered: green');
ok(bulk($pnode, docs(231, 240, 4)), 'ten more');
($status, $body) = req($pnode, 'POST', '/rw/_bulk?wait_for_active_shards=2',
	qq({"index":{"_id":"w1"}}\n{"v":1}\n));
is($body->{items}[0]{index}{status}, 201, 'wait_for_active_shards=2 with both copies active: written');
is(join('/', map { $body->{items}[0]{index}{_shards}{$_} } qw(total successful failed)), '2/2/0',
	'its _shards count the replica that acknowledged it') or diag(explain $body);
($status, $body) = req($rnode, 'PUT', '/rw/_doc/w2', '{"v":2}');
is("$status " . join('/', map { $body->{_shards}{$_} // '?' } qw(total successful failed)), '201 2/2/0',
	'a single-document write through the replica\'s node: both copies have it') or diag(explain $body);
@ids = map { "d$_" } 1 .. 240;
%want = map { $_ => $acked{$_} // 'deleted' } @ids;
is_deeply(copy_of($rnode, @ids), \%want, 'the recovered replica holds every acknowledged write');

# ---- kill -9 of the primary's node: the replica is promoted, nothing acknowledged is lost
SeTest::crash($node{$pnode});
my $new = $rnode;
ok($cluster->wait_for("$new promoted", 4 * $TTL + 20, sub { primary_node($new) eq $new }),
	"the replica on $new became the primary");
($status, $body) = req($new, 'GET', '/_cluster/state');
is($body->{metadata}{indices}{rw}{primary_terms}{0}, 2, 'with primary term 2');
is_deeply(copy_of($new, @ids), \%want, 'every acknowledged write is on the new primary');
ok($cluster->wait_for('writes acknowledged again', 30, sub { bulk($new, docs(241, 250, 5)) }),
	'the new primary acknowledges writes');
$log = slurp_file($node{$new}->logfile);
like($log, qr/shard \[rw\]\[0\] is the primary now, primary term \[2\] \(was \[1\]\)/,
	'the new primary\'s engine took term 2');
like($log, qr/primary \[rw\]\[0\] resyncs operations \[\d+\.\.\.-?\d+\] to its copies with primary term \[2\]/,
	'and owed its copies a resync');
like($acked{d245}, qr/^\d+:2:1$/, 'in term 2');

# the old primary's node returns as a replica, refuses the old term, copies equal
SeTest::after_crash($node{$pnode});
$node{$pnode}->start;
ok($cluster->wait_for('green after the old primary returned', 90,
		sub { health($new) eq 'green' && health($pnode) eq 'green' }),
	'the old primary\'s node recovered as a replica: green');
like(replica_ops_reply($pnode, 1), qr/primary term \[1\] is too old \(current \[2\]\)/,
	'the returned copy refuses replica_ops of the old primary\'s term');
ok(bulk($new, docs(251, 260, 6)), 'ten more');
@ids = map { "d$_" } 1 .. 260;
%want = map { $_ => $acked{$_} // 'deleted' } @ids;
is_deeply(copy_of($pnode, @ids), \%want, 'the returned replica holds every acknowledged write');
is_deeply(copy_of($new, @ids), \%want, 'as the primary does');
is($failed_items, 0, 'no item failed along the way');

$cluster->teardown;
done_testing();
