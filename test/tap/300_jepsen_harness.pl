# The Jepsen-style harness itself (test/tap/SeJepsen.pm), on indices of one
# copy per shard, so that it proves what it can see before replicas exist:
# the faults do what they say (a partition cuts a node off etcd and its
# peers, a paused node answers nothing, a filled disk has no byte left,
# kill -9 and restart), the writers log acknowledged writes, and the
# checker passes a clean run and a crash with restart (the translog keeps
# every acknowledged write) but FAILS when the only copy of a shard is
# destroyed: acknowledged writes lost, and on made-up histories with a
# stale value, copies that differ, an old primary acknowledging after a
# promotion and a cluster-state version going back.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use SeJepsen;
BEGIN { SeJepsen::enter_sandbox() }
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use File::Path qw(rmtree);

my $TTL = 5;
my $j = SeJepsen->new(name => 'jep300', ttl => $TTL);
diag($j->{netns} ? 'nodes in network namespaces (sandbox)' : 'nodes on loopback');
for my $n (qw(n1 n2 n3))
{
	$j->new_node($n, $n eq 'n3' && $j->has('disk') ? (disk_mb => 64) : ());
}
ok($j->wait_for('a master all agree on', 60, sub {
	my $m = SeCluster::master_of($j->node('n1'));
	$m ne '' && !grep { SeCluster::master_of($j->node($_)) ne $m } qw(n2 n3);
}), 'three data nodes agree on a master');

my ($st, $body) = $j->req('n1', 'PUT', '/jep', '{"settings":{"number_of_shards":3,"number_of_replicas":0}}');
is($st, 200, 'index of 3 shards, no replica') or diag(explain $body);
ok($j->wait_green('n1', 'jep', 60), 'green');

# the Perl routing is the engine's: the documents _cat/shards counts per
# shard are the ones SeJepsen::shard_of_id sends there
my @ids = map { "w1-k$_" } 0 .. 29;
my $nd = join('', map { qq({"index":{"_id":"$_"}}\n{"n":1}\n) } @ids);
$j->node('n1')->safe_psql('postgres', "SELECT search_engine.bulk(\$b\$$nd\$b\$, 'jep', 'true')");
($st, $body) = $j->req('n1', 'GET', '/_cat/shards/jep?format=json&h=shard,docs');
my %want;
$want{ SeJepsen::shard_of_id($_, 3) }++ for @ids;
is(join(',', map { "$_->{shard}:$_->{docs}" } sort { $a->{shard} <=> $b->{shard} } @$body),
	join(',', map { "$_:" . ($want{$_} // 0) } 0 .. 2), 'shard_of_id routes as the engine does');
$j->req('n1', 'DELETE', '/jep');
$j->req('n1', 'PUT', '/jep', '{"settings":{"number_of_shards":3,"number_of_replicas":0}}');
$j->wait_green('n1', 'jep', 60);

# one run of writers (and pollers) for $seconds, $fault->() in the middle;
# then the operations and the polls
sub run_writers
{
	my ($tag, $seconds, $fault) = @_;
	my $logs = $j->start_writers(index => 'jep', targets => [qw(n1 n2 n3 n1)], keys => 10,
		seconds => $seconds, tag => $tag, timeout => 5);
	my $plog = $j->start_pollers(index => 'jep', tag => $tag, seconds => $seconds);
	my $t0 = time;
	$fault->() if $fault;
	usleep(1e5) while time - $t0 < $seconds;
	$j->stop_writers;
	$j->stop_pollers;
	return (SeJepsen::read_log(@$logs), SeJepsen::read_polls($plog));
}

sub all_ids { my %h = map { $_->{id} => 1 } @{ $_[0] }; return [ sort keys %h ] }

# ---- a clean run: nothing to report
my ($ops, $polls) = run_writers('clean', 6);
my $acks = grep { $_->{ack} } @$ops;
ok($acks > 20, 'clean run: ' . SeJepsen::summary($ops));
my $final = $j->read_final('n2', 'jep', all_ids($ops));
my @bad = (SeJepsen::check_acked($ops, $final), SeJepsen::check_versions($polls));
is(scalar(@bad), 0, 'clean run: every acknowledged write readable with its last value, versions monotonic')
  or diag(join("\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]));
ok(@$polls >= 6 && !grep({ $_->{version} <= 0 } @$polls), scalar(@$polls) . ' cluster-state versions polled');

# per-copy reads on real nodes (read_local_copy: preference=_shards:S|_only_local
# with seq_no_primary_term), the checker's view of each copy: shard 0 read on
# its node alone holds its documents; read "alone" on a node without a copy it
# holds none, and the checker reports the two as copies that differ
{
	$j->req('n1', 'POST', '/jep/_refresh');
	my $rt = $j->routing('n1', 'jep');
	my $holder = $rt->{shards}[0][0]{node};
	my ($other) = grep { $_ ne $holder } qw(n1 n2 n3);
	my $mine = $j->read_local_copy($holder, 'jep', 1, '_shards:0|_only_local');
	my $none = $j->read_local_copy($other, 'jep', 1, '_shards:0|_only_local');
	ok($mine && keys(%$mine) > 0 && !grep({ SeJepsen::shard_of_id($_, 3) != 0 } keys %$mine),
		"shard 0 read on $holder alone: " . scalar(keys %{ $mine // {} }) . ' ids, all of shard 0');
	is_deeply($none, {}, "read through $other, which has no copy of it: nothing");
	like(join('|', SeJepsen::check_copies('shard 0', { $holder => $mine // {}, $other => $none // {} })),
		qr/copies differ on \S+: /, 'the checker reports copies that differ');
}

# ---- the faults' mechanics (they need the sandbox's namespaces)
SKIP:
{
	skip 'no network namespaces: partition and disk fill not available', 6 unless $j->has('partition');
	my $etcd_from = sub {
		my $out = `@{[ join ' ', $j->in_ns($_[0]) ]} env ETCDCTL_API=3 etcdctl --endpoints=${\ $j->endpoints} --command-timeout=1s endpoint health 2>&1`;
		return scalar(() = $out =~ /is healthy/g);
	};
	is($etcd_from->('n3'), 3, 'n3 reaches the three etcd members');
	$j->partition('n3');
	is($etcd_from->('n3'), 0, 'partitioned, n3 reaches no etcd member');
	ok($j->wait_for('n1 sees n3 leave', 4 * $TTL, sub { !exists SeCluster::nodes_of($j->node('n1'))->{n3} }),
		'and the cluster sees n3 leave (its lease expired)');
	$j->heal('n3');
	ok($j->wait_for('n3 back', 6 * $TTL, sub { exists SeCluster::nodes_of($j->node('n1'))->{n3} }),
		'healed, n3 is back in _cat/nodes');

	$j->fill_disk('n3');
	ok($j->disk_free('n3') < 4096, 'fill_disk: n3\'s search_engine tmpfs has ' . $j->disk_free('n3') . ' bytes left');
	$j->free_disk('n3');
	ok($j->disk_free('n3') > 32 * 1024 * 1024, 'free_disk gives it back');
}
$j->pause('n2');
my ($ret) = (eval { IPC::Run::run([ SeJepsen::psql_cmd($j->node('n2')), '-c', 'SELECT 1' ], '>', \my $o, '2>', \my $e,
			IPC::Run::timeout(2)) } ? 1 : 0);
is($ret, 0, 'a paused node answers nothing');
$j->resume('n2');
is($j->node('n2')->safe_psql('postgres', 'SELECT 1'), '1', 'resumed, it answers again');
ok($j->wait_green('n1', 'jep', 60), 'green again after the faults');

# ---- kill -9 mid-write and restart: with one copy nothing acknowledged is
# lost either (the translog was fsynced before the acknowledgement)
my $victim;
($ops, $polls) = run_writers('crash', 10, sub {
	sleep 3;
	$victim = $j->primary_node('n1', 'jep', 0);
	$j->kill9($victim);
	sleep 1;
	$j->restart($victim);
});
ok($j->wait_green('n1', 'jep', 90), "crash: $victim killed and restarted, green again");
$final = $j->read_final('n1', 'jep', all_ids($ops));
@bad = (SeJepsen::check_acked($ops, $final), SeJepsen::check_versions($polls));
is(scalar(@bad), 0, 'crash and restart: nothing acknowledged lost (' . SeJepsen::summary($ops) . ')')
  or diag(join("\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]));

# ---- the negative self-test: the only copy of shard 0 destroyed with its
# node; the checker must report the acknowledged writes of that shard lost
($ops, $polls) = run_writers('loss', 5);
$victim = $j->primary_node('n1', 'jep', 0);
my @lost_expected = grep { SeJepsen::shard_of_id($_, 3) == 0 } @{ all_ids([ grep { $_->{ack} } @$ops ]) };
$j->kill9($victim);
rmtree($j->node($victim)->data_dir . '/search_engine/indices');
$j->restart($victim);
sleep 2;
$final = $j->read_final(($victim eq 'n1' ? 'n2' : 'n1'), 'jep', all_ids($ops));
@bad = SeJepsen::check_acked($ops, $final);
my @lost = grep { /^lost: / } @bad;
ok(@lost_expected > 0 && @lost >= @lost_expected,
	'destroying the only copy of shard 0 (on ' . $victim . '): the checker reports ' . scalar(@lost)
	  . ' acknowledged writes lost (' . scalar(@lost_expected) . ' ids of shard 0 acknowledged)')
  or diag(join("\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]));
ok(!grep({ my ($id) = /^lost: (\S+)/; defined $id && SeJepsen::shard_of_id($id, 3) != 0 } @lost),
	'and only ids of shard 0');

# ---- the checker on made-up histories
my @h = (
	{ ack => 1, id => 'a', n => 1, seq_no => 0, term => 1, t0 => 10, t1 => 10.1 },
	{ ack => 1, id => 'a', n => 2, seq_no => 5, term => 1, t0 => 11, t1 => 11.1 },
	{ ack => 0, id => 'a', n => 3, t0 => 12, t1 => 17 },
	{ ack => 1, id => 'b', n => 4, seq_no => 6, term => 1, t0 => 20, t1 => 20.1 },
);
is(scalar(SeJepsen::check_acked(\@h, { a => { n => 2, seq_no => 5, term => 1 }, b => { n => 4, seq_no => 6, term => 1 } })),
	0, 'made up: last acknowledged values pass');
is(scalar(SeJepsen::check_acked(\@h, { a => { n => 3, seq_no => 9, term => 2 }, b => { n => 4, seq_no => 6, term => 1 } })),
	0, 'a later indeterminate write may have happened');
like(join('|', SeJepsen::check_acked(\@h, { a => { n => 1, seq_no => 0, term => 1 }, b => { n => 4, seq_no => 6, term => 1 } })),
	qr/^stale: a reads n=1/, 'an older acknowledged value is reported stale');
like(join('|', SeJepsen::check_acked(\@h, { a => { n => 2, seq_no => 5, term => 1 } })),
	qr/^lost: b /, 'a missing acknowledged write is reported lost');
like(join('|', SeJepsen::check_copies('shard 0', { n1 => { a => '5/1/2', b => '6/1/4' }, n2 => { a => '5/1/2' } })),
	qr/copies differ on b: n1=6\/1\/4, n2=missing/, 'copies that differ are reported');
like(join('|', SeJepsen::check_copies('shard 0', { 'n1(p)' => { a => '7/2/3' }, 'n2(r)' => { a => '7/1/3' }, 'n3(r)' => { a => '7/2/3' } })),
	qr/copies differ on a: n1\(p\)=7\/2\/3, n2\(r\)=7\/1\/3, n3\(r\)=7\/2\/3/, 'a copy with the same seq_no under another term is reported');
is(scalar(SeJepsen::check_copies('shard 0', { n1 => { a => '5/1/2' }, n2 => { a => '5/1/2' } })), 0,
	'identical copies pass');
my @p = ({ t => 15, node => 'n1', version => 7, terms => { 0 => 1 } },
	{ t => 18, node => 'n2', version => 9, terms => { 0 => 2 } },
	{ t => 19, node => 'n1', version => 6, terms => { 0 => 2 } });
like(join('|', SeJepsen::check_old_primary(\@h, \@p, { a => 0, b => 0 })),
	qr/^old primary: b acknowledged under term 1/, 'an acknowledgement under term 1 sent after term 2 was applied is reported');
is(scalar(SeJepsen::check_old_primary(\@h, \@p, { a => 0, b => 1 })), 0, 'not for another shard');
like(join('|', SeJepsen::check_versions(\@p)), qr/n1 went back from 7 to 6/, 'a version going back is reported');

$j->teardown;
done_testing();
