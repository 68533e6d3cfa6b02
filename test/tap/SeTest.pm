# SeTest.pm: helpers for search_engine's Perl TAP tests.
#
# Starts PostgreSQL::Test::Cluster nodes with search_engine preloaded and
# handles this machine's quirk: after kill -9 the postmaster can linger as a
# zombie whose pid still looks alive, so we wait for it (and clear its stale
# lock files once it is a zombie) before restarting.
package SeTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

sub new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $conf = "shared_preload_libraries = 'search_engine'\n"
	  . "search_engine.database = 'postgres'\n"
	  . "max_worker_processes = 16\n"
	  . "search_engine.write_threads = " . ($opts{write_threads} // 2) . "\n";
	# extra: more settings, or a sub that makes them from the node (its port)
	$conf .= ref $opts{extra} eq 'CODE' ? $opts{extra}->($node) : $opts{extra}
	  if $opts{extra};
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION search_engine');
	return $node;
}

sub proc_state
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return 'gone';
	while (<$fh>)
	{
		return $1 if /^State:\s+(\S)/;
	}
	return 'gone';
}

# kill -9 the postmaster and all its children, as a crash would.  Safe to
# call from a forked child; the parent then calls after_crash.
sub crash
{
	my ($node) = @_;
	my $pid = postmaster_pid($node) or return;
	my @children = grep { /^\d+$/ } split /\s+/, `pgrep -P $pid 2>/dev/null`;
	kill 'KILL', $pid, @children;
}

sub postmaster_pid
{
	my ($node) = @_;
	open(my $fh, '<', $node->data_dir . '/postmaster.pid') or return undef;
	my $pid = <$fh>;
	close $fh;
	chomp $pid if defined $pid;
	return $pid;
}

# Wait until the killed server's processes are gone or zombies, then clear
# the stale lock files a zombie postmaster leaves looking alive.
sub after_crash
{
	my ($node) = @_;
	my $pid = postmaster_pid($node);
	if (defined $pid)
	{
		for my $i (1 .. 600)
		{
			my @left = grep { my $st = proc_state($_); $st ne 'gone' && $st ne 'Z' }
			  ($pid, split(/\s+/, `pgrep -P $pid 2>/dev/null`));
			@left = grep { /^\d+$/ } @left;
			last unless @left;
			kill 'KILL', @left;
			usleep(50_000);
		}
	}
	unlink $node->data_dir . '/postmaster.pid';
	my $port = $node->port;
	my $host = $node->host;
	unlink "$host/.s.PGSQL.$port.lock";
	unlink "$host/.s.PGSQL.$port";
	$node->{_pid} = undef;
}

# Wait until every index is at least yellow (shards started).
sub wait_ready
{
	my ($node) = @_;
	$node->safe_psql('postgres',
		"SELECT search_engine.cluster_health(NULL, 'yellow', 60000)");
}

1;
