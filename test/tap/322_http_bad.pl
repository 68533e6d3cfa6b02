# Bad HTTP and overload against the HTTP server: malformed request lines,
# oversized headers, truncated and invalid chunked bodies, a slowloris
# client, connections and requests in flight past their limits (429), an
# ERROR inside a request (cancelled) -- clear answers, other clients
# unaffected, the worker alive throughout (same process).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time usleep);
use SeTest;
use SeHttp;

my ($node, $port) = SeHttp::new_node('bad', qq{search_engine.http_workers = 1
search_engine.http_anonymous_role = 'postgres'
search_engine.http_request_timeout = '2s'
search_engine.http_max_connections = 4
});
my $base = "http://127.0.0.1:$port";
my $dir = $PostgreSQL::Test::Utils::tmp_check;

sub curl { return SeHttp::curl(@_); }

sub alive
{
	my ($st, $h, $b) = curl("$base/");
	return $st == 200 && $b =~ /cluster_name/;
}

# send raw bytes, read the answer until the server closes or timeout
sub raw
{
	my ($bytes, $timeout) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die "connect: $!";
	local $SIG{PIPE} = 'IGNORE';
	syswrite($s, $bytes);
	shutdown($s, 1);
	my $resp = '';
	my $end = time + ($timeout // 10);
	while (time < $end)
	{
		my $rin = '';
		vec($rin, fileno($s), 1) = 1;
		last unless select($rin, undef, undef, $end - time);
		my $n = sysread($s, my $buf, 65536);
		last unless $n;
		$resp .= $buf;
	}
	close $s;
	return $resp;
}

sub http_pids
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity WHERE backend_type = 'search_engine http'});
}

my $ok = 0;
for (1 .. 100) { if (alive()) { $ok = 1; last; } usleep(200_000); }
ok($ok, 'the HTTP server answers');
my $pids = http_pids();
like($pids, qr/^\d+$/, 'one HTTP worker runs');

# malformed request line, bad method token, oversized headers
like(raw("THIS IS NOT HTTP AT ALL\r\n\r\n"), qr{^(HTTP/1\.1 400|)}, 'a malformed request line: 400 or closed');
ok(alive(), 'the server answers after it');
my $r = raw("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " . ('a' x 200_000) . "\r\n\r\n");
like($r, qr{^(HTTP/1\.1 4\d\d|)}, 'oversized headers: a 4xx or closed, never served');
unlike($r, qr/cluster_name/, 'the oversized request was not served');
ok(alive(), 'the server answers after it');

# chunked bodies: truncated (client goes away), invalid chunk size
my $before = $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity});
$r = raw("POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{\"index\":{\"_index\":\"t\"}}\n", 3);
unlike($r, qr{HTTP/1\.1 200}, 'a truncated chunked body is not answered 200');
$r = raw("POST /_bulk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n");
like($r, qr{^(HTTP/1\.1 400|)}, 'an invalid chunk size: 400 or closed');
ok(alive(), 'the server answers after them');
my ($st, $h, $b) = curl("$base/t/_count");
is($st, 404, 'the truncated bulk created nothing');

# slowloris: one header line every 0.4 s; http_request_timeout is 2 s
my $slow = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die;
$SIG{PIPE} = 'IGNORE';
syswrite($slow, "GET / HTTP/1.1\r\nHost: x\r\n");
my $t0 = time;
my ($served_fast, $closed_at) = (0, undef);
while (time - $t0 < 10)
{
	usleep(400_000);
	if (!$served_fast && time - $t0 > 0.8)
	{
		my $t = time;
		my ($st) = curl("$base/");
		$served_fast = ($st == 200 && time - $t < 1.5) ? 1 : -1;
	}
	my $n = syswrite($slow, "X-Slow: a\r\n");
	my $rin = '';
	vec($rin, fileno($slow), 1) = 1;
	if (!defined $n || (select($rin, undef, undef, 0) && !sysread($slow, my $buf, 100)))
	{
		$closed_at = time - $t0;
		last;
	}
}
close $slow;
is($served_fast, 1, 'another client is served at once while the slowloris dribbles');
ok(defined $closed_at && $closed_at < 6, 'the slowloris connection is closed after http_request_timeout ('
	  . ($closed_at // 'never') . ' s)');

# http_max_connections = 4: four open connections, a fifth's request gets 429
my @hold = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die } 1 .. 4;
usleep(300_000);
($st, $h, $b) = curl("$base/");
is($st, 429, 'a connection past http_max_connections: 429');
like($b, qr/"type":"es_rejected_execution_exception"/, 'with es_rejected_execution_exception');
like($h, qr/^Connection: close\r?$/mi, 'and that connection is closed');
close $_ for @hold;
usleep(300_000);
ok(alive(), 'served again once connections closed');

# http_max_in_flight = 1: concurrent slow requests, the excess ones 429
my $bulk = join('', map { qq({"index":{"_index":"f","_id":"$_"}}\n{"n":$_,"t":"text number $_ of many"}\n) } 1 .. 4000);
open(my $fh, '>', "$dir/f.ndjson") or die;
print $fh $bulk;
close $fh;
$node->append_conf('postgresql.conf', "search_engine.http_max_in_flight = 1\nsearch_engine.http_max_connections = 64\n");
$node->reload;
usleep(500_000);
# A burst on one worker: six bulks written at once, round robin on six
# connections that never block, so the worker reads their request lines
# and first pieces together while it receives the first one's body.  The
# first is f.ndjson (~320 kB), the others $other_kb kB each.  Returns
# (statuses, bodies).
sub burst
{
	my ($other_kb) = @_;
	my $other = join('', map { '{"index":{"_index":"f","_id":"s' . $_ . '"}}' . "\n" . '{"n":' . $_ . ',"t":"' . ('x' x 1000) . '"}' . "\n" } 1 .. $other_kb);
	my @req = map {
		my $body = $_ == 0 ? slurp_file("$dir/f.ndjson") : $other;
		"POST /_bulk?refresh=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n"
		  . "Content-Length: " . length($body) . "\r\n\r\n" . $body
	} 0 .. 5;
	my @socks = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Blocking => 0) or die } 0 .. 5;
	my @off = (0) x 6;
	my @resp = ('') x 6;
	my $done = sub {
		my ($r) = @_;
		return 0 unless $r =~ /^(.*?)\r\n\r\n/s;
		my ($cl) = $1 =~ /^Content-Length: (\d+)/mi;
		return length($r) >= length($1) + 4 + ($cl // 0);
	};
	my $end = time + 60;
	while (time < $end && grep { !$done->($resp[$_]) } 0 .. 5)
	{
		my $progress = 0;
		for my $i (0 .. 5)
		{
			if ($off[$i] < length($req[$i]))
			{
				my $n = syswrite($socks[$i], $req[$i], 65536, $off[$i]);
				if ($n) { $off[$i] += $n; $progress = 1; }
			}
			my $n = sysread($socks[$i], my $buf, 65536);
			if ($n) { $resp[$i] .= $buf; $progress = 1; }
		}
		usleep(2000) unless $progress;
	}
	close $_ for @socks;
	return ([ map { /^HTTP\/1\.1 (\d+)/ ? $1 : 0 } @resp ], [ map { (split /\r\n\r\n/, $_, 2)[1] // '' } @resp ]);
}
my ($codes, $outs) = burst(4);
note("in-flight statuses: @$codes");
ok((grep { $_ eq '429' } @$codes) > 0, 'requests past http_max_in_flight: 429');
ok((grep { $_ eq '200' } @$codes) > 0, 'the others are served');
ok((grep { /es_rejected_execution_exception/ } @$outs) > 0, 'a 429 carries es_rejected_execution_exception');

# http_max_in_flight_bytes 500 kB: room for the first body (~320 kB), not
# for one of the others (~210 kB) beside it
$node->append_conf('postgresql.conf', "search_engine.http_max_in_flight = 128\nsearch_engine.http_max_in_flight_bytes = '500kB'\n");
$node->reload;
usleep(500_000);
($codes, $outs) = burst(200);
note("in-flight bytes statuses: @$codes");
ok((grep { $_ eq '429' } @$codes) > 0, 'bodies past http_max_in_flight_bytes: 429');
ok((grep { $_ eq '200' } @$codes) > 0, 'the others are served');
ok((grep { /circuit_breaking_exception/ } @$outs) > 0, 'as ES\'s in_flight_requests breaker: circuit_breaking_exception');
$node->append_conf('postgresql.conf', "search_engine.http_max_in_flight_bytes = '512MB'\n");

# an ERROR inside a request (cancelled mid-bulk): ES's error body, worker lives
$node->append_conf('postgresql.conf', "search_engine.http_max_in_flight = 128\n");
$node->reload;
usleep(500_000);
my $big = join('', map { qq({"index":{"_index":"g","_id":"$_"}}\n{"n":$_,"t":"text number $_ of many more"}\n) } 1 .. 60000);
open($fh, '>', "$dir/g.ndjson") or die;
print $fh $big;
close $fh;
$node->append_conf('postgresql.conf', "search_engine.http_max_content_length = '200MB'\n");
$node->reload;
usleep(500_000);
my $kid = fork();
if ($kid == 0)
{
	my $code = `curl -s -o $dir/cancel.out -w '%{http_code}' --max-time 120 -H 'Content-Type: application/x-ndjson' --data-binary \@$dir/g.ndjson '$base/_bulk?refresh=true'`;
	open(my $o, '>', "$dir/cancel.code");
	print $o $code;
	close $o;
	POSIX::_exit(0);
}
# while it runs, a request queues behind it and its client goes away
my $active = 0;
for (1 .. 500)
{
	$active = $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'search_engine http' AND state = 'active' AND query LIKE 'POST /_bulk%'});
	last if $active;
	usleep(10_000);
}
my $gone_log = -s $node->logfile;
my $gone = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die;
my $gone_body = qq({"index":{"_index":"gone","_id":"1"}}\n{"n":1}\n);
print $gone "POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: "
  . length($gone_body) . "\r\n\r\n$gone_body";
close $gone;
usleep(200_000);
my $cancelled = 0;
for (1 .. 200)
{
	my $res = $node->safe_psql('postgres',
		q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE backend_type = 'search_engine http' AND state = 'active' AND query LIKE 'POST /_bulk%'});
	if ($res eq 't') { $cancelled = 1; last; }
	usleep(20_000);
}
waitpid($kid, 0);
ok($cancelled, 'the running request was cancelled');
my $code = slurp_file("$dir/cancel.code");
my $out = -s "$dir/cancel.out" ? slurp_file("$dir/cancel.out") : '';
note("cancelled bulk: $code $out");
ok($code eq '400' && $out =~ /"type":"task_cancelled_exception"/ || $code eq '200',
	'the cancelled request is answered with ES\'s error body (or finished first)');
ok(alive(), 'the server answers after the ERROR');
ok($active, 'the bulk was seen running when the other client came and went');
($st, $h, $b) = curl("$base/gone/_count");
is($st, 404, 'the request whose client left while it was queued never ran');
like(slurp_file($node->logfile, $gone_log), qr{POST /_bulk from 127\.0\.0\.1 not run: the client closed the connection},
	'and the server says so');
# nothing above left a request counted in flight: with a limit of 1 a
# leaked count would refuse every request
$node->append_conf('postgresql.conf', "search_engine.http_max_in_flight = 1\n");
$node->reload;
usleep(500_000);
my @serial = map { my ($s) = curl("$base/"); $s } 1 .. 5;
is("@serial", '200 200 200 200 200', 'no request left counted in flight by the bad ones');
is(http_pids(), $pids, 'the same HTTP worker process served everything (never died)');

done_testing();
