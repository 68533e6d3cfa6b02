# The etcd client inside a backend (the unit test runs it standalone):
# a test-only module built here calls it against test/unit/fake_etcd.py.
# A full round of calls works with the server's memory contexts; a call
# stalled by etcd is cancelled by statement_timeout (not after its own 30 s
# timeout) and the backend goes on; a client and a watch left behind by an
# error have their sockets closed when the query's context goes.
use strict;
use warnings;
use FindBin;
use HTTP::Tiny;
use lib $FindBin::RealBin;
use IPC::Open2;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SeTest;

my $moddir = "$FindBin::RealBin/etcd_selftest";
system('make', '-s', '-C', $moddir) == 0 or BAIL_OUT("cannot build $moddir");

my $fake_pid = open2(my $fake_out, my $fake_in, 'python3',
	"$FindBin::RealBin/../unit/fake_etcd.py");
my $port = <$fake_out>;
chomp $port;
like($port, qr/^\d+$/, "fake etcd listens on $port");
my $etcd = "http://127.0.0.1:$port";

my $node = SeTest::new_node('etcd');
for my $f (['etcd_selftest_run(text, text, int)', 'text'],
	['etcd_selftest_range(text, int, text)', 'text'],
	['etcd_selftest_abandon(text, text)', 'void'],
	['etcd_selftest_sockets()', 'int'])
{
	my ($sig, $ret) = @$f;
	(my $name = $sig) =~ s/\(.*//;
	$node->safe_psql('postgres',
		"CREATE FUNCTION $sig RETURNS $ret AS '$moddir/etcd_selftest.so', '$name' LANGUAGE C STRICT");
}

# a round of every call, twice in one session (the client's contexts are reused)
my $out = $node->safe_psql('postgres',
	"SELECT etcd_selftest_run('$etcd', '/st/', 20); SELECT etcd_selftest_run('$etcd', '/st/', 5)");
like($out, qr/^range=20 cas=t,f lease=30,0 events=\d+\nrange=5 cas=t,f lease=30,0 events=\d+$/,
	"puts, ranges, both branches of a CAS, a lease and a watch inside a backend: $out");
unlike($out, qr/events=0/, 'the watch saw the writes after its start');

# an unreachable etcd is a connection_failure naming the endpoint
my ($rc, $stdout, $stderr) = $node->psql('postgres',
	"SELECT etcd_selftest_range('http://127.0.0.1:1', 500, '/x')");
like($stderr, qr/no etcd endpoint answered.*127\.0\.0\.1:1/, 'unreachable etcd: its error');
($rc, $stdout, $stderr) = $node->psql('postgres', q{
DO $$ BEGIN PERFORM etcd_selftest_range('http://127.0.0.1:1', 500, '/x');
EXCEPTION WHEN connection_failure THEN RAISE NOTICE 'sqlstate %', SQLSTATE; END $$});
like($stderr, qr/sqlstate 08006/, 'as SQLSTATE 08006');

# a stalled etcd: statement_timeout cancels the call, the session goes on
$node->safe_psql('postgres', "SELECT etcd_selftest_run('$etcd', '/st/', 1)");
HTTP::Tiny->new->post("$etcd/fake/control", { content => '{"hang": 1, "ms": 20000}' })->{success}
  or die 'cannot arm the stall';
my $t0 = time;
($rc, $stdout, $stderr) = $node->psql('postgres', qq{
SET statement_timeout = '1s';
SELECT etcd_selftest_range('$etcd', 30000, '/st/0000');
RESET statement_timeout;
SELECT 'after:' || etcd_selftest_range('$etcd', 2000, '/st/0000');
}, on_error_stop => 0);
my $took = time - $t0;
like($stderr, qr/canceling statement due to statement timeout/, 'the stalled call was cancelled');
ok($took < 8, sprintf('within the statement timeout, not the 30 s call timeout (%.1f s)', $took));
is($stdout, 'after:/st/0000', 'the same session reads etcd afterwards');

# a client and a watch abandoned by an error: their sockets go with the query
($rc, $stdout, $stderr) = $node->psql('postgres', qq{
SELECT etcd_selftest_sockets();
SELECT etcd_selftest_abandon('$etcd', '/st/');
SELECT etcd_selftest_sockets();
}, on_error_stop => 0);
like($stderr, qr/abandoning an etcd client/, 'the abandoning call failed');
my @n = split /\n/, $stdout;
is(scalar(@n), 2, 'two socket counts');
is($n[1], $n[0], "no socket left open after the error ($n[0] before, $n[1] after)");
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');

$node->stop;
close $fake_in;
waitpid($fake_pid, 0);
done_testing();
