# Relocation (issues 15/16): a shard copy moves as Elasticsearch moves it --
# its target on the new node recovers from the primary while the copy stays
# RELOCATING (readable, written to), then takes its place; a moving primary
# hands off to its target with the same primary term.  On three data nodes
# over a three-member etcd cluster, with a client writing all along:
#  - POST /_cluster/reroute move of a replica, then of the primary: every
#    acknowledged write is on every copy afterwards, the copies agree (ids,
#    _seq_no, _primary_term, _version), the source node no longer holds the
#    shard's directory, the term did not change;
#  - _cat/shards and _cluster/state show the relocation while it runs;
#  - cancel of a relocation keeps the copy where it was;
#  - a changed allocation filter moves the copies off a node (a tier move);
#  - a node that joins receives copies by rebalancing.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use SeTest;
use SeCluster;
use SeJepsen;
use JSON::PP;

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap260');
my %node;
sub start_node
{
	my ($n) = @_;
	$node{$n} = $cluster->new_node($n, ttl => 5,
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', "CREATE ROLE se_peer LOGIN IN ROLE search_engine_node");
}
start_node($_) for qw(n1 n2 n3);

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('three nodes in the cluster', 60, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3;
}), 'three data nodes agree on a master');

# no rebalancing until the last part: the moves below are the commands'
is((req('n1', 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.routing.rebalance.enable":"none"}}'))[0], 200, 'rebalancing off');

my ($status, $body) = req('n1', 'PUT', '/mv',
	'{"settings":{"number_of_shards":1,"number_of_replicas":1,"refresh_interval":"1s"},'
	  . '"mappings":{"properties":{"v":{"type":"keyword"},"n":{"type":"long"}}}}');
is($status, 200, 'a one-shard index with one replica') or diag(explain $body);

sub health
{
	my ($st, $b) = req('n1', 'GET', '/_cluster/health/mv');
	return $st == 200 ? $b : {};
}

sub settled
{
	my $h = health();
	return ($h->{status} // '') eq 'green' && $h->{relocating_shards} == 0;
}
ok($cluster->wait_for('green', 60, \&settled), 'green');

# the copies: { p => node, r => node } (started ones), from _cat/shards
sub copies
{
	my ($st, $b) = req('n1', 'GET', '/_cat/shards/mv?format=json&h=prirep,node,state');
	my %c;
	for my $row (@{ ref $b eq 'ARRAY' ? $b : [] })
	{
		$c{ $row->{prirep} } = $row->{node} if $row->{state} eq 'STARTED';
	}
	return \%c;
}

sub uuid_of
{
	my ($st, $b) = req('n1', 'GET', '/mv/_settings');
	return $b->{mv}{settings}{index}{uuid};
}
my $uuid = uuid_of();
ok($uuid, "index uuid $uuid");

sub shard_dir_on
{
	my ($n) = @_;
	return -d $node{$n}->data_dir . "/search_engine/indices/$uuid/0";
}

# ---- a client writing all along (2 new ids per bulk through n1)
my $stop = "${PostgreSQL::Test::Utils::tmp_check}/writer260.stop";
my $log = "${PostgreSQL::Test::Utils::tmp_check}/writer260.log";
sub start_writer
{
	my ($tag) = @_;
	unlink $stop;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(my $fh, '>>', $log) or POSIX::_exit(1);
		$fh->autoflush(1);
		my $client = SeJepsen::Client->new($node{n1});
		my $n = 0;
		my $deadline = time + 240;
		while (!-e $stop && time < $deadline)
		{
			my @ids = map { "$tag-" . (++$n) } 1 .. 2;
			my $nd = join('', map { qq({"index":{"_id":"$_"}}\n{"v":"$_","n":$n}\n) } @ids);
			my ($out, $why) = $client->query("SELECT search_engine.bulk(\$b\$$nd\$b\$, 'mv')", 30);
			my $res = $why ? undef : eval { decode_json($out) };
			for my $i (0 .. $#ids)
			{
				my $it = $res ? $res->{items}[$i]{index} : undef;
				if ($it && ($it->{status} == 200 || $it->{status} == 201))
				{
					print $fh "ack $ids[$i] $it->{_seq_no} $it->{_primary_term}\n";
				}
				else
				{
					my $r = $why // ($it ? "$it->{status} " . ($it->{error}{type} // '') . ' ' . ($it->{error}{reason} // '') : 'no item');
					$r =~ s/\s+/ /g;
					print $fh "err $ids[$i] $r\n";
				}
			}
			usleep(20_000);
		}
		close $fh;
		POSIX::_exit(0);
	}
	return $pid;
}

sub stop_writer
{
	my ($pid) = @_;
	open(my $fh, '>', $stop) or die;
	close $fh;
	waitpid($pid, 0);
}

sub log_lines
{
	my ($kind, $tag) = @_;
	open(my $fh, '<', $log) or return ();
	my @l = grep { /^$kind $tag-/ } <$fh>;
	close $fh;
	chomp @l;
	return @l;
}

# the copy on node n, as a search and a _mget there read it (this node's
# copy first): "id:seq_no:term:version,..." sorted by id
sub copy_of
{
	my ($n) = @_;
	req($n, 'POST', '/mv/_refresh');
	my ($st, $b) = req($n, 'POST', '/mv/_search', '{"size":10000,"query":{"match_all":{}}}');
	return "search status $st" unless $st == 200;
	my @ids = sort map { $_->{_id} } @{ $b->{hits}{hits} };
	return '' unless @ids;
	my $list = join(',', map { qq("$_") } @ids);
	($st, $b) = req($n, 'POST', '/mv/_mget', qq({"ids":[$list]}));
	return "mget status $st" unless $st == 200;
	return join(',', map { "$_->{_id}:$_->{_seq_no}:$_->{_primary_term}:$_->{_version}" }
		grep { $_->{found} } @{ $b->{docs} });
}

# every acknowledged id of tag is on both copies, and the copies agree
sub check_copies
{
	my ($tag, $what) = @_;
	my $c = copies();
	my @acked = map { (split / /)[1] } log_lines('ack', $tag);
	my @errs = log_lines('err', $tag);
	ok(@acked > 0, "$what: the client had " . scalar(@acked) . ' writes acknowledged, '
		  . scalar(@errs) . ' refused') or diag(join("\n", @errs[0 .. ($#errs > 5 ? 5 : $#errs)]));
	my ($p, $r);
	my $same = $cluster->wait_for("$what: copies equal", 20, sub {
		$p = copy_of($c->{p});
		$r = copy_of($c->{r});
		return $p eq $r;
	});
	ok($same, "$what: the copies on $c->{p} (p) and $c->{r} (r) agree on every id, _seq_no, _primary_term and _version")
	  or diag("p: " . substr($p, 0, 300) . "\nr: " . substr($r, 0, 300));
	my %have = map { (split /:/)[0] => 1 } split /,/, $p;
	my @lost = grep { !$have{$_} } @acked;
	is(scalar(@lost), 0, "$what: every acknowledged write is on the copies")
	  or diag("lost: @lost[0 .. ($#lost > 10 ? 10 : $#lost)]");
	my %terms = map { (split / /)[3] => 1 } log_lines('ack', $tag);
	is(join(',', sort keys %terms), '1', "$what: acknowledged with primary term 1 only (a move is no failover)");
}

sub wait_moved
{
	my ($what, $cond) = @_;
	ok($cluster->wait_for($what, 90, sub { settled() && $cond->(copies()) }), $what)
	  or diag(explain health(), copies());
}

my $c0 = copies();
my ($free) = grep { $_ ne $c0->{p} && $_ ne $c0->{r} } qw(n1 n2 n3);
ok($c0->{p} && $c0->{r} && $free, "primary on $c0->{p}, replica on $c0->{r}, $free free");

# ---- refused moves: the deciders are checked, dry_run and explain
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"mv","shard":0,"from_node":"$c0->{r}","to_node":"$c0->{p}"}}]}));
is($status, 400, 'a move onto the node of the other copy is refused');
like($body->{error}{reason} // '', qr/same_shard|a copy of this shard is already allocated/,
	'by the same-shard decider') or diag(explain $body);
($status, $body) = req('n1', 'POST', '/_cluster/reroute?dry_run=true&explain=true',
	qq({"commands":[{"move":{"index":"mv","shard":0,"from_node":"$c0->{r}","to_node":"$free"}}]}));
is($status, 200, 'a dry run of a move');
is($body->{explanations}[0]{decisions}[0]{decision}, 'YES', 'explained: YES') or diag(explain $body);
is(copies()->{r}, $c0->{r}, 'the dry run moved nothing');

# ---- move the replica with writes going on
my $w = start_writer('a');
sleep 1;
# a slow copy so that the RELOCATING state can be seen
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":"5kb"}}'))[0], 200, 'recoveries throttled');
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"mv","shard":0,"from_node":"$c0->{r}","to_node":"$free"}}]}));
is($status, 200, "move of the replica from $c0->{r} to $free accepted") or diag(explain $body);
my ($seen, $seen_health, $rt);
ok($cluster->wait_for('the relocation visible', 20, sub {
	my ($st, $b) = req('n1', 'GET', '/_cat/shards/mv?format=json&h=prirep,state,node');
	$seen = $b;
	$seen_health = health();
	my ($s2, $b2) = req('n1', 'GET', '/_cluster/state/routing_table');
	$rt = $b2->{routing_table}{indices}{mv}{shards}{0} // [];
	return ref $b eq 'ARRAY' && (grep { $_->{state} eq 'RELOCATING' } @$b)
	  && $seen_health->{relocating_shards} == 1 && (grep { $_->{state} eq 'RELOCATING' } @$rt);
}), '_cat/shards shows the copy RELOCATING, health relocating_shards 1') or diag(explain $seen);
my ($rel) = grep { $_->{state} eq 'RELOCATING' } @{ ref $seen eq 'ARRAY' ? $seen : [] };
like($rel->{node} // '', qr/^\Q$c0->{r}\E -> \S+ \S+ \Q$free\E$/, "its node column: $c0->{r} -> ... $free");
ok((grep { $_->{state} eq 'INITIALIZING' && $_->{node} eq $free } @$seen), 'and its target INITIALIZING on ' . $free);
my ($rcopy) = grep { $_->{state} eq 'RELOCATING' } @$rt;
ok($rcopy && $rcopy->{relocating_node} && $rcopy->{allocation_id}{relocation_id},
	'_cluster/state routing_table: state RELOCATING with relocating_node and relocation_id')
  or diag(explain $rt);
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":null}}'))[0], 200, 'throttle lifted');
wait_moved("the replica moved to $free", sub { $_[0]->{r} eq $free && $_[0]->{p} eq $c0->{p} });
sleep 1;
stop_writer($w);
check_copies('a', 'replica move');
ok($cluster->wait_for("the shard's directory gone from $c0->{r}", 20, sub { !shard_dir_on($c0->{r}) }),
	"the source node $c0->{r} no longer holds the shard's directory");

# ---- move the primary with writes going on
my $c1 = copies();
($free) = grep { $_ ne $c1->{p} && $_ ne $c1->{r} } qw(n1 n2 n3);
$w = start_writer('b');
sleep 1;
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"mv","shard":0,"from_node":"$c1->{p}","to_node":"$free"}}]}));
is($status, 200, "move of the primary from $c1->{p} to $free accepted") or diag(explain $body);
wait_moved("the primary moved to $free", sub { $_[0]->{p} eq $free && $_[0]->{r} eq $c1->{r} });
sleep 2;
stop_writer($w);
check_copies('b', 'primary move');
($status, $body) = req('n1', 'GET', '/_cluster/state/metadata');
is($body->{metadata}{indices}{mv}{primary_terms}{0}, 1, 'the primary term is still 1');
ok($cluster->wait_for("the shard's directory gone from $c1->{p}", 20, sub { !shard_dir_on($c1->{p}) }),
	"the old primary's node $c1->{p} no longer holds the shard's directory");
ok($node{$c1->{p}}->log_contains('handed off to relocation target'), 'the old primary handed off');

# ---- cancel: a throttled move, cancelled on its target node
my $c2 = copies();
($free) = grep { $_ ne $c2->{p} && $_ ne $c2->{r} } qw(n1 n2 n3);
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":"1kb"}}'))[0], 200, 'recoveries throttled hard');
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"move":{"index":"mv","shard":0,"from_node":"$c2->{r}","to_node":"$free"}}]}));
is($status, 200, 'a move of the replica') or diag(explain $body);
ok($cluster->wait_for('relocating', 20, sub { (health()->{relocating_shards} // 0) == 1 }), 'it is relocating');
($status, $body) = req('n1', 'POST', '/_cluster/reroute',
	qq({"commands":[{"cancel":{"index":"mv","shard":0,"node":"$free"}}]}));
is($status, 200, 'cancel on the target node accepted') or diag(explain $body);
ok($cluster->wait_for('cancelled', 30, sub { settled() && copies()->{r} eq $c2->{r} }),
	"the move is cancelled: the replica stays on $c2->{r}, green");
ok($cluster->wait_for("no copy left on $free", 20, sub { !shard_dir_on($free) }),
	"the cancelled target's directory on $free is gone");
is((req('n1', 'PUT', '/_cluster/settings',
	'{"transient":{"indices.recovery.max_bytes_per_sec":null}}'))[0], 200, 'throttle lifted');

# ---- a filter change moves the copies off a node (tier move)
my $c3 = copies();
my $off = $c3->{p};
($status, $body) = req('n1', 'PUT', '/mv/_settings',
	qq({"index":{"routing":{"allocation":{"exclude":{"_name":"$off"}}}}}));
is($status, 200, "index.routing.allocation.exclude._name = $off") or diag(explain $body);
wait_moved("no copy on $off any more", sub { $_[0]->{p} && $_[0]->{r} && $_[0]->{p} ne $off && $_[0]->{r} ne $off });
ok($cluster->wait_for("the shard's directory gone from $off", 20, sub { !shard_dir_on($off) }),
	"$off no longer holds the shard");
($status, $body) = req('n1', 'PUT', '/mv/_settings',
	'{"index":{"routing":{"allocation":{"exclude":{"_name":null}}}}}');
is($status, 200, 'the filter removed');

# ---- a joining node gets copies by rebalancing
($status, $body) = req('n1', 'PUT', '/bal',
	'{"settings":{"number_of_shards":6,"number_of_replicas":0}}');
is($status, 200, 'an index of six shards') or diag(explain $body);
my $nd = join('', map { qq({"index":{"_index":"bal","_id":"x$_"}}\n{"n":$_}\n) } 1 .. 60);
($status, $body) = req('n1', 'POST', '/_bulk?refresh=true', $nd);
ok($status == 200 && !$body->{errors}, 'sixty documents');
start_node('n4');
ok($cluster->wait_for('four nodes', 60, sub { keys(%{ SeCluster::nodes_of($node{n1}) }) == 4 }),
	'n4 joined');
is((req('n1', 'PUT', '/_cluster/settings',
	'{"persistent":{"cluster.routing.rebalance.enable":"all"}}'))[0], 200, 'rebalancing on');
ok($cluster->wait_for('n4 holds copies', 90, sub {
	my ($st, $b) = req('n1', 'GET', '/_cat/shards?format=json&h=index,node,state');
	my $h = req('n1', 'GET', '/_cluster/health');
	return ref $b eq 'ARRAY' && (grep { $_->{node} eq 'n4' && $_->{state} eq 'STARTED' } @$b) >= 2
	  && !(grep { $_->{state} ne 'STARTED' } @$b);
}), 'the new node received copies by rebalancing');
($status, $body) = req('n1', 'POST', '/bal/_count');
is($body->{count}, 60, 'every document still counted');

$cluster->teardown;
done_testing();
