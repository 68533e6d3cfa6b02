# A stale primary's shard_failed is refused (issue 16, ES's
# NoLongerPrimaryShardException).  A primary that could not replicate a
# write to a copy asks the master to fail that copy, with its primary term,
# and acknowledges the write only once the master committed it.  After the
# master promoted another copy (term + 1), the old primary's report must
# not fail the new primary's copy -- the master answers
# no_longer_primary_shard_exception, commits nothing, and the old primary
# thus acknowledges nothing.  So does a report from a node that never held
# the primary.  The report of the current primary, with its term, is taken.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap276');
my %node;
# three data nodes, so a promoted primary still has a replica to fail
for my $n (qw(n1 n2 n3))
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

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3
	  && SeCluster::master_of($node{n2}) eq $m && SeCluster::master_of($node{n3}) eq $m;
}), 'three nodes agree on a master');

my ($st, $body) = req('n1', 'PUT', '/nlp',
	'{"settings":{"number_of_shards":1,"number_of_replicas":2,'
	  . '"unassigned.node_left.delayed_timeout":"0"},"mappings":{"properties":{"v":{"type":"long"}}}}');
is($st, 200, 'a one-shard index with two replicas') or diag(explain $body);

# shard 0 as node $n's applied state has it: term, in-sync ids, copies (name, primary, state, id)
sub shard0
{
	my ($n) = @_;
	my ($s, $b) = req($n, 'GET', '/_cluster/state/metadata,routing_table,nodes');
	return undef if $s != 200;
	my $copies = $b->{routing_table}{indices}{nlp}{shards}{0} // [];
	return {
		term => $b->{metadata}{indices}{nlp}{primary_terms}{0},
		in_sync => join(',', sort @{ $b->{metadata}{indices}{nlp}{in_sync_allocations}{0} // [] }),
		copies => [ map { {
			node => $b->{nodes}{ $_->{node} // '' }{name} // '',
			primary => $_->{primary} ? 1 : 0,
			state => $_->{state},
			id => $_->{allocation_id}{id} // '' } } @$copies ],
	};
}
sub health
{
	my ($n) = @_;
	my ($s, $b) = req($n, 'GET', '/_cluster/health/nlp');
	return $s == 200 ? $b->{status} : "status $s";
}

ok($cluster->wait_for('green', 60, sub { health('n1') eq 'green' }), 'the three copies started');
my $s0 = shard0('n1');
my ($p) = grep { $_->{primary} } @{ $s0->{copies} };
my @r = grep { !$_->{primary} } @{ $s0->{copies} };
is($s0->{term}, 1, "primary on $p->{node} (term 1), replicas on $r[0]{node} and $r[1]{node}");
my $uuid = $node{ $r[0]{node} }->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = 'nlp'");

# a shard_failed sent to the master as node $from, primary of term $term
sub report_failed
{
	my ($from, $term, $victim) = @_;
	my $m = SeCluster::master_of($node{ $r[0]{node} });
	my $payload = encode_json({ node => $from, shards => [ {
		index_uuid => $uuid, shard => 0, allocation_id => $victim->{id},
		message => 'replication failed (test)', primary_term => $term } ] });
	my ($rc, $out, $err) = $node{$m}->psql('postgres',
		"SET ROLE se_peer; SELECT encode(search_engine._transport('shard_failed', convert_to('$payload', 'UTF8')), 'escape')");
	# a refusal comes back as the transport's error reply, not as an SQL error
	return $rc == 0 ? $out : "psql failed: $err";
}

# ---- a node that does not hold the primary cannot fail a copy as its primary
my $out = report_failed($r[0]{node}, 1, $r[1]);
unlike($out, qr/"applied"/, "a report from $r[0]{node} (a replica) as primary of term 1 is not applied");
like($out, qr/no_longer_primary_shard_exception/, 'it fails with no_longer_primary_shard_exception')
  or diag($out);
is(shard0('n1')->{in_sync}, $s0->{in_sync}, 'and the in-sync set is unchanged');

# ---- the primary's node dies; a replica is promoted with term 2
SeTest::crash($node{ $p->{node} });
SeTest::after_crash($node{ $p->{node} });
my $new;
ok($cluster->wait_for('a replica promoted', 60, sub {
	my $s = shard0($r[0]{node});
	return 0 if !$s || $s->{term} != 2;
	($new) = grep { $_->{primary} && $_->{state} eq 'STARTED' } @{ $s->{copies} };
	return $new && $new->{node} ne $p->{node};
}), "a replica was promoted (term 2)");
my ($kept) = grep { $_->{node} ne $new->{node} } @r;
my $s1 = shard0($new->{node});
ok(scalar(grep { $_ eq $kept->{id} } split /,/, $s1->{in_sync}), "the other replica on $kept->{node} is in sync");

# ---- the old primary's report (term 1) of the copy it could not reach: refused
$out = report_failed($p->{node}, 1, $kept);
unlike($out, qr/"applied"/, "the old primary's shard_failed (term 1) is not applied");
like($out, qr/no_longer_primary_shard_exception/, 'it fails with no_longer_primary_shard_exception') or diag($out);
like($out, qr/is no longer the primary of primary term \[1\] \(current term \[2\]\)/, 'naming both terms')
  or diag($out);
is(shard0($new->{node})->{in_sync}, $s1->{in_sync}, 'nothing was committed: the copy is still in sync');
ok(scalar(grep { $_->{id} eq $kept->{id} && $_->{state} eq 'STARTED' } @{ shard0($new->{node})->{copies} }),
	'and still started');
($st, $body) = req($new->{node}, 'PUT', '/nlp/_doc/after?refresh=true', '{"v":1}');
ok($st == 201 || $st == 200, 'the new primary acknowledges writes');

# ---- the new primary's own report (term 2) is taken
$out = report_failed($new->{node}, 2, $kept);
like($out, qr/"applied":1/, "the new primary's shard_failed (term 2) is accepted and applied") or diag($out);
ok($cluster->wait_for('the copy is out of the in-sync set', 30, sub {
	my $s = shard0($new->{node});
	return !grep { $_ eq $kept->{id} } split /,/, $s->{in_sync};
}), 'the failed copy left the in-sync set');

$cluster->teardown;
done_testing();
