# Closed indices move and keep their replicas (issue 15), as Elasticsearch
# 7.2+ does: a closed shard's files never change, so a recovery copies them
# from the primary's directory without opening the shard, and the copy is
# STARTED (closed) on its new node while the old one's files go.  On three
# data nodes over a three-member etcd cluster:
#  - a closed index with documents is moved by POST /_cluster/reroute move,
#    then by a cluster exclude filter; its directory leaves the old nodes;
#    reopened while a third move is under way, the move is cancelled (the
#    target's partial files go) and it opens where it is, with every
#    document, no peer recovery run to reopen it;
#  - a closed index's missing replica is built while it is closed (SQL
#    allocation_explain, cluster_reroute and the allocation view on the way);
#  - a closed index with one replica survives its primary's node leaving for
#    good: the replica is promoted, the other copy waits out
#    index.unassigned.node_left.delayed_timeout (explain: allocation_delayed)
#    until an allocate_replica command places it, a new replica is built from
#    the promoted one (closed), and the index reopens with every document;
#  - a node that joins receives a closed index's copies by rebalancing.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap226');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5,
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}
my @up = qw(n1 n2 n3);

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('three nodes in the cluster', 60, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3;
}), 'three data nodes agree on a master');
is((req('n1', 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.routing.rebalance.enable":"none"}}'))[0], 200, 'rebalancing off: the moves are the tests\'');

# shard 0 of index as the master routed it, seen from node n:
# { p => node, r => node (STARTED copies), relocating => 0/1, states => "..." }
sub copies
{
	my ($index, $n) = @_;
	my ($st, $b) = req($n // $up[0], 'GET', '/_cluster/state/routing_table,nodes');
	my %names = map { $_ => $b->{nodes}{$_}{name} } keys %{ $b->{nodes} // {} };
	my $sh = $b->{routing_table}{indices}{$index}{shards}{0} // [];
	my %c = (relocating => 0, states => '');
	for my $c (@$sh)
	{
		my $node = defined $c->{node} ? ($names{ $c->{node} } // $c->{node}) : '-';
		$c{states} .= ($c->{primary} ? 'p' : 'r') . ":$node:$c->{state} ";
		$c{relocating}++ if $c->{state} eq 'RELOCATING';
		$c{ $c->{primary} ? 'p' : 'r' } = $node if $c->{state} eq 'STARTED';
	}
	return \%c;
}

sub uuid_of
{
	my ($index) = @_;
	my ($st, $b) = req($up[0], 'GET', "/$index/_settings");
	return $b->{$index}{settings}{index}{uuid};
}

sub shard_dir_on
{
	my ($n, $uuid) = @_;
	return -d $node{$n}->data_dir . "/search_engine/indices/$uuid/0/index";
}

sub fill
{
	my ($index, $n) = @_;
	my $nd = join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_,"t":"doc $_"}\n) } 1 .. $n);
	my ($st, $b) = req($up[0], 'POST', "/$index/_bulk?refresh=true", $nd);
	ok($st == 200 && !$b->{errors}, "$n documents in $index") or diag(explain $b);
}

# the peer recoveries this cluster remembers of index
sub recoveries
{
	my ($index) = @_;
	my ($st, $b) = req($up[0], 'GET', "/_cat/recovery/$index?format=json");
	return ref $b eq 'ARRAY' ? scalar(grep { ($_->{stage} // '') eq 'done' } @$b) : -1;
}

my ($status, $body);

# ---- a closed index moved by the reroute command, then by a filter
($status, $body) = req('n1', 'PUT', '/cz',
	'{"settings":{"number_of_shards":1,"number_of_replicas":0}}');
is($status, 200, 'an index of one shard, no replica') or diag(explain $body);
ok($cluster->wait_for('cz started', 30, sub { copies('cz')->{p} }), 'cz started');
fill('cz', 50);
my $uuid = uuid_of('cz');
($status, $body) = req('n1', 'POST', '/cz/_close');
is($status, 200, 'cz closed') or diag(explain $body);
my $from = copies('cz')->{p};
my ($to) = grep { $_ ne $from } @up;
ok(shard_dir_on($from, $uuid), "its files are on $from");

($status, $body) = req('n1', 'POST', '/_cluster/reroute?dry_run=true&explain=true',
	qq({"commands":[{"move":{"index":"cz","shard":0,"from_node":"$from","to_node":"$to"}}]}));
is("$status " . ($body->{explanations}[0]{decisions}[0]{decision} // ''), '200 YES',
	'a dry run: a closed copy may be moved') or diag(explain $body);
# the SQL equivalents: allocation explain, a dry-run reroute, _cat/allocation
is($node{n1}->safe_psql('postgres',
	q{SELECT search_engine.allocation_explain('{"index":"cz","shard":0,"primary":true}')->>'current_state'}),
	'started', 'allocation_explain(): the closed copy is started');
is($node{n1}->safe_psql('postgres',
	qq{SELECT search_engine.cluster_reroute('{"commands":[{"move":{"index":"cz","shard":0,"from_node":"$from","to_node":"$to"}}]}', true, true)
	     #>> '{explanations,0,decisions,0,decision}'}),
	'YES', 'cluster_reroute(dry_run, explain): YES');
is($node{n1}->safe_psql('postgres', qq{SELECT shards FROM search_engine.allocation WHERE node = '$from'}),
	1, "the allocation view: one copy on $from");
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"cz","shard":0,"from_node":"$from","to_node":"$to"}}]}));
is($status, 200, "move of the closed copy from $from to $to accepted") or diag(explain $body);
my $c;
ok($cluster->wait_for("cz on $to", 60, sub {
	$c = copies('cz');
	return ($c->{p} // '') eq $to && !$c->{relocating};
}), "the closed copy moved to $to and is STARTED there") or diag(explain $c);
($status, $body) = req('n1', 'GET', '/_cluster/state/metadata');
is($body->{metadata}{indices}{cz}{state}, 'close', 'the index is still closed');
ok(shard_dir_on($to, $uuid), "its files are on $to");
ok($cluster->wait_for("the directory gone from $from", 20, sub { !shard_dir_on($from, $uuid) }),
	"$from no longer holds the shard's files");
is(recoveries('cz'), 1, '_cat/recovery shows the closed copy\'s recovery');
($status, $body) = req('n1', 'POST', '/cz/_search', '{"query":{"match_all":{}}}');
is($status, 400, 'a search of the moved closed index is still refused (index_closed_exception)');

# an exclude filter: the closed copy leaves the excluded node
my $excl = $to;
($status, $body) = req('n1', 'PUT', '/_cluster/settings',
	qq({"transient":{"cluster.routing.allocation.exclude._name":"$excl"}}));
is($status, 200, "cluster.routing.allocation.exclude._name = $excl") or diag(explain $body);
ok($cluster->wait_for("cz off $excl", 60, sub {
	$c = copies('cz');
	return ($c->{p} // $excl) ne $excl && !$c->{relocating};
}), "the closed copy left $excl for $c->{p}") or diag(explain $c);
my $final = $c->{p};
ok($cluster->wait_for("the directory gone from $excl", 20, sub { !shard_dir_on($excl, $uuid) }),
	"$excl no longer holds the shard's files");
req('n1', 'PUT', '/_cluster/settings', '{"transient":{"cluster.routing.allocation.exclude._name":null}}');

# reopened while a move of it is under way (held back by the throttle):
# the move is cancelled, the copy opens where it is, and the target's
# partial files go
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":"100b"}}'))[0], 200, 'recoveries throttled hard');
my ($t2) = grep { $_ ne $final } @up;
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"cz","shard":0,"from_node":"$final","to_node":"$t2"}}]}));
is($status, 200, "a move of the closed copy to $t2") or diag(explain $body);
my $target_dir = $node{$t2}->data_dir . "/search_engine/indices/$uuid/0";
ok($cluster->wait_for('relocating', 20, sub { copies('cz')->{relocating} == 1 && -d $target_dir }),
	"it is relocating, files arriving on $t2");

# reopened where it is now: every document, and no peer recovery to do it
my $before = recoveries('cz');
($status, $body) = req('n1', 'POST', '/cz/_open');
is($status, 200, 'cz reopened') or diag(explain $body);
ok($cluster->wait_for('cz open and started', 60, sub {
	my ($s, $h) = req('n1', 'GET', '/_cluster/health/cz');
	return $s == 200 && ($h->{status} // '') eq 'green';
}), 'green');
is(copies('cz')->{p}, $final, "it opened on $final, where it was moved to");
($status, $body) = req('n1', 'POST', '/cz/_count');
is($body->{count}, 50, 'with its 50 documents');
($status, $body) = req($final, 'POST', '/cz/_search', '{"query":{"match":{"t":"doc 17"}},"size":1}');
is($body->{hits}{hits}[0]{_source}{n} // '', 17, 'searchable, sources intact');
is(recoveries('cz'), $before, 'reopening copied nothing (no new peer recovery)');
ok($cluster->wait_for("the cancelled target's files gone from $t2", 30, sub { !-d $target_dir }),
	"the move's partial files on $t2 are gone");
ok($node{$t2}->log_contains(qr/removing the partial files of closed shard \[cz\]\[0\]/),
	'removed by the cancelled recovery worker');
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":null}}'))[0], 200, 'throttle lifted');

# ---- a closed index's replica: built while closed; the primary's node leaves for good
($status, $body) = req('n1', 'PUT', '/cr',
	'{"settings":{"number_of_shards":1,"number_of_replicas":0,'
	  . '"index.unassigned.node_left.delayed_timeout":"10m"}}');
is($status, 200, 'an index of one shard') or diag(explain $body);
ok($cluster->wait_for('cr started', 30, sub { copies('cr')->{p} }), 'cr started');
fill('cr', 30);
my $cuuid = uuid_of('cr');
($status, $body) = req('n1', 'POST', '/cr/_close');
is($status, 200, 'cr closed');
($status, $body) = req('n1', 'PUT', '/cr/_settings', '{"index":{"number_of_replicas":1}}');
is($status, 200, 'one replica asked for while closed') or diag(explain $body);
ok($cluster->wait_for('cr replica built', 60, sub {
	$c = copies('cr');
	return $c->{p} && $c->{r} && $c->{states} !~ /INITIALIZING|UNASSIGNED/;
}), "its replica was recovered while closed: $c->{states}") or diag(explain $c);
my $gone = $c->{p};
my $kept = $c->{r};
ok(shard_dir_on($kept, $cuuid), "the replica's files are on $kept");

@up = grep { $_ ne $gone } @up;
$node{$gone}->stop('immediate');
ok($cluster->wait_for("$gone removed", 90, sub {
	my $m = SeCluster::master_of($node{$up[0]});
	return $m ne '' && $m ne $gone && keys(%{ SeCluster::nodes_of($node{$up[0]}) }) == 2;
}), "$gone left the cluster for good");
ok($cluster->wait_for('replica promoted', 90, sub {
	$c = copies('cr');
	return ($c->{p} // '') eq $kept && !$c->{r} && $c->{states} =~ /r:-:UNASSIGNED/;
}), "the closed replica on $kept was promoted; the other copy waits unassigned") or diag(explain $c);
# index.unassigned.node_left.delayed_timeout (10m here) holds it back; the
# allocate_replica command does not wait (as ES's)
($status, $body) = req($up[0], 'GET', '/_cluster/allocation/explain', '{"index":"cr","shard":0,"primary":false}');
is($body->{can_allocate} // '', 'allocation_delayed', 'explain: allocation_delayed (delayed_timeout)')
  or diag(explain $body);
my ($other) = grep { $_ ne $kept } @up;
($status, $body) = req($up[0], 'POST', '/_cluster/reroute',
	qq({"commands":[{"allocate_replica":{"index":"cr","shard":0,"node":"$other"}}]}));
is($status, 200, "allocate_replica of the closed index's replica on $other") or diag(explain $body);
ok($cluster->wait_for('replica promoted, new replica built', 90, sub {
	$c = copies('cr');
	return ($c->{p} // '') eq $kept && ($c->{r} // '') ne '' && $c->{states} !~ /INITIALIZING|UNASSIGNED/;
}), "a new closed replica was built on " . ($c->{r} // '-'))
  or diag(explain $c);
is($c->{r}, $other, 'where the command put it');
($status, $body) = req($up[0], 'GET', '/_cluster/state/metadata');
is($body->{metadata}{indices}{cr}{primary_terms}{0}, 2, 'the promotion raised the primary term');

($status, $body) = req($up[0], 'POST', '/cr/_open');
is($status, 200, 'cr reopened') or diag(explain $body);
ok($cluster->wait_for('cr green', 90, sub {
	my ($s, $h) = req($up[0], 'GET', '/_cluster/health/cr');
	return $s == 200 && ($h->{status} // '') eq 'green';
}), 'green on the two nodes left');
($status, $body) = req($up[0], 'POST', '/cr/_count');
is($body->{count}, 30, 'with its 30 documents');
is(SeCluster::copy_of($node{$up[0]}, 'cr') =~ tr/,//, 29, "$up[0] reads 30 documents");
is(SeCluster::copy_of($node{$up[1]}, 'cr') =~ tr/,//, 29, "$up[1] reads 30 documents");

# ---- a node that joins receives closed copies by rebalancing
req($up[0], 'DELETE', '/cz');
req($up[0], 'DELETE', '/cr');
($status, $body) = req($up[0], 'PUT', '/cb', '{"settings":{"number_of_shards":6,"number_of_replicas":0}}');
is($status, 200, 'an index of six shards on the two nodes') or diag(explain $body);
ok($cluster->wait_for('cb started', 30, sub {
	my ($st, $h) = req($up[0], 'GET', '/_cluster/health/cb');
	return $st == 200 && ($h->{status} // '') eq 'green';
}), 'cb green');
my $nd = join('', map { qq({"index":{"_index":"cb","_id":"x$_"}}\n{"n":$_}\n) } 1 .. 60);
($status, $body) = req($up[0], 'POST', '/_bulk?refresh=true', $nd);
ok($status == 200 && !$body->{errors}, 'sixty documents');
($status, $body) = req($up[0], 'POST', '/cb/_close');
is($status, 200, 'cb closed');
$node{n4} = $cluster->new_node('n4', ttl => 5,
	extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
$node{n4}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
push @up, 'n4';
ok($cluster->wait_for('n4 joined', 60, sub { keys(%{ SeCluster::nodes_of($node{ $up[0] }) }) == 3 }),
	'n4 joined');
is((req($up[0], 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.routing.rebalance.enable":"all"}}'))[0], 200, 'rebalancing on');
my $on_n4;
ok($cluster->wait_for('closed copies on n4', 90, sub {
	my ($st, $b) = req($up[0], 'GET', '/_cluster/state/routing_table,nodes');
	my %names = map { $_ => $b->{nodes}{$_}{name} } keys %{ $b->{nodes} // {} };
	my @all = map { @$_ } values %{ $b->{routing_table}{indices}{cb}{shards} // {} };
	$on_n4 = grep { $_->{state} eq 'STARTED' && ($names{ $_->{node} // '' } // '') eq 'n4' } @all;
	return @all == 6 && $on_n4 >= 2 && !(grep { $_->{state} ne 'STARTED' } @all);
}), "the closed index's copies were rebalanced onto n4 ($on_n4 of 6)");
# ES 7.2+: health counts a closed index's copies as an open one's
($status, $body) = req($up[0], 'GET', '/_cluster/health/cb');
is_deeply([ $status, $body->{status}, $body->{active_primary_shards} ], [ 200, 'green', 6 ],
	'health of the closed index: green, its six copies active') or diag(explain $body);
my $cbuuid = uuid_of('cb');
ok(-d $node{n4}->data_dir . "/search_engine/indices/$cbuuid", 'their files are on n4');
($status, $body) = req($up[0], 'POST', '/cb/_open');
is($status, 200, 'cb reopened');
ok($cluster->wait_for('cb green', 60, sub {
	my ($st, $h) = req($up[0], 'GET', '/_cluster/health/cb');
	return $st == 200 && ($h->{status} // '') eq 'green';
}), 'green');
($status, $body) = req('n4', 'POST', '/cb/_count');
is($body->{count}, 60, 'with its 60 documents');

$cluster->teardown;
done_testing();
