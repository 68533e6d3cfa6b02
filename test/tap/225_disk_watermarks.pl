# Disk watermarks on a real full disk (issue 15).  Node n1's data
# directory is on a small tmpfs (SE_TMPFS_DIR, mounted by test/run_all.sh
# as root; without it the test skips), n2's on the ordinary disk.  A
# filler file takes n1's disk past each watermark with the default
# settings (low 85%, high 90%, flood stage 95%), and the master reacts to
# the disk figures n1 publishes in its membership key:
#   - above the low watermark no new copy goes to n1;
#   - above the high watermark the explain of n1's copy says it may not
#     remain, and a copy that may live elsewhere moves off n1 (a
#     relocation: peer recovery + primary handoff), a closed index's too;
#   - above the flood stage the master sets
#     index.blocks.read_only_allow_delete on n1's index and writes get
#     429 cluster_block_exception, reads go on;
#   - once the filler is gone the block is lifted and writes are accepted,
#     with every acknowledged document still there.
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

plan skip_all => 'SE_TMPFS_DIR is not set (test/run_all.sh mounts it as root)'
  unless $ENV{SE_TMPFS_DIR} && -d $ENV{SE_TMPFS_DIR} && -w $ENV{SE_TMPFS_DIR};
my $fs = $ENV{SE_TMPFS_DIR};
my $filler = "$fs/filler225";
my $datadir = "$fs/n1-225";
system("rm -rf '$datadir' '$filler'");

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap225');
my %node;
for my $n (qw(n1 n2))
{
	$node{$n} = $cluster->new_node($n, ttl => 5,
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n"
		  . ($n eq 'n1' ? "search_engine.data_directory = '$datadir'\n" : ''));
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req { my ($n, @call) = @_; return SeCluster::request($node{$n}, @call); }

sub df
{
	my ($col) = @_;
	my $out = `df -B1 --output=$col '$fs' | tail -1`;
	$out =~ s/\s+//g;
	return $out;
}

# fill the tmpfs up to a used fraction
sub fill_to
{
	my ($fraction) = @_;
	my $size = df('size');
	my $want = int($size * $fraction) - df('used');
	my $kb = int($want / 1024);
	system("dd if=/dev/zero of='$filler' bs=1K count=$kb status=none oflag=append conv=notrunc") if $kb > 0;
	return df('used') / $size;
}

sub placed { return SeCluster::primaries($node{n2}, $_[0]); }

# the disk n1 published, as the master sees it (percent used)
sub n1_disk_percent
{
	my ($status, $body) = req('n2', 'GET', '/_cat/allocation?format=json&h=node,disk.percent');
	return -1 unless $status == 200 && ref $body eq 'ARRAY';
	my ($row) = grep { $_->{node} eq 'n1' } @$body;
	return defined $row && defined $row->{'disk.percent'} ? $row->{'disk.percent'} : -1;
}

ok($cluster->wait_for('two members', 30, sub {
	SeCluster::master_of($node{n2}) ne '' && keys(%{ SeCluster::nodes_of($node{n2}) }) == 2;
}), 'the cluster formed');

my ($status, $body) = req('n2', 'PUT', '/full',
	'{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.require._name": "n1"}}');
is($status, 200, 'an index on n1, the node with the small disk');
ok($cluster->wait_for('placed', 20, sub { placed('full') eq 'n1:STARTED' }), 'its shard started on n1');
my $acked = 0;
for my $i (1 .. 20)
{
	($status) = req('n2', 'PUT', "/full/_doc/$i", '{"n": ' . $i . '}');
	$acked++ if $status == 201;
}
is($acked, 20, 'twenty documents acknowledged');

# ---- past the low and high watermarks (default 85% / 90%)
my $used = fill_to(0.92);
cmp_ok($used, '>', 0.90, sprintf('n1 disk filled to %.1f%%', 100 * $used));
ok($cluster->wait_for('n1 above high', 40, sub { n1_disk_percent() > 90 }),
	'n1 publishes its disk usage and the master sees it above the high watermark');
($status) = req('n2', 'PUT', '/fresh', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}');
is($status, 200, 'a new index');
ok($cluster->wait_for('fresh placed', 20, sub { placed('fresh') eq 'n2:STARTED n2:STARTED' }),
	'above the low watermark no new copy goes to n1');
($status, $body) = req('n2', 'GET', '/_cluster/allocation/explain',
	'{"index": "full", "shard": 0, "primary": true}');
is("$status $body->{current_node}{name} $body->{can_remain_on_current_node}", '200 n1 no',
	'above the high watermark the copy on n1 may not remain there');
ok(grep({ $_->{decider} eq 'disk_threshold' && $_->{decision} eq 'NO' } @{ $body->{can_remain_decisions} // [] }),
	'the disk_threshold decider says why');
($status, $body) = req('n2', 'GET', '/full/_settings');
ok(!defined $body->{full}{settings}{index}{blocks}, 'below the flood stage writes are not blocked');

# ---- past the flood stage (95%)
$used = fill_to(0.97);
cmp_ok($used, '>', 0.95, sprintf('n1 disk filled to %.1f%%', 100 * $used));
ok($cluster->wait_for('flood block', 40, sub {
	my ($s, $b) = req('n2', 'GET', '/full/_settings');
	($b->{full}{settings}{index}{blocks}{read_only_allow_delete} // '') eq 'true';
}), 'above the flood stage the master sets index.blocks.read_only_allow_delete on n1\'s index');
($status, $body) = req('n2', 'PUT', '/full/_doc/late', '{"n": 0}');
is("$status $body->{error}{type}", '429 cluster_block_exception', 'a write through n2 gets 429 cluster_block_exception');
($status, $body) = req('n1', 'POST', '/_bulk', qq({"index": {"_index": "full", "_id": "b1"}}\n{"n": 1}\n));
is("$status $body->{errors} $body->{items}[0]{index}{status}", '200 1 429', 'a bulk item through n1 too');
($status, $body) = req('n2', 'GET', '/full/_doc/7');
is("$status $body->{_source}{n}", '200 7', 'reads go on');
($status, $body) = req('n2', 'GET', '/fresh/_settings');
ok(!defined $body->{fresh}{settings}{index}{blocks}, 'an index with no copy on n1 is not blocked');
($status) = req('n2', 'PUT', '/fresh/_doc/1', '{"n": 1}');
is($status, 201, 'and takes writes');

# ---- space freed: the block goes, writes come back
unlink $filler;
ok($cluster->wait_for('block lifted', 40, sub {
	my ($s) = req('n2', 'PUT', '/full/_doc/late', '{"n": 0}');
	$s == 201;
}), 'once n1 is below the high watermark again the block is lifted and writes are accepted');
($status, $body) = req('n2', 'GET', '/full/_settings');
ok(!defined $body->{full}{settings}{index}{blocks}{read_only_allow_delete}, 'the block is gone from the settings');
req('n2', 'POST', '/full/_refresh');
($status, $body) = req('n2', 'GET', '/full/_count');
is($body->{count}, 21, 'every acknowledged document is there');

# ---- past the high watermark copies move away (a relocation, not a block)
ok($cluster->wait_for('n1 below low', 40, sub { my $p = n1_disk_percent(); $p >= 0 && $p < 85 }),
	'the master sees n1 below the low watermark again');
# not a rebalance: a copy that may not remain moves even with rebalancing off
($status) = req('n2', 'PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.rebalance.enable": "none"}}');
is($status, 200, 'cluster.routing.rebalance.enable: none');
($status, $body) = req('n2', 'PUT', '/away',
	'{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.include._name": "n1"}}');
is($status, 200, 'an index placed on n1');
ok($cluster->wait_for('away placed', 20, sub { placed('away') eq 'n1:STARTED' }), 'its shard started on n1');
$acked = 0;
for my $i (1 .. 20)
{
	($status) = req('n2', 'PUT', "/away/_doc/$i", '{"n": ' . $i . '}');
	$acked++ if $status == 201;
}
is($acked, 20, 'twenty documents in it');
($status) = req('n2', 'PUT', '/away/_settings', '{"index.routing.allocation.include._name": null}');
is($status, 200, 'its filter removed: it may live anywhere');
sleep 2;
is(placed('away'), 'n1:STARTED', 'it stays on n1 while the disk is fine');
my ($away_uuid) = map { $_->{away}{settings}{index}{uuid} } (req('n2', 'GET', '/away/_settings'))[1];
# a closed index's copy moves too (its files are copied, it is not opened)
($status) = req('n2', 'PUT', '/shut', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.routing.allocation.include._name": "n1"}}');
ok($cluster->wait_for('shut placed', 20, sub { placed('shut') eq 'n1:STARTED' }), 'another index on n1');
($status, $body) = req('n2', 'POST', '/shut/_bulk?refresh=true',
	join('', map { qq({"index": {"_id": "$_"}}\n{"n": $_}\n) } 1 .. 10));
ok($status == 200 && !$body->{errors}, 'ten documents in it');
req('n2', 'PUT', '/shut/_settings', '{"index.routing.allocation.include._name": null}');
($status) = req('n2', 'POST', '/shut/_close');
is($status, 200, 'and closed');
my ($shut_uuid) = map { $_->{shut}{settings}{index}{uuid} } (req('n2', 'GET', '/shut/_settings'))[1];
$used = fill_to(0.92);
cmp_ok($used, '>', 0.90, sprintf('n1 disk filled to %.1f%% (above high, below flood)', 100 * $used));
ok($cluster->wait_for('away moved', 60, sub { placed('away') eq 'n2:STARTED' }),
	'above the high watermark the copy moved to n2');
is(placed('full'), 'n1:STARTED', 'the index required on n1 stays there');
ok($cluster->wait_for('files gone', 20, sub { !-d "$datadir/indices/$away_uuid/0" }),
	"n1 no longer holds the moved shard's files");
req('n2', 'POST', '/away/_refresh');
($status, $body) = req('n2', 'GET', '/away/_count');
is($body->{count}, 20, 'every document moved with it');
ok($cluster->wait_for('shut moved', 60, sub { placed('shut') eq 'n2:STARTED' }),
	'the closed index\'s copy moved to n2 as well');
ok($cluster->wait_for('closed files gone', 20, sub { !-d "$datadir/indices/$shut_uuid/0" }),
	"n1 no longer holds the closed shard's files");
unlink $filler;
($status) = req('n2', 'POST', '/shut/_open');
ok($cluster->wait_for('shut open', 30, sub {
	my ($s, $h) = req('n2', 'GET', '/_cluster/health/shut');
	$s == 200 && ($h->{status} // '') eq 'green';
}), 'reopened on n2');
($status, $body) = req('n2', 'GET', '/shut/_count');
is($body->{count}, 10, 'with its ten documents');

$cluster->teardown;
system("rm -rf '$datadir' '$filler'");
done_testing();
