# SeJepsen.pm: a Jepsen-style fault harness for search_engine clusters.
#
# A cluster (SeCluster: 3 etcd members + PostgreSQL data nodes) whose
# members each live in a network namespace of their own, joined by veth
# pairs to a bridge, so that faults can cut one node off the network:
#
#   enter_sandbox()  the test re-executes itself inside a new user + network
#                    + mount namespace (unshare, no root needed): every
#                    address, route, nftables rule and tmpfs the test makes
#                    lives and dies with that sandbox; no packet can leave
#                    it (the sandbox has no route out, only its bridge).
#                    Without user namespaces the cluster runs on loopback
#                    ports (SeCluster) and the faults that need namespaces
#                    (partition, disk fill) say so (has('partition')).
#   new()            etcd members e1..e3 and nodes n1..nN, each in a network
#                    namespace held by a small process, addresses 10.213.0.x
#                    on the bridge sejbr0 (inside the sandbox only).
#
# Faults, each bounded by the caller: kill9/restart of a node, pause (SIGSTOP
# of the postmaster and all its processes) and resume, partition (nftables
# in the node's namespace drops every packet not on its loopback: etcd and
# the other nodes alike) and heal, fill_disk (a tmpfs under the node's
# search_engine directory filled to the last byte) and free_disk.
#
# Clients: start_writers forks writers that bulk-index into one index
# through given nodes (psql over the node's Unix socket, so a partitioned
# node's clients still reach it, as clients on its side of the partition
# would) and log every item: "ack" with _seq_no and _primary_term when the
# item succeeded, "ind" (indeterminate) on any error or timeout.
# start_pollers logs every node's applied cluster-state version and the
# index's primary terms.  The checker (check_* functions, pure over the
# logs and the reads) says what went wrong, as a list of violations.
package SeJepsen;

use strict;
use warnings;
use Config;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use JSON::PP;
use IPC::Run qw(run timeout);
use POSIX ();
use SeTest;
use SeCluster;
our @ISA = ('SeCluster');

my $NET = '10.213.0';    # inside the sandbox only: it has no route out
my @HOLDERS;             # namespace holder pids, killed at exit
my @KIDS;                # writer / poller pids, killed at exit
my %PAUSED;              # pids stopped by pause(): continued at exit
my %ETCD;                # etcd pids, killed at exit
my $OWNER = $$;

# Re-execute the test inside a fresh user + network + mount namespace.
# Returns true inside the sandbox, false when namespaces are unavailable
# (the test then goes on in the machine's own namespaces, on loopback).
sub enter_sandbox
{
	if ($ENV{SE_JEPSEN_SANDBOX})
	{
		# inside: our own loopback must be up before anything listens
		system('ip', 'link', 'set', 'lo', 'up') == 0 or die "lo up failed in the sandbox";
		return 1;
	}
	return 0 if $ENV{SE_JEPSEN_LOOPBACK};
	my $gid = (split ' ', $()[0];
	my @un = ('unshare', '--user', "--map-user=$<", "--map-group=$gid", '--keep-caps', '--net', '--mount');
	my $probe = system(@un, 'sh', '-c',
		'ip link set lo up && ip link add sejp0 type veth peer name sejp1 && nft list tables >/dev/null 2>&1');
	if ($probe != 0)
	{
		diag('no user/network namespaces or nftables here: running on loopback without partitions');
		return 0;
	}
	$ENV{SE_JEPSEN_SANDBOX} = 1;
	# TAP output goes on through the same stdout
	exec(@un, $^X, (map { "-I$_" } grep { !ref } @INC), $0, @ARGV) or die "exec unshare: $!";
}

sub in_sandbox { return $ENV{SE_JEPSEN_SANDBOX} ? 1 : 0 }

# new(name => 'j1', nodes => 3, ttl => 5, extra => 'conf lines')
sub new
{
	my ($class, %opts) = @_;
	my $self = bless {
		name => $opts{name} // 'jepsen',
		dir => PostgreSQL::Test::Utils::tempdir('jepsen'),
		etcd => [],
		nodes => [],
		node => {},
		ns => {},
		ttl => $opts{ttl} // 5,
	}, $class;
	# the clients' logs stay beside the servers' (tmp_check/log) for a look
	# after the run
	$self->{logdir} = "$PostgreSQL::Test::Utils::log_path/jepsen_$self->{name}";
	mkdir $self->{logdir};
	$self->{netns} = in_sandbox();
	if ($self->{netns})
	{
		sh('ip', 'link', 'add', 'sejbr0', 'type', 'bridge');
		sh('ip', 'addr', 'add', "$NET.1/24", 'dev', 'sejbr0');
		sh('ip', 'link', 'set', 'sejbr0', 'up');
	}
	my %taken;
	for my $i (1 .. 3)
	{
		my $m = { name => "etcd$i" };
		if ($self->{netns})
		{
			$self->make_ns($m->{name}, 10 + $i);
			@$m{qw(host client peer)} = ("$NET." . (10 + $i), 2379, 2380);
		}
		else
		{
			my $port = sub {
				my $p;
				do { $p = PostgreSQL::Test::Cluster::get_free_port() } while $taken{$p}++;
				return $p;
			};
			@$m{qw(host client peer)} = ('127.0.0.1', $port->(), $port->());
		}
		push @{ $self->{etcd} }, $m;
	}
	$self->{initial} = join(',', map { "$_->{name}=http://$_->{host}:$_->{peer}" } @{ $self->{etcd} });
	$self->start_etcd($_) for @{ $self->{etcd} };
	$self->wait_for('etcd members healthy', 60, sub { $self->etcd_healthy })
	  or die "etcd did not become healthy";
	return $self;
}

sub sh
{
	my @cmd = @_;
	system(@cmd) == 0 or die "failed: @cmd";
}

# a network namespace for member $name, address $NET.$octet on the bridge
sub make_ns
{
	my ($self, $name, $octet) = @_;
	my $me = readlink("/proc/self/ns/net");
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		# lives as long as the test: ends by itself once its parent is gone
		exec('unshare', '--net', '--', $^X, '-e',
			'my $p = getppid(); sleep 1 while getppid() == $p') or POSIX::_exit(1);
	}
	push @HOLDERS, $pid;
	for (1 .. 200)
	{
		my $l = readlink("/proc/$pid/ns/net");
		last if defined $l && $l ne $me;
		usleep(10_000);
	}
	my ($h, $n) = ("sejh$octet", "sejn$octet");
	sh('ip', 'link', 'add', $h, 'type', 'veth', 'peer', 'name', $n);
	sh('ip', 'link', 'set', $n, 'netns', $pid);
	sh('ip', 'link', 'set', $h, 'master', 'sejbr0', 'up');
	my @in = ('nsenter', "--net=/proc/$pid/ns/net");
	sh(@in, 'ip', 'link', 'set', 'lo', 'up');
	sh(@in, 'ip', 'addr', 'add', "$NET.$octet/24", 'dev', $n);
	sh(@in, 'ip', 'link', 'set', $n, 'up');
	$self->{ns}{$name} = { pid => $pid, ip => "$NET.$octet" };
}

# the command prefix that runs a program in member $name's namespace
sub in_ns
{
	my ($self, $name) = @_;
	return () unless $self->{netns};
	return ('nsenter', "--net=/proc/$self->{ns}{$name}{pid}/ns/net");
}

sub start_etcd
{
	my ($self, $m) = @_;
	my @pre = $self->in_ns($m->{name});
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDOUT, '>>', "$self->{dir}/$m->{name}.log") or die;
		open(STDERR, '>&', \*STDOUT) or die;
		exec(@pre, 'etcd', '--name', $m->{name}, '--data-dir', "$self->{dir}/$m->{name}",
			'--listen-client-urls', "http://$m->{host}:$m->{client}",
			'--advertise-client-urls', "http://$m->{host}:$m->{client}",
			'--listen-peer-urls', "http://$m->{host}:$m->{peer}",
			'--initial-advertise-peer-urls', "http://$m->{host}:$m->{peer}",
			'--initial-cluster', $self->{initial},
			'--initial-cluster-token', "se-$self->{name}",
			'--initial-cluster-state', 'new', '--log-level', 'warn')
		  or POSIX::_exit(1);
	}
	$m->{pid} = $pid;
	$ETCD{$pid} = 1;
}

sub endpoints
{
	my ($self) = @_;
	return join(',', map { "http://$_->{host}:$_->{client}" } @{ $self->{etcd} });
}

# new_node(name, roles => .., extra => ..): a PostgreSQL node in its own
# namespace; disk_mb => N puts its search_engine directory on an N MB tmpfs
# (sandbox only)
sub new_node
{
	my ($self, $name, %opts) = @_;
	my $k = scalar(@{ $self->{nodes} }) + 1;
	$self->make_ns($name, 20 + $k) if $self->{netns};
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $host = $self->{netns} ? $self->{ns}{$name}{ip} : undef;
	my $port = $node->port;
	my $conninfo = $host ? "host=$host port=$port dbname=postgres"
	  : "host=${\ $node->host} port=$port dbname=postgres";
	my $conf = "shared_preload_libraries = 'search_engine'\n"
	  . "search_engine.database = 'postgres'\n"
	  . "max_worker_processes = 16\n"
	  . "search_engine.write_threads = 1\n"
	  . "search_engine.search_threads = 1\n"
	  . "search_engine.node_name = '$name'\n"
	  . "search_engine.cluster_name = '$self->{name}'\n"
	  . "search_engine.node_roles = '" . ($opts{roles} // 'master,data') . "'\n"
	  . "search_engine.etcd_endpoints = '${\ $self->endpoints}'\n"
	  . "search_engine.publish_conninfo = '$conninfo'\n"
	  . "search_engine.cluster_lease_ttl = $self->{ttl}\n"
	  . ($host ? "listen_addresses = '$host'\n" : '')
	  . ($opts{extra} // '');
	$node->append_conf('postgresql.conf', $conf);
	$node->append_conf('pg_hba.conf', "host all all $NET.0/24 trust\n") if $host;
	if ($opts{disk_mb})
	{
		die "disk_mb needs the sandbox" unless $self->{netns};
		my $dir = $node->data_dir . '/search_engine';
		mkdir $dir or die "mkdir $dir: $!";
		mount_tmpfs($dir, $opts{disk_mb});
		$self->{tmpfs}{$name} = $dir;
	}
	push @{ $self->{nodes} }, $node;
	$self->{node}{$name} = $node;
	$self->start_node($name);
	$node->safe_psql('postgres', 'CREATE EXTENSION search_engine');
	return $node;
}

sub node { return $_[0]->{node}{ $_[1] } }
sub node_names { return map { $_->name } @{ $_[0]->{nodes} } }

# start (or start again after kill9) a node inside its namespace
sub start_node
{
	my ($self, $name) = @_;
	my $node = $self->node($name);
	local %ENV = %ENV;
	delete $ENV{PGAPPNAME};
	my $ret = system($self->in_ns($name), 'pg_ctl', '-w', '-D', $node->data_dir, '-l', $node->logfile,
		'-o', "--cluster-name=$name", 'start');
	if ($ret != 0)
	{
		$node->_update_pid(-1);
		die "pg_ctl start of $name failed";
	}
	$node->_update_pid(1);
}

# ---- faults

sub kill9
{
	my ($self, $name) = @_;
	my $node = $self->node($name);
	SeTest::crash($node);
	SeTest::after_crash($node);
}

sub restart
{
	my ($self, $name) = @_;
	$self->start_node($name);
}

sub node_pids
{
	my ($self, $name) = @_;
	my $pid = SeTest::postmaster_pid($self->node($name)) or return ();
	return ($pid, grep { /^\d+$/ } split /\s+/, `pgrep -P $pid 2>/dev/null`);
}

# SIGSTOP every process of the node (postmaster first so that it does not
# notice its children stopping), SIGCONT in the reverse order
sub pause
{
	my ($self, $name) = @_;
	my @p = $self->node_pids($name);
	kill 'STOP', @p;
	$PAUSED{$_} = 1 for @p;
	$self->{paused}{$name} = \@p;
}

sub resume
{
	my ($self, $name) = @_;
	my $p = delete $self->{paused}{$name} or return;
	kill 'CONT', reverse @$p;
	delete @PAUSED{@$p};
}

sub has
{
	my ($self, $what) = @_;
	return $self->{netns} if $what eq 'partition';
	return $self->{netns} && $Config{archname} =~ /^x86_64/ if $what eq 'disk';
	return 1;
}

# cut member $name off every other member, etcd included: nftables in its
# namespace drops every packet that is not on its loopback, both ways
sub partition
{
	my ($self, $name) = @_;
	die "partition needs the sandbox" unless $self->{netns};
	my $rules = "table inet sejepsen {\n"
	  . " chain in { type filter hook input priority 0; policy accept; iifname != \"lo\" drop; }\n"
	  . " chain out { type filter hook output priority 0; policy accept; oifname != \"lo\" drop; }\n}\n";
	my ($out, $err);
	run([ $self->in_ns($name), 'nft', '-f', '-' ], '<', \$rules, '>', \$out, '2>', \$err)
	  or die "nft in $name: $err";
	$self->{partitioned}{$name} = 1;
}

sub heal
{
	my ($self, @names) = @_;
	@names = keys %{ $self->{partitioned} // {} } unless @names;
	for my $name (@names)
	{
		system($self->in_ns($name), 'nft', 'delete', 'table', 'inet', 'sejepsen');
		delete $self->{partitioned}{$name};
	}
}

# x86_64 system call numbers: mount(2) and umount2(2); the mount(8) binary
# refuses a non-root user even with the capability of its namespace
sub mount_tmpfs
{
	my ($dir, $mb) = @_;
	my ($src, $type, $data) = ('tmpfs', 'tmpfs', "size=${mb}m,mode=0700");
	syscall(165, $src, $dir, $type, 0, $data) == 0 or die "mount tmpfs on $dir: $!";
}

# fill the tmpfs under the node's search_engine directory to its last byte
sub fill_disk
{
	my ($self, $name) = @_;
	my $dir = $self->{tmpfs}{$name} or die "$name has no tmpfs (new_node disk_mb)";
	open(my $fh, '>', "$dir/jepsen.fill") or die "fill: $!";
	my $chunk = "\0" x 65536;
	1 while syswrite($fh, $chunk);
	$chunk = "\0" x 512;
	1 while syswrite($fh, $chunk);
	close $fh;
}

sub free_disk
{
	my ($self, $name) = @_;
	unlink "$self->{tmpfs}{$name}/jepsen.fill";
}

# bytes free on the node's tmpfs
sub disk_free
{
	my ($self, $name) = @_;
	my $out = `df -B1 --output=avail '$self->{tmpfs}{$name}' 2>/dev/null`;
	return ($out =~ /(\d+)\s*$/) ? $1 : -1;
}

# ---- cluster reads

sub req { my ($self, $name, @call) = @_; return SeCluster::request($self->node($name), @call) }

# the routing of an index as $via sees it: [ shard => [ {node, primary, state, allocation_id} ] ]
sub routing
{
	my ($self, $via, $index) = @_;
	my ($st, $body) = $self->req($via, 'GET', '/_cluster/state/routing_table,nodes,metadata');
	return undef unless $st == 200;
	my $sh = $body->{routing_table}{indices}{$index}{shards} or return undef;
	my @r;
	for my $s (sort { $a <=> $b } keys %$sh)
	{
		$r[$s] = [ map { {
			node => $body->{nodes}{ $_->{node} // '' }{name} // '',
			primary => ($_->{primary} ? 1 : 0),
			state => $_->{state},
			allocation_id => ($_->{allocation_id}{id} // ''),
		} } @{ $sh->{$s} } ];
	}
	return { shards => \@r, terms => $body->{metadata}{indices}{$index}{primary_terms} // {} };
}

# the node holding the primary of shard $s
sub primary_node
{
	my ($self, $via, $index, $s) = @_;
	my $r = $self->routing($via, $index) or return '';
	my ($p) = grep { $_->{primary} } @{ $r->{shards}[$s] // [] };
	return $p ? $p->{node} : '';
}

# wait until every copy of $index is STARTED (green); seconds or undef
sub wait_green
{
	my ($self, $via, $index, $seconds) = @_;
	return $self->wait_for("$index green", $seconds, sub {
		my ($st, $b) = $self->req($via, 'GET', "/_cluster/health/$index");
		$st == 200 && $b->{status} eq 'green';
	});
}

# ---- clients

sub psql_cmd
{
	my ($node) = @_;
	return ('psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port, '-d', 'postgres');
}

# Fork a writer per entry of @$targets (node names).  Writer w owns ids
# w<w>-k0 .. w<w>-k<keys-1> and writes each a rising counter n: a bulk of
# two items per call, one call at a time, each with a $timeout seconds
# budget.  Log lines (tab-separated):
#   ack  t_start t_end writer node id n seq_no primary_term
#   ind  t_start t_end writer node id n reason
sub start_writers
{
	my ($self, %o) = @_;
	my $index = $o{index};
	my $keys = $o{keys} // 10;
	my $tmo = $o{timeout} // 5;
	my $stop = "$self->{dir}/writers.stop";
	unlink $stop;
	my @logs;
	my $w = 0;
	for my $target (@{ $o{targets} })
	{
		$w++;
		my $log = "$self->{logdir}/writer$w.$o{tag}.log";
		push @logs, $log;
		my $node = $self->node($target);
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			open(my $fh, '>', $log) or POSIX::_exit(1);
			$fh->autoflush(1);
			my $client = SeJepsen::Client->new($node);
			my $n = 0;
			my $deadline = time + ($o{seconds} // 60) + 30;
			srand($w * 7919 + $$);
			while (!-e $stop && time < $deadline)
			{
				my %ids;
				$ids{ "w$w-k" . int(rand($keys)) } = 1 while keys %ids < 2;
				my @items = map { [ $_, ++$n ] } sort keys %ids;
				my $nd = join('', map { qq({"index":{"_id":"$_->[0]"}}\n{"v":"$_->[0]/$_->[1]","w":$w,"n":$_->[1]}\n) } @items);
				my $t0 = time;
				my ($out, $why) = $client->query("SELECT search_engine.bulk(\$b\$$nd\$b\$, '$index')", $tmo);
				my $t1 = time;
				my $res;
				if (!$why)
				{
					$res = eval { decode_json($out) };
					$why = 'bad answer' unless $res && ref $res->{items} eq 'ARRAY';
				}
				for my $i (0 .. $#items)
				{
					my ($id, $v) = @{ $items[$i] };
					my $it = $why ? undef : $res->{items}[$i]{index};
					if ($it && $it->{_id} eq $id && ($it->{status} == 200 || $it->{status} == 201))
					{
						printf $fh "ack\t%.6f\t%.6f\t%d\t%s\t%s\t%d\t%d\t%d\n", $t0, $t1, $w, $target, $id, $v,
						  $it->{_seq_no}, $it->{_primary_term};
					}
					else
					{
						my $r = $why // ($it ? "status $it->{status} " . ($it->{error}{type} // '') : 'no item');
						$r =~ s/\s+/ /g;
						printf $fh "ind\t%.6f\t%.6f\t%d\t%s\t%s\t%d\t%s\n", $t0, $t1, $w, $target, $id, $v, $r;
					}
				}
				usleep(20_000) if $why;    # do not spin on a dead node
			}
			close $fh;
			POSIX::_exit(0);
		}
		push @KIDS, $pid;
		push @{ $self->{writers} }, $pid;
	}
	return \@logs;
}

sub stop_writers
{
	my ($self) = @_;
	open(my $fh, '>', "$self->{dir}/writers.stop") or die;
	close $fh;
	waitpid($_, 0) for @{ $self->{writers} // [] };
	$self->{writers} = [];
}

# A client holding one psql session open (a connection per call would
# spend most of its time starting backends): query(sql, seconds) gives
# (output, undef) or (undef, 'timeout' | 'error: ...'); after a timeout or
# a lost connection the session is killed and the next call reconnects.
package SeJepsen::Client;

sub new
{
	my ($class, $node) = @_;
	return bless { psql => [ SeJepsen::psql_cmd($node) ] }, $class;
}

sub query
{
	my ($self, $sql, $seconds) = @_;
	if (!$self->{h})
	{
		@$self{qw(in out err)} = ('', '', '');
		$self->{t} = IPC::Run::timeout($seconds);
		# ON_ERROR_STOP off: an error is reported and the session goes on
		my @cmd = grep { $_ ne 'ON_ERROR_STOP=1' && $_ ne '-v' } @{ $self->{psql} };
		$self->{h} = eval { IPC::Run::start(\@cmd, '<', \$self->{in}, '>', \$self->{out}, '2>', \$self->{err}, $self->{t}) };
		return (undef, "error: start: $@") unless $self->{h};
	}
	@$self{qw(out err)} = ('', '');
	$self->{in} .= "$sql;\n\\echo __SEJ_END__\n";
	$self->{t}->start($seconds);
	my $ok = eval {
		$self->{h}->pump until $self->{out} =~ /__SEJ_END__\n/;
		1;
	};
	if (!$ok)
	{
		my $why = $@ =~ /timeout/i ? 'timeout' : 'error: session lost';
		eval { $self->{h}->kill_kill(grace => 1) };
		$self->{h} = undef;
		return (undef, $why);
	}
	(my $out = $self->{out}) =~ s/__SEJ_END__\n//;
	if ($self->{err} =~ /\S/)
	{
		(my $e = $self->{err}) =~ s/\s+/ /g;
		return (undef, 'error: ' . substr($e, 0, 200));
	}
	return ($out, undef);
}

package SeJepsen;

# Fork a poller per node: every $every seconds, its applied cluster-state
# version and the index's primary terms.  Log lines: t node version terms
sub start_pollers
{
	my ($self, %o) = @_;
	my $log = "$self->{logdir}/poll.$o{tag}.log";
	my $stop = "$self->{dir}/pollers.stop";
	unlink $stop;
	for my $name ($self->node_names)
	{
		my $node = $self->node($name);
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			my $client = SeJepsen::Client->new($node);
			my $deadline = time + ($o{seconds} // 60) + 60;
			my $sql = "SELECT (body->>'version') || ' ' || coalesce((body->'metadata'->'indices'->'$o{index}'->'primary_terms')::text, '{}') "
			  . "FROM search_engine.request('GET', '/_cluster/state/version,metadata', NULL)";
			while (!-e $stop && time < $deadline)
			{
				my $t = time;
				my ($out) = $client->query($sql, 2);
				if (defined $out && $out =~ /^(\d+) (\{.*\})\s*$/)
				{
					open(my $fh, '>>', $log) or POSIX::_exit(1);
					printf $fh "%.6f\t%s\t%s\t%s\n", $t, $name, $1, $2;
					close $fh;
				}
				usleep(($o{every} // 0.5) * 1e6);
			}
			POSIX::_exit(0);
		}
		push @KIDS, $pid;
		push @{ $self->{pollers} }, $pid;
	}
	return $log;
}

sub stop_pollers
{
	my ($self) = @_;
	open(my $fh, '>', "$self->{dir}/pollers.stop") or die;
	close $fh;
	waitpid($_, 0) for @{ $self->{pollers} // [] };
	$self->{pollers} = [];
}

# ---- reading the outcome

sub read_log
{
	my (@files) = @_;
	my @ops;
	for my $f (@files)
	{
		open(my $fh, '<', $f) or next;
		while (<$fh>)
		{
			chomp;
			my @f = split /\t/;
			if ($f[0] eq 'ack')
			{
				push @ops, { ack => 1, t0 => $f[1], t1 => $f[2], w => $f[3], node => $f[4], id => $f[5],
					n => $f[6], seq_no => $f[7], term => $f[8] };
			}
			elsif ($f[0] eq 'ind')
			{
				push @ops, { ack => 0, t0 => $f[1], t1 => $f[2], w => $f[3], node => $f[4], id => $f[5],
					n => $f[6], reason => $f[7] };
			}
		}
	}
	return \@ops;
}

sub read_polls
{
	my ($file) = @_;
	my @p;
	open(my $fh, '<', $file) or return \@p;
	while (<$fh>)
	{
		chomp;
		my ($t, $node, $v, $terms) = split /\t/;
		push @p, { t => $t, node => $node, version => $v, terms => eval { decode_json($terms) } // {} };
	}
	return \@p;
}

# every id written, read through $via (realtime get): { id => {n, seq_no,
# term} }; an id whose get failed or found nothing is absent
sub read_final
{
	my ($self, $via, $index, $ids) = @_;
	my $sql = join('', map { "SELECT '$_' || '\t' || search_engine.get_doc('$index', '$_')::text;\n" } @$ids);
	my ($out, $err) = ('', '');
	my @psql = grep { $_ ne 'ON_ERROR_STOP=1' && $_ ne '-v' } psql_cmd($self->node($via));
	eval { run([ @psql, '-f', '-' ], '<', \$sql, '>', \$out, '2>', \$err, timeout(120)) };
	my %final;
	for my $line (split /\n/, $out)
	{
		my ($id, $json) = split /\t/, $line, 2;
		my $d = eval { decode_json($json) } or next;
		next unless $d->{found};
		$final{$id} = { n => $d->{_source}{n}, seq_no => $d->{_seq_no}, term => $d->{_primary_term} };
	}
	return \%final;
}

# the copies of $index on node $name, read there alone (ES preference, by
# default _only_local; "_shards:S|_only_local" for one shard's copy):
# { id => "seq/term/n" }, or undef when the node cannot restrict a search
# to its own copies (the answer counts other than $expect_shards shards)
# or does not return _seq_no (seq_no_primary_term)
sub read_local_copy
{
	my ($self, $name, $index, $expect_shards, $preference) = @_;
	$preference //= '_only_local';
	$preference =~ s/\|/%7C/g;
	my ($st, $b) = $self->req($name, 'GET', "/$index/_search?preference=$preference&size=10000",
		'{"query":{"match_all":{}},"seq_no_primary_term":true}');
	return undef unless $st == 200 && ref $b->{hits}{hits} eq 'ARRAY';
	return undef if defined $expect_shards && ($b->{_shards}{total} // -1) != $expect_shards;
	my %c;
	for my $h (@{ $b->{hits}{hits} })
	{
		return undef unless defined $h->{_seq_no};
		$c{ $h->{_id} } = "$h->{_seq_no}/$h->{_primary_term}/$h->{_source}{n}";
	}
	return \%c;
}

# ---- the checker: each returns a list of violations (strings)

# Every acknowledged write is readable with its last acknowledged value.
# Writes of one id are sequential (one writer owns it), so the final value
# must be the last acknowledged one, or a write that was not acknowledged
# (indeterminate: it may have happened) and then with a higher _seq_no than
# the last acknowledgement.  That write may have been sent before the last
# acknowledged one: an indeterminate write takes effect at any time after
# it was sent (Jepsen's "info"), e.g. one that timed out at the client
# while held by an isolated coordinating node, which forwards it once the
# partition heals (ES's bulk waits for its shard up to `timeout` too) --
# its higher _seq_no says it came after.
sub check_acked
{
	my ($ops, $final) = @_;
	my (%last, %ind);
	for my $op (sort { $a->{n} <=> $b->{n} } @$ops)
	{
		if ($op->{ack}) { $last{ $op->{id} } = $op }
		else { $ind{ $op->{id} }{ $op->{n} } = 1 }
	}
	my @bad;
	for my $id (sort keys %last)
	{
		my $l = $last{$id};
		my $f = $final->{$id};
		if (!$f)
		{
			push @bad, "lost: $id acknowledged n=$l->{n} (seq_no $l->{seq_no}, term $l->{term}) is not readable";
			next;
		}
		next if $f->{n} == $l->{n} && $f->{seq_no} == $l->{seq_no} && $f->{term} == $l->{term};
		next if $ind{$id}{ $f->{n} } && $f->{seq_no} > $l->{seq_no};
		push @bad, "stale: $id reads n=$f->{n} (seq_no $f->{seq_no}, term $f->{term}), last acknowledged "
		  . "n=$l->{n} (seq_no $l->{seq_no}, term $l->{term})";
	}
	return @bad;
}

# All copies of each shard identical: $copies = { node => { id => "seq/term/n" } }
# restricted by the caller to the nodes holding a copy of one shard
sub check_copies
{
	my ($label, $copies) = @_;
	my @nodes = sort keys %$copies;
	my @bad;
	my %ids = map { %{ $copies->{$_} } } @nodes;
	for my $id (sort keys %ids)
	{
		my %seen = map { $_ => $copies->{$_}{$id} // 'missing' } @nodes;
		my %distinct = map { $_ => 1 } values %seen;
		push @bad, "$label: copies differ on $id: " . join(', ', map { "$_=$seen{$_}" } @nodes)
		  if keys %distinct > 1;
	}
	return @bad;
}

# An isolated old primary acknowledged nothing after the promotion: no write
# acknowledged under term T of a shard that started after any node had
# already applied a higher term of that shard.  $shard_of = { id => shard }.
sub check_old_primary
{
	my ($ops, $polls, $shard_of) = @_;
	my %promoted;    # shard => [ [t, term] ] first time each term was seen
	for my $p (sort { $a->{t} <=> $b->{t} } @$polls)
	{
		for my $s (keys %{ $p->{terms} })
		{
			my $term = $p->{terms}{$s};
			$promoted{$s}{$term} //= $p->{t};
		}
	}
	my @bad;
	for my $op (grep { $_->{ack} } @$ops)
	{
		my $s = $shard_of->{ $op->{id} } // next;
		for my $term (keys %{ $promoted{$s} // {} })
		{
			next unless $term > $op->{term} && $promoted{$s}{$term} < $op->{t0};
			push @bad, sprintf("old primary: %s acknowledged under term %d (seq_no %d) by a request sent %.3fs "
				  . "after shard %s's term %d was applied", $op->{id}, $op->{term}, $op->{seq_no},
				$op->{t0} - $promoted{$s}{$term}, $s, $term);
			last;
		}
	}
	return @bad;
}

# Each node's applied cluster-state version never went backwards
sub check_versions
{
	my ($polls) = @_;
	my (%last, @bad);
	for my $p (sort { $a->{t} <=> $b->{t} } @$polls)
	{
		my $l = $last{ $p->{node} };
		push @bad, sprintf("version: %s went back from %d to %d at %.3f", $p->{node}, $l, $p->{version}, $p->{t})
		  if defined $l && $p->{version} < $l;
		$last{ $p->{node} } = $p->{version};
	}
	return @bad;
}

# counts for the report: acknowledged / indeterminate ops
sub summary
{
	my ($ops) = @_;
	my $acks = grep { $_->{ack} } @$ops;
	return sprintf('%d acknowledged, %d indeterminate', $acks, @$ops - $acks);
}

# what the run looked like: the most frequent reasons of indeterminate
# writes, and the primary terms each shard went through (from the polls)
sub describe
{
	my ($ops, $polls) = @_;
	my %why;
	for my $op (grep { !$_->{ack} } @$ops)
	{
		(my $r = $op->{reason}) =~ s/\[[\w-]{22}\]/[<uuid>]/g;
		$r =~ s/\b\d+\b/N/g unless $r =~ /^status/;
		$why{ substr($r, 0, 140) }++;
	}
	my @top = sort { $why{$b} <=> $why{$a} } keys %why;
	my @lines = map { "  $why{$_} x $_" } @top[0 .. ($#top > 4 ? 4 : $#top)];
	my %terms;
	for my $p (@$polls)
	{
		$terms{$_}{ $p->{terms}{$_} } = 1 for keys %{ $p->{terms} };
	}
	push @lines, '  primary terms seen: ' . join(', ', map { "shard $_: " . join('/', sort { $a <=> $b } keys %{ $terms{$_} }) } sort keys %terms);
	return join("\n", 'indeterminate writes by reason:', @lines);
}

# ES's routing of an _id to a shard (Murmur3HashFunction over the id's
# UTF-16 code units, floorMod by the routing shards, divided by the routing
# factor; the C twin is util/hash.c), so that the checker knows each
# acknowledged write's shard without asking the cluster
sub mul32
{
	my ($x, $y) = @_;
	return (($x * ($y & 0xffff)) + ((($x * ($y >> 16)) & 0xffff) << 16)) & 0xffffffff;
}

sub rotl32
{
	my ($x, $r) = @_;
	return (($x << $r) | ($x >> (32 - $r))) & 0xffffffff;
}

sub shard_of_id
{
	my ($id, $nshards, $rns) = @_;
	if (!$rns)
	{
		my $log2 = 0;
		$log2++ while (1 << $log2) < $nshards;
		my $splits = 10 - $log2;
		$splits = 1 if $splits < 1;
		$rns = $nshards << $splits;
	}
	require Encode;
	my @b = unpack('C*', Encode::encode('UTF-16LE', $id));
	my ($h, $i, $len) = (0, 0, scalar @b);
	my $mix = sub {
		my $k = mul32($_[0], 0xcc9e2d51);
		$k = rotl32($k, 15);
		return mul32($k, 0x1b873593);
	};
	for (; $i + 4 <= $len; $i += 4)
	{
		$h ^= $mix->($b[$i] | ($b[ $i + 1 ] << 8) | ($b[ $i + 2 ] << 16) | ($b[ $i + 3 ] << 24));
		$h = rotl32($h, 13);
		$h = (mul32($h, 5) + 0xe6546b64) & 0xffffffff;
	}
	my $rem = $len & 3;
	if ($rem)
	{
		my $k = $b[$i];
		$k |= $b[ $i + 1 ] << 8 if $rem >= 2;
		$k |= $b[ $i + 2 ] << 16 if $rem >= 3;
		$h ^= $mix->($k);
	}
	$h ^= $len;
	$h ^= $h >> 16;
	$h = mul32($h, 0x85ebca6b);
	$h ^= $h >> 13;
	$h = mul32($h, 0xc2b2ae35);
	$h ^= $h >> 16;
	my $signed = $h >= 2**31 ? $h - 2**32 : $h;
	return int(($signed % $rns) / ($rns / $nshards));
}

sub teardown
{
	my ($self) = @_;
	$self->heal if $self->{netns};
	$self->resume($_) for keys %{ $self->{paused} // {} };
	$self->SUPER::teardown;
}

END
{
	# waitpid below would overwrite the test's exit status
	local $?;
	if ($$ == $OWNER)
	{
		# a stopped postmaster would never act on the immediate shutdown
		# that PostgreSQL::Test::Cluster's END sends it
		kill 'CONT', keys %PAUSED;
		kill 'KILL', keys %ETCD;
		kill 'KILL', @KIDS, @HOLDERS;
		waitpid($_, 0) for @KIDS, @HOLDERS;
	}
}

1;
