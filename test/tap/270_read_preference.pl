# Reads' copy choice on a cluster (issue 16): two data nodes (n1, n2) and a
# dedicated master (n3, which holds no copy and coordinates), an index of 2
# shards x 1 replica (each shard on both data nodes).  ES's `preference`:
# _only_local reads this node's copies only (none on n3: the shards count
# in _shards.total and nowhere else), _shards:S|_only_local one copy of one
# shard (the Jepsen checker's per-copy read), _prefer_nodes / _only_nodes
# send the reads to the nodes named, a custom string always to the same
# copies; seq_no_primary_term on remote hits; adaptive replica selection
# (ES's default): after n2 was stopped (SIGSTOP) under a read, n3's reads
# go to n1 -- n2 gets fewer -- and n2 is tried again; with ARS off they go
# by hash.  Which node served a read is counted on the data nodes
# themselves: the calls of search_engine._transport in
# pg_stat_user_functions (a read of size 0 is one shard_query per node).
# Last, wait_for_active_shards on single-document writes with a replica
# that cannot be placed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use IPC::Run;
use JSON::PP;
use SeTest;
use SeCluster;

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap270');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5, roles => $n eq 'n3' ? 'master' : 'data',
		extra => "track_functions = 'all'\n");
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

# which node served a read is counted below in calls of
# search_engine._transport; the fault detection's pings (one a second per
# node) are such calls too, so they are slowed down for this test
my ($st, $b) = req('n3', 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.fault_detection.follower_check.interval":"1h",'
	  . '"cluster.fault_detection.leader_check.interval":"1h"}}');
is($st, 200, 'fault detection pings slowed (they would count as reads)') or diag(explain $b);

($st, $b) = req('n1', 'PUT', '/rp', '{"settings":{"number_of_shards":2,"number_of_replicas":1}}');
is($st, 200, 'an index of 2 shards x 1 replica') or diag(explain $b);
ok($cluster->wait_for('green', 60, sub {
	my ($s, $h) = req('n3', 'GET', '/_cluster/health/rp');
	return $s == 200 && $h->{status} eq 'green';
}), 'green: each shard on both data nodes');
my $nd = join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_}\n) } 1 .. 40);
($st, $b) = req('n1', 'POST', '/rp/_bulk?refresh=true', $nd);
ok($st == 200 && !$b->{errors}, '40 documents');

# ---- preference
sub search
{
	my ($n, $query, $body) = @_;
	my ($s, $r) = req($n, 'GET', "/rp/_search?$query", $body);
	return $r if $s == 200;
	return { status => $s, error => $r->{error} };
}
my $r = search('n1', 'preference=_only_local&size=0');
is_deeply([ $r->{_shards}{total}, $r->{_shards}{successful}, $r->{_shards}{failed}, $r->{hits}{total}{value} ],
	[ 2, 2, 0, 40 ], 'n1 _only_local: both shards, all documents');
$r = search('n3', 'preference=_only_local&size=0');
is_deeply([ $r->{_shards}{total}, $r->{_shards}{successful}, $r->{_shards}{failed}, $r->{hits}{total}{value} ],
	[ 2, 0, 0, 0 ], 'n3 (no copy) _only_local: 2 shards counted, none searched, none failed (ES)');
$r = search('n3', 'preference=_shards:1%7C_only_local&size=0');
is($r->{_shards}{total}, 1, 'n3 _shards:1|_only_local: one shard counted');
my ($c, $cr) = req('n3', 'GET', '/rp/_count?preference=_only_local');
is_deeply([ $c, $cr->{count}, $cr->{_shards}{total}, $cr->{_shards}{successful} ], [ 200, 0, 2, 0 ],
	'_count on n3 _only_local: the same');
$r = search('n3', 'preference=_only_nodes:nowhere');
is($r->{status}, 400, '_only_nodes matching no node: 400');
like($r->{error}{reason} // '', qr/no data nodes with criteria \[nowhere\] found for shard: \[rp\]\[\d\]/,
	"ES's reason");

# each data node's copy of a shard, read on its own: identical
my %copy;
for my $n (qw(n1 n2))
{
	for my $s (0, 1)
	{
		my $h = search($n, "preference=_shards:$s%7C_only_local&size=100", '{"query":{"match_all":{}},"seq_no_primary_term":true}');
		$copy{$n}{$s} = join(',', sort map { "$_->{_id}/$_->{_seq_no}/$_->{_primary_term}/$_->{_source}{n}" } @{ $h->{hits}{hits} // [] });
	}
}
ok($copy{n1}{0} ne '' && $copy{n1}{1} ne '', 'each shard read on n1 alone, with _seq_no and _primary_term');
is($copy{n2}{0}, $copy{n1}{0}, "shard 0: n2's copy equals n1's");
is($copy{n2}{1}, $copy{n1}{1}, "shard 1: n2's copy equals n1's");
# remote hits carry them too (n3 reads both shards elsewhere)
$r = search('n3', 'size=100&seq_no_primary_term=true');
is(scalar(grep { defined $_->{_seq_no} && defined $_->{_primary_term} } @{ $r->{hits}{hits} }), 40,
	'seq_no_primary_term on hits fetched from other nodes');
$r = search('n3', 'size=5');
ok(!grep({ defined $_->{_seq_no} } @{ $r->{hits}{hits} }), 'and not without it');

# which data node serves reads: the shard queries each ran (its own
# node-local search.query_total; other traffic between the nodes, such as
# checkpoint and lease syncs, does not count there)
sub served
{
	my %c;
	for my $n (qw(n1 n2))
	{
		my ($s, $st) = req($n, 'GET', '/_nodes/_local/stats/indices');
		my ($only) = values %{ $st->{nodes} // {} };
		$c{$n} = $only->{indices}{search}{query_total} // -1000;
	}
	return \%c;
}
# the counters settle once the serving backends are done
sub settled
{
	my $prev = served();
	for (1 .. 40)
	{
		usleep(250_000);
		my $now = served();
		return $now if $now->{n1} == $prev->{n1} && $now->{n2} == $prev->{n2};
		$prev = $now;
	}
	return $prev;
}
sub reads_from_n3
{
	my ($k, $query, $index) = @_;
	$index //= 'rp';
	my $before = settled();
	my $ok = 0;
	for (1 .. $k)
	{
		my ($s, $h) = req('n3', 'GET', "/$index/_search?size=0&$query");
		$ok++ if $s == 200 && ($h->{hits}{total}{value} // -1) == 40;
	}
	my $after = settled();
	return ($ok, $after->{n1} - $before->{n1}, $after->{n2} - $before->{n2});
}
my ($ok, $d1, $d2) = reads_from_n3(8, 'preference=_prefer_nodes:n2');
# 8 reads of 2 shards: 16 shard queries
ok($ok == 8 && $d2 == 16 && $d1 == 0, "_prefer_nodes:n2 from n3: every read on n2 ($d1 / $d2)");
($ok, $d1, $d2) = reads_from_n3(8, 'preference=_only_nodes:n1');
ok($ok == 8 && $d1 == 16 && $d2 == 0, "_only_nodes:n1 from n3: every read on n1 ($d1 / $d2)");
($ok, $d1, $d2) = reads_from_n3(8, 'preference=_prefer_nodes:n*');
is($ok, 8, '_prefer_nodes with a wildcard');
my ($e1, $e2);
($ok, $d1, $d2) = reads_from_n3(8, 'preference=my-session');
# the same copy of each shard every time: each node serves each of the
# 2 shards in none or all of the k reads (0, k or 2k shard queries)
sub all_or_none { my ($k, $x) = @_; return $x == 0 || $x == $k || $x == 2 * $k }
ok($ok == 8 && all_or_none(8, $d1) && all_or_none(8, $d2) && $d1 + $d2 == 16,
	"a custom string: the same copies every time ($d1 / $d2 shard queries)");

# ---- adaptive replica selection, on one shard (a read goes to one node)
($st, $b) = req('n1', 'PUT', '/ars', '{"settings":{"number_of_shards":1,"number_of_replicas":1}}');
ok($st == 200 && $cluster->wait_for('ars green', 60, sub {
	my ($s, $hh) = req('n3', 'GET', '/_cluster/health/ars');
	return $s == 200 && $hh->{status} eq 'green';
}), 'a one-shard index with a copy on each data node');
($st, $b) = req('n1', 'POST', '/ars/_bulk?refresh=true', $nd);
# warm both nodes' statistics (a node never measured is tried first)
($ok, $d1, $d2) = reads_from_n3(10, '', 'ars');
ok($ok == 10 && $d1 + $d2 >= 10, "ARS, both nodes answering alike ($d1 on n1 / $d2 on n2)");
# n2 stopped under a read it serves (_prefer_nodes:n2): a 1.5 s answer
my @pids = (SeTest::postmaster_pid($node{n2}));
push @pids, grep { /^\d+$/ } split /\s+/, `pgrep -P $pids[0] 2>/dev/null`;
kill 'STOP', @pids;
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-h', $node{n3}->host, '-p', $node{n3}->port, '-d', 'postgres', '-c',
	"SELECT status FROM search_engine.request('GET', '/ars/_search?size=0&preference=_prefer_nodes:n2', NULL)" ],
	'>', \$out, '2>', \$err);
usleep(2_000_000);
kill 'CONT', reverse @pids;
$h->finish;
is($out =~ s/\s+//gr, '200', 'the read n2 served while stopped answered once n2 went on');
($st, $b) = req('n3', 'GET', '/_nodes/n3/stats');
my %name_of = map { $_ => $b->{nodes}{$_}{name} } keys %{ $b->{nodes} };
my ($as) = map { $_->{adaptive_selection} } values %{ $b->{nodes} };
my %id_of;
{
	my ($s2, $all) = req('n3', 'GET', '/_nodes/stats');
	%id_of = map { $all->{nodes}{$_}{name} => $_ } keys %{ $all->{nodes} };
}
my $slow = $as->{ $id_of{n2} } // {};
my $fast = $as->{ $id_of{n1} } // {};
ok(($slow->{avg_response_time_ns} // 0) > 4e8, "n3's adaptive_selection stats of n2: avg_response_time_ns $slow->{avg_response_time_ns}")
  or diag(explain $as);
ok(defined $slow->{rank} && defined $fast->{rank} && $slow->{rank} > $fast->{rank},
	"n2 ranks worse than n1 ($slow->{rank} > $fast->{rank})");
($ok, $d1, $d2) = reads_from_n3(10, '', 'ars');
# (each read n1 serves also ages n2's statistics, ES's adjustment of the
# nodes not chosen, so n2 comes back within a few reads; on a loaded
# machine n1's own times grow too: most reads, not all)
ok($ok == 10 && $d1 >= 7, "after it, n2 gets few reads ($d1 on n1, $d2 on n2)");
($ok, $e1, $e2) = reads_from_n3(15, '', 'ars');
ok($e2 > 0, "and is tried again as the others' statistics pull it back ($e1 / $e2)");

# ARS off: copies by hash of (index, shard, coordinating node): stable
($st, $b) = req('n3', 'PUT', '/_cluster/settings', '{"transient":{"cluster.routing.use_adaptive_replica_selection":false}}');
is($st, 200, 'cluster.routing.use_adaptive_replica_selection: false');
ok($cluster->wait_for('the setting applied on n3', 20, sub {
	my ($s, $cs) = req('n3', 'GET', '/_cluster/settings');
	return ($cs->{transient}{cluster}{routing}{use_adaptive_replica_selection} // '') eq 'false';
}), 'applied');
($ok, $d1, $d2) = reads_from_n3(6, '');
ok($ok == 6 && all_or_none(6, $d1) && all_or_none(6, $d2), "without ARS the same copies every time ($d1 / $d2)");
req('n3', 'PUT', '/_cluster/settings', '{"transient":{"cluster.routing.use_adaptive_replica_selection":null}}');

# ---- wait_for_active_shards on single-document writes: 1 shard x 2
# replicas on two data nodes, one replica unassigned
($st, $b) = req('n1', 'PUT', '/wf?wait_for_active_shards=0', '{"settings":{"number_of_shards":1,"number_of_replicas":2}}');
is($st, 200, 'an index with more copies than data nodes');
ok($cluster->wait_for('two active copies', 60, sub {
	my ($s, $hh) = req('n3', 'GET', '/_cluster/health/wf');
	return $s == 200 && $hh->{active_shards} == 2;
}), 'two of its three copies active');
my $t0 = time;
($st, $b) = req('n3', 'PUT', '/wf/_doc/1?wait_for_active_shards=all&timeout=700ms', '{"v":1}');
my $took = time - $t0;
is($st, 503, 'index with wait_for_active_shards=all: 503');
is($b->{error}{type}, 'unavailable_shards_exception', 'unavailable_shards_exception');
like($b->{error}{reason}, qr/\[wf\]\[0\] Not enough active copies to meet shard count of \[ALL\] \(have 2, needed 3\)/,
	"ES's reason") or diag(explain $b);
ok($took >= 0.6, sprintf('after the timeout (%.2f s)', $took));
($st, $b) = req('n1', 'PUT', '/wf/_create/2?wait_for_active_shards=3&timeout=100ms', '{"v":2}');
is($st, 503, 'create with wait_for_active_shards=3: 503');
($st, $b) = req('n2', 'GET', '/wf/_doc/1');
is($st, 404, 'nothing was written');
($st, $b) = req('n3', 'PUT', '/wf/_doc/1?wait_for_active_shards=2', '{"v":1}');
is($st, 201, 'wait_for_active_shards=2: written') or diag(explain $b);
($st, $b) = req('n3', 'POST', '/wf/_update/1?wait_for_active_shards=all&timeout=100ms', '{"doc":{"v":3}}');
is($st, 503, 'update with all: 503');
($st, $b) = req('n1', 'DELETE', '/wf/_doc/1?wait_for_active_shards=all&timeout=100ms');
is($st, 503, 'delete with all: 503');
($st, $b) = req('n1', 'GET', '/wf/_doc/1');
is_deeply([ $st, $b->{_source}{v}, $b->{_version} ], [ 200, 1, 1 ], 'the refused update and delete did nothing');
($st, $b) = req('n1', 'DELETE', '/wf/_doc/1?wait_for_active_shards=2');
is($st, 200, 'delete with 2: done');

$cluster->teardown;
done_testing();
