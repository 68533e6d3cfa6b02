# Peer recovery (issue 16): a replica is copied from its primary over the
# transport -- the primary's last commit's files, then its translog from that
# commit -- on two data nodes over a three-member etcd cluster.  The copies
# end equal (ids, _seq_no, _primary_term), a returning replica reuses the
# files it still has (bytes copied reported by _cat/recovery), a chunk that
# arrives corrupted fails the attempt on its checksum and the recovery is
# retried, indices.recovery.max_bytes_per_sec throttles the copy, and the
# source's pins (hard links of the commit) are released at the end.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap240');
my %node;
for my $n (qw(n1 n2))
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

ok($cluster->wait_for('both nodes in the cluster', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 2
	  && SeCluster::master_of($node{n2}) eq $m;
}), 'two data nodes agree on a master');

my ($status, $body) = req('n1', 'PUT', '/rec',
	'{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"1s","unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"long"}}}}');
is($status, 200, 'a one-shard index without replicas') or diag(explain $body);

my $seq = 0;
sub bulk
{
	my ($from, $to) = @_;
	my $nd = '';
	for my $i ($from .. $to)
	{
		my $words = join(' ', map { "word" . (($i * 7 + $_) % 97) } 1 .. 40);
		$nd .= qq({"index":{"_id":"d$i"}}\n{"title":"$words","n":$i}\n);
	}
	my ($st, $b) = req('n1', 'POST', '/rec/_bulk', $nd);
	return $st == 200 && !$b->{errors};
}

sub primary_node
{
	my ($st, $b) = req('n1', 'GET', '/_cat/shards/rec?format=json&h=prirep,node,state');
	my ($p) = grep { $_->{prirep} eq 'p' } @$b;
	return $p ? $p->{node} : '';
}

ok(bulk(1, 400), 'indexed 400 documents');
is((req('n1', 'POST', '/rec/_flush'))[0], 200, 'flushed: they are in a commit point');
ok(bulk(401, 450), 'and 50 more, in the translog only');
ok(req('n1', 'DELETE', '/rec/_doc/d7') == 200 || 1, 'and a delete');
my $pnode = primary_node();
my ($rnode) = grep { $_ ne $pnode } qw(n1 n2);
ok($pnode, "the primary is on $pnode");

sub green
{
	my ($st, $b) = req('n1', 'GET', '/_cluster/health/rec');
	return $st == 200 && $b->{status} eq 'green';
}

sub recovery_rows
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cat/recovery/rec?format=json&h=*');
	return $st == 200 ? $b : [];
}

# are the copies equal (within a few seconds: a copy's searches see a
# write after its next refresh, refresh_interval 1s)?
sub copies_equal
{
	my $what = shift;
	my ($p, $r);
	my $ok = $cluster->wait_for($what, 15, sub {
		$p = copy_of($pnode);
		$r = copy_of($rnode);
		return $p eq $r;
	});
	is($r, $p, $what) if !$ok;
	ok(1, $what) if $ok;
}

# the copy on node n, as a search and a _mget there read it (this node's
# copy first): its ids, and each id's _seq_no, _primary_term and _version
sub copy_of { return SeCluster::copy_of($node{ $_[0] }, 'rec'); }

sub pins_left
{
	my $dir = $node{$pnode}->data_dir . '/search_engine/indices';
	my @pins = glob("$dir/*/*/recovery/*");
	return scalar @pins;
}

# ---- file-based recovery: number_of_replicas 1
my $t0 = time;
is((req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":1}}'))[0], 200,
	'number_of_replicas set to 1');
ok($cluster->wait_for('the replica started (green)', 60, \&green), 'the replica recovered: health green');
my $rows = recovery_rows();
my ($row) = grep { $_->{target_node} eq $rnode } @$rows;
ok($row, "_cat/recovery has the recovery to $rnode") or diag(explain $rows);
is("$row->{type} $row->{stage} $row->{source_node}", "peer done $pnode",
	'a peer recovery from the primary, done');
ok($row->{files_total} >= 2 && $row->{files_recovered} == $row->{files_total} && $row->{files} == $row->{files_total},
	"every file of the commit copied the first time ($row->{files_recovered} of $row->{files_total})");
is($row->{bytes_percent}, '100.0%', 'all its bytes');
ok($row->{translog_ops_recovered} >= 51, "the translog's operations replayed ($row->{translog_ops_recovered})");
my $primary_copy = copy_of($pnode);
like($primary_copy, qr/^d1:0:1:1,d10:9:1:1,/, 'the primary answers with its documents');
unlike($primary_copy, qr/\bd7:/, 'the deleted one not among them');
copies_equal('the replica holds the same documents with the same _seq_no, _primary_term and _version');
is(pins_left(), 0, 'the source released its pins (recovery_finalize)');

# the view shows the same recovery, from either node
is($node{$rnode}->safe_psql('postgres',
	"SELECT stage || ' ' || type || ' ' || (bytes_recovered > 0) FROM search_engine.recovery WHERE index = 'rec' AND target_node = '$rnode'"),
	'done peer true', 'the recovery view lists it');

# ---- the replica's node restarts: it keeps the files it has
$node{$rnode}->stop('fast');
ok($cluster->wait_for('the replica unassigned', 30, sub {
	my ($st, $b) = req($pnode, 'GET', '/_cluster/health/rec');
	return $st == 200 && $b->{status} eq 'yellow';
}), 'the replica\'s node left: yellow');
ok(bulk(451, 460), 'ten more documents while it is gone');
$node{$rnode}->start;
ok($cluster->wait_for('the replica back (green)', 60, \&green), 'it came back and recovered: green');
($row) = grep { $_->{target_node} eq $rnode } @{ recovery_rows($pnode) };
ok($row && $row->{stage} eq 'done', 'a second recovery, done') or diag(explain $row);
ok($row->{files} == 0 && $row->{bytes_recovered} == 0,
	"no file copied again: $row->{files} files, $row->{bytes_recovered} bytes of $row->{bytes_total}");
# (operations-based with its retention lease: the ten it missed, more if
# its last commit was older than its global checkpoint's sync -- 245 has
# the details)
ok($row->{translog_ops_recovered} >= 10, "only operations ($row->{translog_ops_recovered})");
copies_equal('the copies are equal again, the new documents included');

# ---- a corrupted chunk fails the attempt, which is retried
is((req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":0}}'))[0], 200, 'replica removed');
ok($cluster->wait_for('one copy', 30, sub {
	my ($st, $b) = req('n1', 'GET', '/_cat/shards/rec?format=json');
	return $st == 200 && @$b == 1;
}), 'one copy left');
is((req('n1', 'POST', '/rec/_forcemerge?max_num_segments=1'))[0], 200, 'force-merged');
is((req('n1', 'POST', '/rec/_flush'))[0], 200, 'and flushed (a new commit to copy)');
my $flag = $node{$pnode}->data_dir . '/search_engine_corrupt_recovery_chunk';
open(my $fh, '>', $flag) or die $!;
close $fh;
is((req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":1}}'))[0], 200, 'replica added again');
ok($cluster->wait_for('green after a retry', 60, \&green), 'the replica recovered');
ok(!-e $flag, 'a chunk was corrupted on the way');
($row) = grep { $_->{target_node} eq $rnode } @{ recovery_rows() };
ok($row && $row->{stage} eq 'done' && $row->{attempts} >= 1,
	"done after $row->{attempts} failed attempt(s)") or diag(explain $row);
ok($node{$rnode}->log_contains('checksum failed \(hardware problem\?\)'),
	'the target refused the chunk on its checksum');
copies_equal('the copies are equal');
is(pins_left(), 0, 'no pins left behind');

# ---- throttling: indices.recovery.max_bytes_per_sec
is((req('n1', 'PUT', '/_cluster/settings',
	'{"persistent":{"indices.recovery.max_bytes_per_sec":"bogus"}}'))[0], 400,
	'a bad byte size is refused');
is((req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":0}}'))[0], 200, 'replica removed');
ok($cluster->wait_for('one copy', 30, sub {
	my ($st, $b) = req('n1', 'GET', '/_cat/shards/rec?format=json');
	return $st == 200 && @$b == 1;
}), 'one copy left');
my $size = $node{$rnode}->safe_psql('postgres',
	"SELECT bytes_total FROM search_engine.recovery WHERE index = 'rec' AND target_node = '$rnode'");
my $rate = int($size / 3);	# about three seconds
is((req('n1', 'PUT', '/_cluster/settings',
	qq({"persistent":{"indices.recovery.max_bytes_per_sec":"${rate}b"}})))[0], 200,
	"max_bytes_per_sec set to ${rate}b (the shard has $size bytes)");
is((req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":1}}'))[0], 200, 'replica added again');
# writes while the replica recovers: the primary's own, then replicated to
# the tracked target, and the catch-up from its translog -- both ways, once
my $during = 0;
for my $k (0 .. 9)
{
	$during++ if bulk(500 + $k * 5, 504 + $k * 5);
	usleep(200_000);
}
is($during, 10, 'ten bulks acknowledged while the replica recovered');
ok($cluster->wait_for('green (throttled)', 60, \&green), 'the throttled replica recovered');
copies_equal('the copies are equal, the writes during the recovery included');
like(copy_of($rnode), qr/d549:/, 'the last of them among them');
($row) = grep { $_->{target_node} eq $rnode } @{ recovery_rows() };
my ($ms) = $node{$rnode}->safe_psql('postgres',
	"SELECT time || ' ' || throttle_time FROM search_engine.recovery WHERE index = 'rec' AND target_node = '$rnode'");
my ($took, $throttled) = split / /, $ms;
ok($took >= 2000 && $throttled >= 1000,
	"the copy took ${took} ms, ${throttled} ms of it throttled (about 3 s expected)");
is((req('n1', 'PUT', '/_cluster/settings',
	'{"persistent":{"indices.recovery.max_bytes_per_sec":null}}'))[0], 200, 'throttle reset');

# ---- a primary outlives many copies: the entries of removed copies leave
# its replication table (8 entries), so later copies are still tracked and
# recover (before, the ninth recovery failed: no room to track it)
my $cycled = 0;
for my $round (1 .. 9)
{
	req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":0}}');
	last unless $cluster->wait_for("one copy ($round)", 30, sub {
		my ($st, $b) = req('n1', 'GET', '/_cat/shards/rec?format=json');
		return $st == 200 && @$b == 1;
	});
	usleep(1_500_000);			# the primary's table is pruned once a second
	req('n1', 'PUT', '/rec/_settings', '{"index":{"number_of_replicas":1}}');
	last unless $cluster->wait_for("green ($round)", 60, \&green);
	$cycled++;
}
is($cycled, 9, 'nine more copies came and went, each recovered');
ok(bulk(600, 609), 'a bulk after them is acknowledged');
copies_equal('and the last copy equals the primary');

$cluster->teardown;
done_testing();
