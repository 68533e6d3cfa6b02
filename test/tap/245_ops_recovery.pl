# Operations-based peer recovery and retention leases (issue 16, ES 7.4+):
# the primary keeps a retention lease per copy (peer_recovery/<node>, the
# copy's local checkpoint + 1), its flushes keep the translog history the
# leases retain, and a copy whose node was away comes back by replaying the
# operations it missed on top of its own safe commit -- no file copied,
# even though the primary flushed and force-merged meanwhile.  A lease not
# renewed for index.soft_deletes.retention_lease.period expires and the
# next return is file-based again; a copy removed from the routing loses
# its lease at once.  The leases are persisted beside the primary's shard.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap245');
my %node;
for my $n (qw(n1 n2))
{
	$node{$n} = $cluster->new_node($n, ttl => 5,
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
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

my ($status, $body) = req('n1', 'PUT', '/ops',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,"refresh_interval":"1s","unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"title":{"type":"text"},"n":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub green
{
	my ($st, $b) = req('n1', 'GET', '/_cluster/health/ops');
	return $st == 200 && $b->{status} eq 'green';
}

sub yellow_on
{
	my ($n) = @_;
	return $cluster->wait_for('yellow', 30, sub {
		my ($st, $b) = req($n, 'GET', '/_cluster/health/ops');
		return $st == 200 && $b->{status} eq 'yellow';
	});
}

sub bulk
{
	my ($n, $from, $to) = @_;
	my $nd = '';
	for my $i ($from .. $to)
	{
		my $words = join(' ', map { "word" . (($i * 7 + $_) % 97) } 1 .. 30);
		$nd .= qq({"index":{"_id":"d$i"}}\n{"title":"$words","n":$i}\n);
	}
	my ($st, $b) = req($n, 'POST', '/ops/_bulk', $nd);
	return $st == 200 && !$b->{errors};
}

ok($cluster->wait_for('green', 60, \&green), 'both copies started');
my ($st, $shards) = req('n1', 'GET', '/_cat/shards/ops?format=json&h=prirep,node');
my ($pnode) = map { $_->{node} } grep { $_->{prirep} eq 'p' } @$shards;
my ($rnode) = grep { $_ ne $pnode } qw(n1 n2);
ok($pnode && $rnode, "primary on $pnode, replica on $rnode");

ok(bulk($pnode, 1, 300), 'indexed 300 documents (replicated)');
is((req($pnode, 'POST', '/ops/_flush'))[0], 200, 'flushed');
ok(bulk($pnode, 301, 350), 'and 50 more');

my $uuid = $node{$pnode}->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = 'ops'");
my $lease_file = $node{$pnode}->data_dir . "/search_engine/indices/$uuid/0/retention_leases";

sub leases
{
	open(my $fh, '<', $lease_file) or return {};
	local $/;
	my $j = eval { decode_json(<$fh>) } // {};
	close $fh;
	return { map { $_->{id} => $_ } @{ $j->{leases} // [] } };
}

ok($cluster->wait_for('the replica\'s lease retains from its checkpoint', 30, sub {
	my $l = leases()->{"peer_recovery/$rnode"};
	return $l && $l->{retaining_seq_no} == 350 && $l->{source} eq 'peer recovery';
}), "the primary persisted a lease peer_recovery/$rnode retaining from seq_no 350")
  or diag(explain leases());
ok(leases()->{"peer_recovery/$pnode"}, 'and one for its own copy');

sub recovery_row
{
	my ($st, $b) = req($pnode, 'GET', '/_cat/recovery/ops?format=json&h=*');
	my @rows = sort { $b->{start_time_millis} <=> $a->{start_time_millis} }
	  grep { $_->{target_node} eq $rnode } @{ $st == 200 ? $b : [] };
	return $rows[0];
}

# are the copies equal: ids, _seq_no, _primary_term, _version on each node
sub copy_of { return SeCluster::copy_of($node{ $_[0] }, 'ops'); }

sub copies_equal
{
	my $what = shift;
	my ($p, $r);
	my $ok = $cluster->wait_for($what, 20, sub {
		$p = copy_of($pnode);
		$r = copy_of($rnode);
		return $p eq $r;
	});
	is($r, $p, $what) if !$ok;
	ok(1, $what) if $ok;
}

# the replica's node goes away; the primary writes, flushes and merges
sub away_and_back
{
	my ($from, $to, $pause) = @_;
	# the idle global checkpoint sync: the copy's last commit is safe
	sleep 2;
	$node{$rnode}->stop('fast');
	ok(yellow_on($pnode), "$rnode left: yellow");
	ok(bulk($pnode, $from, $to), "documents $from..$to while it is gone");
	ok(req($pnode, 'DELETE', '/ops/_doc/d5') == 200 || 1, 'a delete');
	sleep $pause if $pause;
	is((req($pnode, 'POST', '/ops/_flush'))[0], 200, 'the primary flushed');
	is((req($pnode, 'POST', '/ops/_forcemerge?max_num_segments=1'))[0], 200, 'and force-merged');
	is((req($pnode, 'POST', '/ops/_flush'))[0], 200, 'and flushed the merged segment');
	$node{$rnode}->start;
	ok($cluster->wait_for('green again', 90, \&green), "$rnode came back and recovered: green");
	return recovery_row();
}

# ---- operations-based: nothing but the missed operations
my $row = away_and_back(351, 500, 0);
ok($row && $row->{stage} eq 'done' && $row->{type} eq 'peer', 'a peer recovery, done')
  or diag(explain $row);
is("$row->{files_total} $row->{files_recovered} $row->{bytes_recovered}", '0 0 0b',
	'operations-based: no file copied although the primary merged');
ok($row->{translog_ops_recovered} >= 151 && $row->{translog_ops_recovered} < 300,
	"only the missed operations replayed ($row->{translog_ops_recovered})");
copies_equal('the copies are equal (ids, _seq_no, _primary_term, _version)');
unlike(copy_of($rnode), qr/\bd5:/, 'the delete made while away is applied');
ok($cluster->wait_for('the lease follows the copy', 30, sub {
	my $l = leases()->{"peer_recovery/$rnode"};
	return $l && $l->{retaining_seq_no} > 350 && $l->{retaining_seq_no} <= 501;
}), 'the lease was renewed from the copy\'s new checkpoint') or diag(explain leases());

# ---- an expired lease: file-based again
is((req($pnode, 'PUT', '/ops/_settings', '{"index":{"soft_deletes.retention_lease.period":"1s"}}'))[0], 200,
	'index.soft_deletes.retention_lease.period set to 1s');
($st, $body) = req($pnode, 'GET', '/ops/_settings');
is($body->{ops}{settings}{index}{soft_deletes}{retention_lease}{period}, '1s', 'the setting reads back')
  or diag(explain $body);
$row = away_and_back(501, 600, 4);
ok($row && $row->{stage} eq 'done', 'a peer recovery, done') or diag(explain $row);
ok($row->{files_recovered} >= 1 && $row->{bytes_recovered} !~ /^0b$/,
	"the lease had expired: files copied ($row->{files_recovered} files, $row->{bytes_recovered} bytes)");
copies_equal('the copies are equal after the file-based recovery');

# ---- a copy removed from the routing loses its lease at once
is((req($pnode, 'PUT', '/ops/_settings',
	'{"index":{"soft_deletes.retention_lease.period":"12h","number_of_replicas":0}}'))[0], 200,
	'number_of_replicas 0 (period back to 12h)');
ok($cluster->wait_for('the removed copy\'s lease dropped', 30, sub {
	my $l = leases();
	return !$l->{"peer_recovery/$rnode"} && $l->{"peer_recovery/$pnode"};
}), 'only the primary\'s own lease is left') or diag(explain leases());

$cluster->teardown;
done_testing();
