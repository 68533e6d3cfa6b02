# HTTP authentication and authorization are PostgreSQL's: Basic credentials
# checked against the role's SCRAM verifier (LOGIN required), each request
# run with that role's privileges -- index-level grants included -- as the
# same call through SQL; 401 with WWW-Authenticate without credentials;
# failed logins logged and rate-limited; the anonymous role; TLS.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;
use SeHttp;

# three workers share the port: a client's connections are spread over
# them, and the failure limit must still count them together
my ($node, $port) = SeHttp::new_node('auth', qq{search_engine.http_workers = 3
search_engine.http_auth_failure_limit = 5
});
my $base = "http://127.0.0.1:$port";

sub curl { return SeHttp::curl(@_); }
sub wait_http { return SeHttp::wait_http(@_); }

$node->safe_psql('postgres', q{
SET password_encryption = 'scram-sha-256';
CREATE ROLE boss LOGIN PASSWORD 'boss-pw' IN ROLE search_engine_admin;
CREATE ROLE reader LOGIN PASSWORD 'reader-pw';
CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw';
CREATE ROLE nologin_admin NOLOGIN PASSWORD 'nl-pw' IN ROLE search_engine_admin;
SELECT search_engine.create_index('logs-a');
SELECT search_engine.create_index('other');
SELECT search_engine.grant('read', 'logs-*', 'reader');
});
like($node->safe_psql('postgres', q{SELECT rolpassword FROM pg_authid WHERE rolname = 'reader'}),
	qr/^SCRAM-SHA-256/, 'passwords are SCRAM verifiers');
ok(wait_http("$base/"), 'the HTTP server answers');

# no credentials
my ($st, $h, $b) = curl("$base/");
is($st, 401, 'no credentials: 401');
like($h, qr/^WWW-Authenticate: Basic realm="security"/mi, 'with a Basic challenge');
like($b, qr/"type":"security_exception".*missing authentication credentials/, 'ES security_exception body');

# the right password of a LOGIN role
my $dir = $PostgreSQL::Test::Utils::tmp_check;
open(my $fh, '>', "$dir/auth.ndjson") or die;
print $fh qq({"index":{"_index":"logs-a","_id":"1"}}\n{"m":"one"}\n{"index":{"_index":"other","_id":"1"}}\n{"m":"secret"}\n);
close $fh;
($st, $h, $b) = curl("-u boss:boss-pw -H 'Content-Type: application/x-ndjson' --data-binary \@$dir/auth.ndjson '$base/_bulk?refresh=true'");
is($st, 200, 'an admin bulk-indexes');
like($b, qr/"errors":false/, 'into both indices');

# wrong password, unknown role, a NOLOGIN role: 401, logged
my $log_offset = -s $node->logfile;
($st) = curl("-u boss:wrong $base/");
is($st, 401, 'wrong password: 401');
($st) = curl("-u ghost:whatever $base/");
is($st, 401, 'unknown role: 401');
($st) = curl("-u nologin_admin:nl-pw $base/");
is($st, 401, 'a role without LOGIN: 401');
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/password authentication failed for user "boss" from 127\.0\.0\.1/, 'the failed login is logged with the client address');
like($log, qr/not permitted to log in/, 'a NOLOGIN role is logged as such');

# index-level privileges, as through SQL
($st, $h, $b) = curl("-u reader:reader-pw $base/logs-a/_search");
is($st, 200, 'reader searches logs-a');
like($b, qr/"m":"one"/, 'and sees its document');
($st, $h, $b) = curl("-u reader:reader-pw $base/other/_search");
is($st, 403, 'reader may not search other: 403');
like($b, qr/security_exception/, 'security_exception');
my $sql = $node->safe_psql('postgres', q{SET ROLE reader; SELECT status FROM search_engine.request('GET', '/other/_search')});
is($st, $sql, 'same status as request() run as that role');
($st, $h, $b) = curl("-u reader:reader-pw -H 'Content-Type: application/json' -d '{\"m\":\"x\"}' $base/logs-a/_doc/2");
is($st, 403, 'reader may not write to logs-a: 403');
# a changed password: the new one works, the old one (verified just above,
# so remembered by the worker) no longer does
$node->safe_psql('postgres', q{ALTER ROLE reader PASSWORD 'reader-pw2'});
($st) = curl("-u reader:reader-pw2 $base/logs-a/_count");
is($st, 200, 'after ALTER ROLE ... PASSWORD the new password works');
($st) = curl("-u reader:reader-pw $base/logs-a/_count");
is($st, 401, 'and the old one is refused');
($st) = curl("-u outsider:outsider-pw $base/");
is($st, 403, 'a role that may not call request() through SQL: 403');

# the anonymous role
$node->append_conf('postgresql.conf', "search_engine.http_anonymous_role = 'reader'\n");
$node->reload;
my $ok = 0;
for (1 .. 50)
{
	($st) = curl("$base/logs-a/_count");
	if ($st == 200) { $ok = 1; last; }
	select(undef, undef, undef, 0.2);
}
ok($ok, 'no credentials: run as http_anonymous_role');
($st) = curl("$base/other/_count");
is($st, 403, 'with its privileges only');
($st) = curl("-u reader:bad $base/logs-a/_count");
is($st, 401, 'wrong credentials are still refused');

# rate limit: http_auth_failure_limit = 5 per minute per address; 5 failed so
# far, each on its own connection (so on any of the three workers)
$log_offset = -s $node->logfile;
($st) = curl("-u boss:wrong-again $base/");
($st) = curl("-u boss:boss-pw $base/");
is($st, 401, 'past the failure limit even the right password is refused');
like(slurp_file($node->logfile, $log_offset), qr/login of user "boss" from \S+ refused unchecked: \d+ failed logins/,
	'and logged so, with the user');

# TLS: a self-signed certificate for 127.0.0.1
system("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
	  . "-addext subjectAltName=IP:127.0.0.1 -keyout $dir/http.key -out $dir/http.crt 2>/dev/null") == 0
  or die "openssl failed";
chmod 0644, "$dir/http.key", "$dir/http.crt";
$node->append_conf('postgresql.conf', qq{
search_engine.http_ssl_cert_file = '$dir/http.crt'
search_engine.http_ssl_key_file = '$dir/http.key'
search_engine.http_auth_failure_limit = 100
});
$node->restart;
my $tls = "https://127.0.0.1:$port";
ok(wait_http("$tls/", "--cacert $dir/http.crt"), 'the HTTPS server answers');
($st, $h, $b) = curl("--cacert $dir/http.crt -u boss:boss-pw $tls/other/_search");
is($st, 200, 'a search over TLS, certificate verified');
like($b, qr/"m":"secret"/, 'round trip over TLS');
($st) = curl("$base/");
is($st, 0, 'plain HTTP on the TLS port gets no HTTP answer');

# client certificates (http_ssl_ca_file): one that verifies logs in as the
# role its CN names, as PostgreSQL's cert authentication
sub client_cert
{
	my ($name, $cn, $ca) = @_;
	system("openssl req -newkey rsa:2048 -nodes -subj /CN=$cn -keyout $dir/$name.key -out $dir/$name.csr 2>/dev/null "
		  . "&& openssl x509 -req -in $dir/$name.csr -CA $dir/$ca.crt -CAkey $dir/$ca.key -CAcreateserial "
		  . "-days 2 -extfile $dir/client.ext -out $dir/$name.crt 2>/dev/null") == 0
	  or die "openssl failed for $name";
	chmod 0644, "$dir/$name.key", "$dir/$name.crt";
}
PostgreSQL::Test::Utils::append_to_file("$dir/client.ext",
	"basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n");
for my $ca (qw(ca rogue))
{
	system("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-$ca "
		  . "-keyout $dir/$ca.key -out $dir/$ca.crt 2>/dev/null") == 0
	  or die "openssl failed for $ca";
}
client_cert('boss', 'boss', 'ca');
client_cert('nologin', 'nologin_admin', 'ca');
client_cert('rogue_boss', 'boss', 'rogue');
chmod 0644, "$dir/ca.crt";
$node->append_conf('postgresql.conf', "search_engine.http_ssl_ca_file = '$dir/ca.crt'\n");
$node->restart;
ok(wait_http("$tls/", "--cacert $dir/http.crt"), 'the HTTPS server answers with client certificates on');
($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/boss.crt --key $dir/boss.key $tls/other/_search");
is($st, 200, "a client certificate with CN boss logs in as boss (anonymous 'reader' may not read other)");
like($b, qr/"m":"secret"/, 'and reads what boss may');
$log_offset = -s $node->logfile;
($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/rogue_boss.crt --key $dir/rogue_boss.key $tls/other/_search");
is($st, 401, 'a certificate of another CA: 401');
like(slurp_file($node->logfile, $log_offset), qr/certificate authentication failed for user "" from/,
	'logged as a certificate that did not verify');
($st) = curl("--cacert $dir/http.crt --cert $dir/nologin.crt --key $dir/nologin.key $tls/");
is($st, 401, 'a verified certificate of a role without LOGIN: 401');
($st) = curl("--cacert $dir/http.crt $tls/logs-a/_count");
is($st, 200, 'no certificate: the anonymous role as before');
($st) = curl("--cacert $dir/http.crt --cert $dir/boss.crt --key $dir/boss.key -u reader:reader-pw2 $tls/other/_search");
is($st, 403, 'an Authorization header wins over the certificate');

# search_engine.http_ssl_cert_map: a pg_ident.conf map says which roles a
# certificate's CN may log in as, as PostgreSQL's cert auth with map=
# (regular expressions and \1 included); the client may name one of them
# in es-security-runas-user, else the map's first match is the role
client_cert('alice', 'alice\@example.com', 'ca');
client_cert('mallory', 'mallory\@evil.org', 'ca');
$node->safe_psql('postgres', q{CREATE ROLE alice LOGIN IN ROLE search_engine_user});
PostgreSQL::Test::Utils::append_to_file($node->data_dir . '/pg_ident.conf', q{
certmap  /^(.*)@example\.com$  \1
certmap  boss                   reader
certmap  boss                   boss
certmap  /^mallory@evil\.org$   \1
othermap mallory@evil.org       boss
});
$node->append_conf('postgresql.conf', "search_engine.http_ssl_cert_map = 'certmap'\n");
$node->reload;
my $mapped = 0;
for (1 .. 50)
{
	($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/alice.crt --key $dir/alice.key $tls/other/_search");
	$mapped = 1, last if $st == 403;
	select(undef, undef, undef, 0.2);
}
ok($mapped, 'CN alice@example.com maps to role alice by the regular expression');
like($b, qr/unauthorized for user \[alice\]/, 'and runs as alice (who may not read other)');
($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/boss.crt --key $dir/boss.key $tls/other/_search");
is($st, 403, "CN boss without a role asked: the map's first line for it, reader");
like($b, qr/unauthorized for user \[reader\]/, 'runs as reader');
($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/boss.crt --key $dir/boss.key -H 'es-security-runas-user: boss' $tls/other/_search");
is($st, 200, 'CN boss asking for role boss, which the map allows');
like($b, qr/"m":"secret"/, 'reads as boss');
$log_offset = -s $node->logfile;
($st, $h, $b) = curl("--cacert $dir/http.crt --cert $dir/boss.crt --key $dir/boss.key -H 'es-security-runas-user: alice' $tls/other/_search");
is($st, 401, 'CN boss asking for a role the map does not give it: 401');
like(slurp_file($node->logfile, $log_offset),
	qr/certificate authentication failed for user "boss".*\n.*No line of user name map "certmap" maps certificate user "boss" to role "alice"/,
	'logged with the map');
$log_offset = -s $node->logfile;
($st) = curl("--cacert $dir/http.crt --cert $dir/mallory.crt --key $dir/mallory.key $tls/");
is($st, 401, "a CN whose only line of the map asks \\1 of a regex without one (another map's line does not count): 401");
like(slurp_file($node->logfile, $log_offset), qr/has no subexpressions as requested by backreference/,
	'logged as PostgreSQL says it');

done_testing();
