# SeClients.pm: helpers for the real-client tests (TAP 330-339): a node
# serving HTTP on a free port, curl, and running a client program whose
# figures come back as "name value" lines.
package SeClients;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;
use SeTest;

# A node with the HTTP server on a free port, anonymous requests running as
# postgres (these tests are about the clients, TAP 321 about auth); returns
# the node and its base URL once GET / answers.
sub http_node
{
	my ($name, %opts) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $extra = qq{
search_engine.http_port = $port
search_engine.http_listen_addresses = '127.0.0.1'
search_engine.http_workers = 2
search_engine.http_anonymous_role = 'postgres'
} . ($opts{extra} // '');
	my $node = SeTest::new_node($name, write_threads => $opts{write_threads} // 2,
		extra => $extra);
	my $base = "http://127.0.0.1:$port";
	my $up = 0;
	for (1 .. 150)
	{
		my ($st) = curl("$base/");
		if ($st == 200) { $up = 1; last; }
		select(undef, undef, undef, 0.2);
	}
	BAIL_OUT("the HTTP server on $base does not answer") unless $up;
	return ($node, $base, $port);
}

# curl: (status, body)
sub curl
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-s', '-S', '--max-time', '60', '-w', '\n%{http_code}', @args ],
		'>', \$out, '2>', \$err);
	my ($body, $status) = $out =~ /\A(.*)\n(\d+)\z/s;
	return ($status // 0, $body // '');
}

# Run a client program (argv), return (exit code, stdout, stderr) after at
# most $timeout seconds.
sub run_client
{
	my ($timeout, @cmd) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout));
	if (!eval { $h->finish; 1 })
	{
		$h->kill_kill;
		return (-1, $out, "$err\n(timed out after $timeout s: $@)");
	}
	return ($h->result(0), $out, $err);
}

# The "name value" lines a client program printed, as a hash.
sub figures
{
	my ($out) = @_;
	my %f;
	for (split /\n/, $out)
	{
		$f{$1} = $2 if /^(\S+) (.*)$/;
	}
	return \%f;
}

# A count of documents through SQL (the same engine, not the client).
sub sql_count
{
	my ($node, $index, $query) = @_;
	$node->safe_psql('postgres', qq{SELECT search_engine.refresh('$index')});
	my $body = $query ? ", '$query'" : '';
	return $node->safe_psql('postgres',
		qq{SELECT (body->>'count')::bigint FROM search_engine.request('POST', '/$index/_count'$body)});
}

1;
