# SeHttp.pm: helpers for the HTTP server's TAP tests (320-339): a node
# serving HTTP, curl against it.
package SeHttp;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use SeTest;

# A node with the HTTP server on a free port; extra: more postgresql.conf
# lines.  Returns (node, port).
sub new_node
{
	my ($name, $extra) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $node = SeTest::new_node($name, extra => "search_engine.http_port = $port\n"
		  . "search_engine.http_listen_addresses = '127.0.0.1'\n" . ($extra // ''));
	return ($node, $port);
}

# curl with these arguments: (status, headers, body); status 0 when no
# HTTP answer came (curl's error is then in the headers).  A 100 Continue
# is skipped.
sub curl
{
	my (@args) = @_;
	my $out = `curl -s -S -i --max-time 60 @args 2>&1`;
	my ($head, $body) = split /\r\n\r\n/, $out, 2;
	($head, $body) = split /\r\n\r\n/, $body, 2
	  while defined $head && $head =~ m{^HTTP/1\.1 100} && defined $body;
	my ($status) = ($head // '') =~ m{^HTTP/\S+ (\d+)};
	return ($status // 0, $head // '', $body // '');
}

# Wait until url answers anything over HTTP (curl options after it).
sub wait_http
{
	my ($url, @opts) = @_;
	for (1 .. 150)
	{
		my ($st) = curl(@opts, $url);
		return 1 if $st > 0;
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

1;
