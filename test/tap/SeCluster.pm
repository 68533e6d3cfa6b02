# SeCluster.pm: a search_engine cluster on loopback for Perl TAP tests.
#
# Starts a real etcd cluster (N members, Raft among them, from the Debian
# etcd-server package) on free loopback ports in the test's temporary
# directory, waits until every member is healthy, and starts PostgreSQL
# nodes (SeTest::new_node) that use it through search_engine.etcd_endpoints.
# Helpers read the cluster as a node sees it (_cat/master, _cat/nodes) and
# as etcd holds it (etcdctl), and wait for a condition with a deadline.
package SeCluster;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use JSON::PP;
use SeTest;

# new(etcd_members => 3, name => 'c1'): start etcd and return the cluster
sub new
{
	my ($class, %opts) = @_;
	my $self = bless {
		name => $opts{name} // 'tapcluster',
		dir => PostgreSQL::Test::Utils::tempdir('etcd'),
		etcd => [],
		nodes => [],
	}, $class;
	my $n = $opts{etcd_members} // 3;
	my %taken;
	my $port = sub {
		my $p;
		do { $p = PostgreSQL::Test::Cluster::get_free_port() } while $taken{$p}++;
		return $p;
	};
	for my $i (1 .. $n)
	{
		push @{ $self->{etcd} },
		  { name => "etcd$i", client => $port->(), peer => $port->() };
	}
	my $initial = join(',', map { "$_->{name}=http://127.0.0.1:$_->{peer}" } @{ $self->{etcd} });
	$self->{initial} = $initial;
	$self->start_etcd($_) for @{ $self->{etcd} };
	$self->wait_for('etcd members healthy', 60, sub { $self->etcd_healthy });
	return $self;
}

sub start_etcd
{
	my ($self, $m) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDOUT, '>>', "$self->{dir}/$m->{name}.log") or die;
		open(STDERR, '>&', \*STDOUT) or die;
		exec('etcd', '--name', $m->{name}, '--data-dir', "$self->{dir}/$m->{name}",
			'--listen-client-urls', "http://127.0.0.1:$m->{client}",
			'--advertise-client-urls', "http://127.0.0.1:$m->{client}",
			'--listen-peer-urls', "http://127.0.0.1:$m->{peer}",
			'--initial-advertise-peer-urls', "http://127.0.0.1:$m->{peer}",
			'--initial-cluster', $self->{initial},
			'--initial-cluster-token', "se-$self->{name}",
			'--initial-cluster-state', 'new', '--log-level', 'warn')
		  or die "exec etcd: $!";
	}
	$m->{pid} = $pid;
}

# the etcd client URLs, comma-separated (search_engine.etcd_endpoints)
sub endpoints
{
	my ($self) = @_;
	return join(',', map { "http://127.0.0.1:$_->{client}" } @{ $self->{etcd} });
}

sub etcd_healthy
{
	my ($self) = @_;
	my $out = `ETCDCTL_API=3 etcdctl --endpoints=${\ $self->endpoints} --command-timeout=2s endpoint health 2>&1`;
	my $healthy = () = $out =~ /is healthy/g;
	return $healthy == scalar(@{ $self->{etcd} });
}

# kill etcd members (SIGKILL: as a lost host would look): the ones whose
# numbers (1-based) are given, else all
sub kill_etcd
{
	my ($self, @which) = @_;
	@which = (1 .. scalar @{ $self->{etcd} }) unless @which;
	for my $i (@which)
	{
		my $m = $self->{etcd}[ $i - 1 ];
		next unless $m->{pid};
		kill 'KILL', $m->{pid};
		waitpid($m->{pid}, 0);
		$m->{pid} = undef;
	}
}

# start the killed members again on their data directories
sub restart_etcd
{
	my ($self) = @_;
	$self->start_etcd($_) for grep { !$_->{pid} } @{ $self->{etcd} };
	$self->wait_for('etcd members healthy again', 60, sub { $self->etcd_healthy });
}

# etcdctl get of one key under the cluster's prefix: its value, or undef
sub etcd_get
{
	my ($self, $suffix) = @_;
	my $key = "/search_engine/$self->{name}/$suffix";
	my $out = `ETCDCTL_API=3 etcdctl --endpoints=${\ $self->endpoints} --command-timeout=2s get '$key' --print-value-only 2>/dev/null`;
	return undef if $? != 0 || $out eq '';
	chomp $out;
	return $out;
}

# the master's published membership (state/nodes) decoded, or undef
sub published
{
	my ($self) = @_;
	my $v = $self->etcd_get('state/nodes');
	return defined $v ? decode_json($v) : undef;
}

# new_node(name, roles => 'master,data', ttl => 5): a node of this cluster
sub new_node
{
	my ($self, $name, %opts) = @_;
	my $roles = $opts{roles} // 'master,data';
	my $extra = sub {
		my $port = $_[0]->port;
		return "search_engine.node_name = '$name'\n"
		  . "search_engine.cluster_name = '$self->{name}'\n"
		  . "search_engine.node_roles = '$roles'\n"
		  . "search_engine.etcd_endpoints = '${\ $self->endpoints}'\n"
		  # the test servers listen on a Unix socket only
		  . "search_engine.publish_conninfo = 'host=${\ $_[0]->host} port=$port dbname=postgres'\n"
		  . "search_engine.cluster_lease_ttl = " . ($opts{ttl} // 5) . "\n"
		  . "search_engine.search_threads = 1\n"
		  . ($opts{extra} // '');
	};
	my $node = SeTest::new_node($name, write_threads => 1, extra => $extra);
	push @{ $self->{nodes} }, $node;
	return $node;
}

# a REST call through search_engine.request, with an optional body (JSON
# text, no single quotes): (status, decoded body), or (0, { error => psql's
# stderr }) when the call itself failed
sub request
{
	my ($node, $method, $path, $body) = @_;
	my $b = defined $body ? "'" . $body . "'" : 'NULL';
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT status || ' ' || coalesce(body::text, 'null') FROM search_engine.request('$method', '$path', $b)",
		on_error_stop => 0);
	return (0, { error => $err }) if $ret != 0 || $out !~ /^(\d+) (.*)$/s;
	return ($1, decode_json($2));
}

# the master's routing of index as this node applied it: "node:STATE" of
# each shard's primary copy, in shard order ('-' for no node), '' if none
sub primaries
{
	my ($node, $index) = @_;
	my ($status, $body) = request($node, 'GET', '/_cluster/state/routing_table,nodes');
	my $shards = $body->{routing_table}{indices}{$index}{shards} or return '';
	my %names = map { $_ => $body->{nodes}{$_}{name} } keys %{ $body->{nodes} // {} };
	return join(' ', map {
		my $c = $shards->{$_}[0];
		(defined $c->{node} ? ($names{ $c->{node} } // $c->{node}) : '-') . ":$c->{state}"
	} sort { $a <=> $b } keys %$shards);
}

# the master this node knows (_cat/master's node), '' if none
sub master_of
{
	my ($node) = @_;
	my ($status, $body) = request($node, 'GET', '/_cat/master?format=json');
	return ($status == 200 && ref $body eq 'ARRAY' && @$body) ? $body->[0]{node} : '';
}

# _cat/nodes as this node sees it: { name => { 'node.role' => .., master => .. } }
sub nodes_of
{
	my ($node) = @_;
	my ($status, $body) = request($node, 'GET', '/_cat/nodes?format=json&h=name,node.role,master');
	return {} unless $status == 200 && ref $body eq 'ARRAY';
	return { map { $_->{name} => $_ } @$body };
}

# one copy of index as node's search and _mget read it (this node's copy
# first): "id:_seq_no:_primary_term:_version,..." in id order, or the
# failing status -- two copies are equal when these are
sub copy_of
{
	my ($node, $index) = @_;
	my ($st, $b) = request($node, 'POST', "/$index/_search", '{"size":10000,"query":{"match_all":{}}}');
	return "search status $st" unless $st == 200;
	my @ids = sort map { $_->{_id} } @{ $b->{hits}{hits} };
	my $list = join(',', map { qq("$_") } @ids);
	($st, $b) = request($node, 'POST', "/$index/_mget", qq({"ids":[$list]}));
	return "mget status $st" unless $st == 200;
	return join(',', map { "$_->{_id}:$_->{_seq_no}:$_->{_primary_term}:$_->{_version}" }
		grep { $_->{found} } @{ $b->{docs} });
}

# wait_for(what, seconds, sub): poll every 50 ms; the elapsed seconds, or
# undef (and a diagnostic) when the deadline passed
sub wait_for
{
	my ($self, $what, $seconds, $cond) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return time - $start if $cond->();
		usleep(50_000);
	}
	diag("timed out after ${seconds}s waiting for: $what");
	return undef;
}

# stop everything: nodes (immediate) and etcd
# Two data nodes (n1, n2) and a dedicated master (n3, which holds no
# shard and so coordinates every shard remotely), once all three see each
# other: (cluster, { n1 => node, .. }).  Options as new's, and wait (30 s).
sub data_nodes_and_master
{
	my ($class, %opts) = @_;
	my $wait = delete $opts{wait} // 30;
	my $self = $class->new(%opts);
	my %node;
	for my $n (qw(n1 n2 n3))
	{
		$node{$n} = $self->new_node($n, ttl => 5, roles => $n eq 'n3' ? 'master' : 'data');
	}
	ok($self->wait_for('the nodes in the cluster', $wait, sub {
		return master_of($node{n1}) eq 'n3' && keys(%{ nodes_of($node{n1}) }) == 3;
	}), 'two data nodes and their master');
	return ($self, \%node);
}

# Create index (body: its settings of 2 shards, no replica, and mappings)
# through n3 of data_nodes_and_master's nodes and wait for green: one
# primary on each data node.
sub index_on_data_nodes
{
	my ($self, $node, $index, $body) = @_;
	my ($st, $b) = request($node->{n3}, 'PUT', "/$index", $body);
	is($st, 200, 'an index of 2 shards') or diag(explain $b);
	ok($self->wait_for('green', 60, sub {
		my ($s, $h) = request($node->{n3}, 'GET', "/_cluster/health/$index");
		return $s == 200 && $h->{status} eq 'green';
	}), 'green');
	my $placed = primaries($node->{n3}, $index);
	like($placed, qr/^n[12]:STARTED n[12]:STARTED$/, "shards on the data nodes ($placed)");
	return;
}

sub teardown
{
	my ($self) = @_;
	for my $node (@{ $self->{nodes} })
	{
		$node->stop('immediate') if defined $node->{_pid};
	}
	$self->kill_etcd;
}

1;
