# The HTTP server (src/http/): the REST API over HTTP/1.1 answers as
# search_engine.request() does, with ES's headers, keep-alive, pipelining,
# HEAD, gzip both ways, chunked uploads and the body limit (413).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use JSON::PP;
use CBOR::XS;
use IO::Compress::Gzip qw(gzip);
use IO::Uncompress::Gunzip qw(gunzip);
use SeTest;
use SeHttp;

my ($node, $port) = SeHttp::new_node('http', qq{search_engine.http_workers = 2
search_engine.http_anonymous_role = 'postgres'
search_engine.http_max_content_length = '64kB'
});
my $base = "http://127.0.0.1:$port";

sub curl { return SeHttp::curl(@_); }
ok(SeHttp::wait_http("$base/"), 'the HTTP server answers');

my ($st, $h, $b) = curl("$base/");
is($st, 200, 'GET / is 200');
like($b, qr/"cluster_name"/, 'GET / names the cluster');
like($b, qr/"number":"8\./, 'GET / reports an 8.x version');
like($h, qr/^X-Elastic-Product: Elasticsearch\r?$/mi, 'X-Elastic-Product header');
like($h, qr{^Content-Type: application/json\r?$}mi, 'application/json');
($st, $h, $b) = curl("-H 'X-Opaque-Id: trace-42' $base/");
like($h, qr/^X-Opaque-Id: trace-42\r?$/mi, 'X-Opaque-Id echoed, as ES does');

# the same answers as request()
($st, $h, $b) = curl("$base/nosuchindex/_search");
is($st, 404, 'a missing index is 404 over HTTP');
my $sql = $node->safe_psql('postgres', q{SELECT status FROM search_engine.request('GET', '/nosuchindex/_search')});
is($st, $sql, 'same status as request()');
like($b, qr/"type":"index_not_found_exception"/, 'ES error body');
($st, $h, $b) = curl("-X PATCH $base/_search");
is($st, 405, 'a method the route does not take: 405 from the router');
($st, $h, $b) = curl("-X POST $base/");
is($st, 405, 'POST /: 405');
like($h, qr/^Allow: GET,HEAD\r?$/mi, 'with ES\'s Allow header');
($st, $h, $b) = curl("-X OPTIONS $base/");
is($st, 200, 'OPTIONS: 200');
like($h, qr/^Allow: GET,HEAD\r?$/mi, 'OPTIONS lists the methods in Allow');

# bulk then search
my $bulk = join('', map { qq({"index":{"_index":"h","_id":"$_"}}\n{"n":$_,"t":"word$_ common"}\n) } 1 .. 200);
open(my $fh, '>', "$PostgreSQL::Test::Utils::tmp_check/bulk.ndjson") or die;
print $fh $bulk;
close $fh;
($st, $h, $b) = curl("-H 'Content-Type: application/x-ndjson' --data-binary \@$PostgreSQL::Test::Utils::tmp_check/bulk.ndjson '$base/_bulk?refresh=true'");
is($st, 200, 'bulk over HTTP');
like($b, qr/"errors":false/, 'bulk without errors');
($st, $h, $b) = curl("-H 'Content-Type: application/json' -d '{\"query\":{\"match\":{\"t\":\"word7\"}}}' $base/h/_search");
is($st, 200, 'search over HTTP');
like($b, qr/"_id":"7"/, 'search finds the document');
($st, $h, $b) = curl("'$base/h/_count?q=t:common'");
like($b, qr/"count":200/, 'all 200 documents indexed (query string passed through)');

# HEAD: same status and headers, no body
($st, $h, $b) = curl("-I $base/h");
is($st, 200, 'HEAD an existing index: 200');
is($b, '', 'HEAD has no body');
($st, $h, $b) = curl("-I $base/nosuch");
is($st, 404, 'HEAD a missing index: 404');

# gzip response when accepted, gzip request body
($st, $h, $b) = curl("-H 'Accept-Encoding: gzip' $base/");
like($h, qr/^Content-Encoding: gzip\r?$/mi, 'gzip response when accepted');
my $plain;
gunzip(\$b => \$plain);
like($plain, qr/"cluster_name"/, 'the gzip body inflates to the answer');
my $gz;
gzip(\qq({"index":{"_index":"h","_id":"gz"}}\n{"n":-1,"t":"zipped"}\n) => \$gz);
open($fh, '>', "$PostgreSQL::Test::Utils::tmp_check/bulk.gz") or die;
binmode $fh;
print $fh $gz;
close $fh;
($st, $h, $b) = curl("-H 'Content-Encoding: gzip' -H 'Content-Type: application/x-ndjson' --data-binary \@$PostgreSQL::Test::Utils::tmp_check/bulk.gz '$base/_bulk?refresh=true'");
is($st, 200, 'gzip request body accepted');
($st, $h, $b) = curl("'$base/h/_count?q=t:zipped'");
like($b, qr/"count":1/, 'the gzipped document is indexed');
($st, $h, $b) = curl("-H 'Content-Encoding: gzip' --data-binary 'not gzip at all' '$base/_bulk'");
is($st, 400, 'invalid gzip: 400');
like($b, qr/gzip/, 'invalid gzip: the error says so');

# chunked upload
($st, $h, $b) = curl("-H 'Transfer-Encoding: chunked' -H 'Content-Type: application/x-ndjson' --data-binary \@$PostgreSQL::Test::Utils::tmp_check/bulk.ndjson '$base/_bulk?refresh=true'");
is($st, 200, 'chunked bulk over HTTP');
like($b, qr/"errors":false/, 'chunked bulk without errors');

# 413 past http_max_content_length (64kB): announced and chunked
my $big = "$PostgreSQL::Test::Utils::tmp_check/big.ndjson";
open($fh, '>', $big) or die;
print $fh $bulk x 10;
close $fh;
($st, $h, $b) = curl("-H 'Content-Type: application/x-ndjson' --data-binary \@$big '$base/_bulk'");
is($st, 413, 'a body over the limit: 413');
($st, $h, $b) = curl("-H 'Transfer-Encoding: chunked' --data-binary \@$big '$base/_bulk'");
is($st, 413, 'a chunked body over the limit: 413');

# compatible-with media types are answered as such
($st, $h, $b) = curl("-H 'Accept: application/vnd.elasticsearch+json; compatible-with=8' $base/");
like($h, qr{^Content-Type: application/vnd.elasticsearch\+json;\s*compatible-with=8\r?$}mi, 'compatible-with=8 answered as such');
($st, $h, $b) = curl("-H 'Accept: application/vnd.elasticsearch+json; compatible-with=5' $base/");
is($st, 400, 'compatible-with=5: 400');

# keep-alive and pipelining: two requests written at once on one connection
my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die "connect: $!";
print $sock "GET /h/_count HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
my $resp = '';
my $deadline = time + 20;
while (time < $deadline && ($resp =~ s/HTTP\/1\.1/HTTP\/1.1/g) < 2 || $resp !~ /tagline/)
{
	last if time >= $deadline;
	my $buf;
	my $n = sysread($sock, $buf, 65536);
	last unless $n;
	$resp .= $buf;
}
close $sock;
my @statuses = $resp =~ m{HTTP/1\.1 (\d+)}g;
is_deeply(\@statuses, [200, 200], 'two pipelined requests, two answers on one connection');
like($resp, qr/"count":.*tagline/s, 'answered in order');

# the server's statement_timeout bounds a request: a health call waiting for
# nodes that never come is cancelled, and the worker serves the next one
$node->safe_psql('postgres', "ALTER SYSTEM SET statement_timeout = '500ms'; SELECT pg_reload_conf()");
sleep 1;
my $t0 = time;
($st, $h, $b) = curl("'$base/_cluster/health?wait_for_nodes=5&timeout=20s'");
is($st, 400, 'a request past statement_timeout is cancelled');
like($b, qr/task_cancelled_exception/, 'as a cancelled task');
ok(time - $t0 < 10, 'long before its own 20 s timeout');
($st) = curl("$base/h/_count");
is($st, 200, 'the worker answers the next request');
$node->safe_psql('postgres', "ALTER SYSTEM RESET statement_timeout; SELECT pg_reload_conf()");
# ES's strict Content-Type check: a body it cannot read is 406, not parsed
($st, $h, $b) = curl("-H 'Content-Type: text/plain' -d '{\"query\":{\"match_all\":{}}}' $base/h/_search");
is($st, 406, 'text/plain body: 406');
is($b, '{"error":"Content-Type header [text/plain] is not supported","status":406}', "ES's 406 body");
($st, $h, $b) = curl("-d '{\"query\":{\"match_all\":{}}}' $base/h/_search");
is($st, 406, 'a form body (curl -d without a type): 406');
($st, $h, $b) = curl("-H 'Content-Type: application/json; charset=UTF-8' -d '{\"size\":0}' $base/h/_search");
is($st, 200, 'application/json with a charset: taken');
($st, $h, $b) = curl("-H 'Content-Type: application/vnd.elasticsearch+x-ndjson; compatible-with=8' --data-binary \@$PostgreSQL::Test::Utils::tmp_check/bulk.ndjson '$base/_bulk?refresh=true'");
is($st, 200, 'the vendor ndjson type: taken');
($st, $h, $b) = curl("-H 'Content-Type: text/plain' $base/h/_count");
is($st, 200, 'no body: the Content-Type does not matter');
# ?format=yaml answers as ES's YAML
($st, $h, $b) = curl("'$base/_cluster/health?format=yaml'");
like($h, qr{^Content-Type: application/yaml\r?$}mi, 'yaml content type');
like($b, qr/^---\ncluster_name: "/, 'yaml body');

# CBOR bodies (ES's application/cbor): a request body read as the JSON
# document of the same items, an answer in CBOR when Accept asks for it
# (CBOR::XS, an independent implementation, on the client side)
{
	my $tmp = $PostgreSQL::Test::Utils::tmp_check;
	my $text = CBOR::XS->new->text_strings(1);
	# one segment, no deletes left: no background merge can change the
	# BM25 statistics between the JSON search and the CBOR one
	($st) = curl("-X POST '$base/h/_forcemerge?max_num_segments=1'");
	is($st, 200, 'h merged to one segment');
	PostgreSQL::Test::Utils::append_to_file("$tmp/q.cbor",
		$text->encode({ query => { match => { t => 'word7' } }, size => 3 }));
	my ($jst, $jh, $jb) = curl("-H 'Content-Type: application/json' -d '{\"query\":{\"match\":{\"t\":\"word7\"}},\"size\":3}' $base/h/_search");
	($st, $h, $b) = curl("-H 'Content-Type: application/cbor' --data-binary \@$tmp/q.cbor $base/h/_search");
	is($st, 200, 'a CBOR search body');
	my ($json, $via_cbor) = (decode_json($jb), decode_json($b));
	is_deeply($via_cbor->{hits}, $json->{hits}, 'answers as the same body in JSON');
	like($h, qr{^Content-Type: application/json\r?$}mi, 'in JSON when Accept does not ask for CBOR');
	($st, $h, $b) = curl("-H 'Content-Type: application/cbor' -H 'Accept: application/cbor' --data-binary \@$tmp/q.cbor $base/h/_search");
	like($h, qr{^Content-Type: application/cbor\r?$}mi, 'Accept: application/cbor: a CBOR answer');
	my $c = eval { CBOR::XS::decode_cbor($b) };
	is_deeply($c->{hits}, $json->{hits}, 'whose items are the JSON answer\'s');
	ok(!ref $c->{hits}{total}{value} && $c->{hits}{total}{value} == $json->{hits}{total}{value}, 'integers as integers');
	($st, $h, $b) = curl("-H 'Accept: application/vnd.elasticsearch+cbor; compatible-with=8' $base/nosuch/_search");
	is($st, 404, 'an error');
	like($h, qr{^Content-Type: application/vnd.elasticsearch\+cbor;compatible-with=8\r?$}mi, 'in the vendor CBOR type asked for');
	is(eval { CBOR::XS::decode_cbor($b)->{error}{type} }, 'index_not_found_exception', 'its body in CBOR');
	# a byte string (JSON has none) is stored as base64 text, as Jackson reads it
	my $bin = "\x01\x02\x03";
	my $word = 'cbor';
	utf8::upgrade($word);
	PostgreSQL::Test::Utils::append_to_file("$tmp/d.cbor",
		CBOR::XS->new->text_keys(1)->encode({ t => $word, b => $bin }));
	($st) = curl("-H 'Content-Type: application/cbor' --data-binary \@$tmp/d.cbor '$base/h/_doc/cb1?refresh=true'");
	is($st, 201, 'a CBOR document indexed');
	($st, $h, $b) = curl("$base/h/_doc/cb1");
	is_deeply(decode_json($b)->{_source}, { t => 'cbor', b => 'AQID' }, 'its byte string as base64');
	PostgreSQL::Test::Utils::append_to_file("$tmp/bad.cbor", "\xa1\x61");
	($st, $h, $b) = curl("-H 'Content-Type: application/cbor' --data-binary \@$tmp/bad.cbor $base/h/_search");
	is($st, 400, 'truncated CBOR: 400');
	like($b, qr/"type":"parse_exception"/, 'a parse_exception');
}

# _nodes/stats http: the connections all workers opened, and each client as
# ES lists it (a closed one too, for five minutes)
($st, $h, $b) = curl("-A 'se-test-agent/1.0' -H 'X-Opaque-Id: stats-7' -H 'Content-Type: application/json' -d '{\"size\":0}' $base/h/_search");
is($st, 200, 'a search from a client with its own agent');
my ($http, $client);
for (1 .. 50)
{
	($st, $h, $b) = curl("$base/_nodes/_local/stats/http");
	$http = (values %{ JSON::PP::decode_json($b)->{nodes} })[0]{http};
	($client) = grep { ($_->{agent} // '') eq 'se-test-agent/1.0' } @{ $http->{clients} };
	last if $client && $client->{closed_time_millis};
	select(undef, undef, undef, 0.1);
}
ok($http->{current_open} >= 1, "current_open counts the asking connection ($http->{current_open})");
ok($http->{total_opened} >= 30, "total_opened counts every connection so far ($http->{total_opened})");
ok($client, 'the client is listed by its agent') or diag(explain $http);
is($client->{last_uri}, '/h/_search', 'with its last URI');
is($client->{x_opaque_id}, 'stats-7', 'its X-Opaque-Id');
is("$client->{request_count}/$client->{request_size_bytes}", '1/10', 'one request of 10 body bytes');
like($client->{remote_address}, qr/^127\.0\.0\.1:\d+$/, 'remote address ip:port');
like($client->{local_address}, qr/^127\.0\.0\.1:$port$/, 'local address: the HTTP port');
ok($client->{closed_time_millis} >= $client->{opened_time_millis}, 'closed (curl exited), still listed');
ok((grep { !$_->{closed_time_millis} && ($_->{last_uri} // '') eq '/_nodes/_local/stats/http' }
	@{ $http->{clients} }) >= 1, 'the asking connection is open');

done_testing();
