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
use SeHttp;

# A node with the HTTP server on a free port (SeHttp), anonymous requests
# running as postgres (these tests are about the clients, TAP 321 about
# auth); returns the node, its base URL and port once GET / answers.
sub http_node
{
	my ($name, %opts) = @_;
	my ($node, $port) = SeHttp::new_node($name,
		"search_engine.http_workers = 2\n"
		  . "search_engine.http_anonymous_role = 'postgres'\n"
		  . "search_engine.write_threads = " . ($opts{write_threads} // 2) . "\n"
		  . ($opts{extra} // ''));
	my $base = "http://127.0.0.1:$port";
	BAIL_OUT("the HTTP server on $base does not answer") unless SeHttp::wait_http("$base/");
	return ($node, $base, $port);
}

# curl with these arguments (each passed as one word): (status, body)
sub curl
{
	my (@args) = @_;
	my ($status, $head, $body) = SeHttp::curl(map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @args);
	return ($status, $body);
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
