# Index stats across nodes and retention lease sync (issue 16).  GET
# /_stats?level=shards gathers every copy from the node holding it (any
# node answers the same): routing, docs, seq_no and retention_leases.  The
# primary sends its retention leases to its replicas (ES RetentionLease-
# SyncAction and its background sync): the replica shows the same set
# (primary_term, version, leases) and persists it.  So when the primary's
# node dies, the promoted copy starts with the old primary's lease (term +
# 1), and the old primary's return replays operations instead of copying
# files.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap275');
my %node;
# two data nodes (in racks r1 and r2) and a master-eligible node holding no data
my %rack = (n1 => 'r1', n2 => 'r2', n3 => 'r3');
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5, roles => $n eq 'n3' ? 'master' : 'data',
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n"
		  . "search_engine.node_attributes = 'rack:$rack{$n}'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
	  && SeCluster::master_of($node{n2}) eq $m;
}), 'three nodes agree on a master');

my ($status, $body) = req('n1', 'PUT', '/st',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,"refresh_interval":"1s",'
	  . '"unassigned.node_left.delayed_timeout":"0"},'
	  . '"mappings":{"properties":{"n":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub health
{
	my ($n) = @_;
	my ($st, $b) = req($n // 'n1', 'GET', '/_cluster/health/st');
	return $st == 200 ? $b->{status} : "status $st";
}

sub bulk
{
	my ($n, $from, $to) = @_;
	my $nd = join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_}\n) } $from .. $to);
	my ($st, $b) = req($n, 'POST', '/st/_bulk', $nd);
	return $st == 200 && !$b->{errors};
}

ok($cluster->wait_for('green', 60, sub { health() eq 'green' }), 'both copies started');
my ($st, $shards) = req('n1', 'GET', '/_cat/shards/st?format=json&h=prirep,node');
my ($pnode) = map { $_->{node} } grep { $_->{prirep} eq 'p' } @$shards;
my ($rnode) = grep { $_ ne $pnode } qw(n1 n2);
ok($pnode && $rnode, "primary on $pnode, replica on $rnode");
ok(bulk($pnode, 1, 200), 'indexed 200 documents (replicated)');

# the copies of shard 0 as node $n reports them: { node => copy }
sub copies
{
	my ($n) = @_;
	my ($st, $b) = req($n, 'GET', '/st/_stats?level=shards');
	return {} if $st != 200;
	return { map { $_->{routing}{node} => $_ } @{ $b->{indices}{st}{shards}{0} // [] } };
}

ok($cluster->wait_for('every copy has the documents', 30, sub {
	my $c = copies('n3');
	return keys(%$c) == 2 && !grep { $_->{docs}{count} != 200 || $_->{seq_no}{global_checkpoint} != 199 } values %$c;
}), 'both copies report 200 documents and global checkpoint 199') or diag(explain copies('n3'));
for my $n (qw(n1 n2 n3))
{
	($st, $body) = req($n, 'GET', '/st/_stats?level=shards');
	is_deeply([ $st, $body->{_shards} ], [ 200, { total => 2, successful => 2, failed => 0 } ],
		"$n: _shards counts both copies") or diag(explain $body->{_shards});
	is($body->{_all}{total}{docs}{count}, 400, "$n: total counts each copy");
	is($body->{_all}{primaries}{docs}{count}, 200, "$n: primaries count the primary");
	my %c = map { $_->{routing}{node} => $_ } @{ $body->{indices}{st}{shards}{0} };
	ok($c{$pnode}{routing}{primary} && !$c{$rnode}{routing}{primary}
		  && $c{$rnode}{routing}{state} eq 'STARTED', "$n: the routing of each copy")
	  or diag(explain \%c);
	is("$c{$pnode}{seq_no}{max_seq_no} $c{$rnode}{seq_no}{max_seq_no}", '199 199',
		"$n: seq_no of each copy");
}
ok(copies('n1')->{$rnode}{indexing}{index_total} == 200, 'the replica counts the operations it applied');

# ---- preference _only_nodes with node attributes (ES's attr:value node specs)
for my $spec ("rack:$rack{$rnode}", 'rack:r*', "ra*:$rack{$pnode}")
{
	($st, $body) = req('n3', 'GET', "/st/_search?size=0&preference=_only_nodes:$spec");
	is("$st $body->{hits}{total}{value}", '200 200', "a search with _only_nodes:$spec");
	($st, $body) = req('n3', 'GET', "/st/_doc/d7?preference=_only_nodes:$spec");
	is($st, 200, "a get with _only_nodes:$spec");
}
($st, $body) = req('n3', 'GET', '/st/_search?size=0&preference=_only_nodes:rack:r3');
is("$st $body->{error}{type}", '400 illegal_argument_exception',
	'_only_nodes:rack:r3 (a node without a copy): no data nodes found') or diag(explain $body);

# ---- the primary's leases reach the replica
sub lease_ids { return join(',', sort map { $_->{id} } @{ $_[0]{retention_leases}{leases} // [] }); }
# a set without its timestamps (renewed every second, sent on a change or every 30 s)
sub lease_set
{
	my $l = $_[0]{retention_leases} // {};
	return join(' ', $l->{primary_term} // '', $l->{version} // '',
		sort map { "$_->{id}:$_->{retaining_seq_no}:$_->{source}" } @{ $l->{leases} // [] });
}
my $both = join(',', sort("peer_recovery/$pnode", "peer_recovery/$rnode"));
my $c;
ok($cluster->wait_for('the replica has the primary\'s leases', 60, sub {
	$c = copies($rnode);
	return $c->{$pnode} && $c->{$rnode} && lease_ids($c->{$pnode}) eq $both
	  && lease_set($c->{$rnode}) eq lease_set($c->{$pnode});
}), 'the replica shows the primary\'s retention leases (same primary_term, version, leases)')
  or diag(explain $c);
is($c->{$rnode}{retention_leases}{primary_term}, 1, 'of primary term 1');
my ($plr) = map { $_->{retaining_seq_no} } grep { $_->{id} eq "peer_recovery/$pnode" }
  @{ $c->{$rnode}{retention_leases}{leases} };
ok($plr >= 1 && $plr <= 200, "the lease of $pnode retains from $plr");

my $uuid = $node{$rnode}->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = 'st'");
my $file = $node{$rnode}->data_dir . "/search_engine/indices/$uuid/0/retention_leases";
ok(-f $file, 'the replica persisted them');
my $json = do { local $/; open(my $fh, '<', $file) or die; <$fh> };
is(join(',', sort map { $_->{id} } @{ decode_json($json)->{leases} }), $both, 'with both leases');

# ---- the primary's node dies: the promoted copy keeps the old primary's lease
$node{$pnode}->stop('immediate');
ok($cluster->wait_for('the replica is promoted', 60, sub {
	my $x = copies($rnode)->{$rnode};
	return $x && $x->{routing}{primary};
}), "$rnode holds the primary");
ok(bulk($rnode, 201, 260), 'written on the new primary');
ok($cluster->wait_for('the new primary\'s leases', 30, sub {
	$c = copies($rnode)->{$rnode};
	return $c && $c->{retention_leases}{primary_term} == 2
	  && grep { $_->{id} eq "peer_recovery/$pnode" } @{ $c->{retention_leases}{leases} };
}), "the promoted copy (term 2) still retains for $pnode") or diag(explain $c);

# ---- the old primary returns: operations-based, thanks to that lease
$node{$pnode}->start;
ok($cluster->wait_for('green again', 90, sub { health($rnode) eq 'green' }), "$pnode came back: green");
($st, $body) = req($rnode, 'GET', '/_cat/recovery/st?format=json&h=*');
my ($row) = sort { $b->{start_time_millis} <=> $a->{start_time_millis} }
  grep { $_->{target_node} eq $pnode } @{ $st == 200 ? $body : [] };
ok($row && $row->{stage} eq 'done', 'a peer recovery, done') or diag(explain $body);
is("$row->{files_recovered} $row->{bytes_recovered}", '0 0b',
	'operations-based: no file copied') or diag(explain $row);
ok($cluster->wait_for('the copies agree', 30, sub {
	SeCluster::copy_of($node{$pnode}, 'st') eq SeCluster::copy_of($node{$rnode}, 'st');
}), 'the copies are equal');

$cluster->teardown;
done_testing();
