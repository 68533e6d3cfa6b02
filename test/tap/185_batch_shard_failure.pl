# One shard failing in the middle of a write worker's batch fails only
# that shard's requests (issue 16; found by the Jepsen disk scenario).
# One write worker owns the shards of two indices; a debug pause point
# holds it while a bulk with documents for both is queued, so both
# sub-requests land in one batch; a debug fault makes the translog sync of
# index b fail as on a full disk.  Index a's items must be acknowledged
# (201) and readable, b's get 429 cluster_block_exception, and b recovers
# by itself once the fault is gone.  Before, the error failed every
# request of the batch, including a's, which a had applied: answered as
# failed, never replicated, yet there after the next sync.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use JSON::PP;
use IPC::Run;
use SeTest;

my $node = SeTest::new_node('batchfail', write_threads => 1,
	extra => "search_engine.debug_waitpoints = on\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }
my $pgdata = $node->data_dir;
sub touch { open(my $fh, '>', "$pgdata/$_[0]") or die "$_[0]: $!"; close $fh; }

q1(qq(SELECT search_engine.request('PUT', '/$_', '{"settings":{"number_of_shards":1}}'))) for qw(a b);
q1(q(SELECT search_engine.bulk('{"index":{"_index":"a","_id":"0"}}' || chr(10) || '{"v":0}' || chr(10)
  || '{"index":{"_index":"b","_id":"0"}}' || chr(10) || '{"v":0}' || chr(10))));

# hold the worker, queue one bulk for both indices, let it go
touch('search_engine_pause_write_worker');
touch('search_engine_fault_translog_sync_b');
my $log_off = -s $node->logfile;
sub wait_for_log
{
	my ($re, $off, $secs) = @_;
	my $t0 = time;
	while (time - $t0 < $secs)
	{
		return 1 if substr(slurp_file($node->logfile), $off) =~ $re;
		usleep(100_000);
	}
	return 0;
}
ok(wait_for_log(qr/paused at debug point "write_worker"/, $log_off, 30),
	'the write worker is held at its pause point');
my $body = join('', map { qq({"index":{"_index":"$_->[0]","_id":"$_->[1]"}}\n{"v":1}\n) }
	([ 'a', 1 ], [ 'b', 1 ], [ 'a', 2 ], [ 'b', 2 ]));
my ($out, $err) = ('', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	"SELECT search_engine.bulk(\$b\$$body\$b\$)" ], '>', \$out, '2>', \$err);
usleep(1_500_000);
unlink("$pgdata/search_engine_pause_write_worker");
$h->finish;
is($err, '', 'the bulk ran') or diag($err);
my $res = eval { decode_json($out) } // {};
my %item = map { my ($op) = values %$_; ("$op->{_index}/$op->{_id}" => $op) } @{ $res->{items} // [] };
is(join(' ', map { $item{$_}{status} // '?' } qw(a/1 a/2)), '201 201',
	"index a's items in the same batch are acknowledged") or diag($out);
is(join(' ', map { $item{$_}{status} // '?' } qw(b/1 b/2)), '429 429', "index b's items get 429")
  or diag($out);
is($item{'b/1'}{error}{type}, 'cluster_block_exception', 'cluster_block_exception');
like(q1(q(SELECT status || ' ' || (body->>'found') FROM search_engine.request('GET', '/a/_doc/2'))), qr/^200 true$/,
	'index a holds the acknowledged document');

# the fault gone, b recovers by itself and takes writes again
unlink("$pgdata/search_engine_fault_translog_sync_b");
my $ok = 0;
for (1 .. 100)
{
	my $r = q1(q(SELECT status FROM search_engine.request('PUT', '/b/_doc/3', '{"v":3}')));
	if ($r =~ /^20[01]$/) { $ok = 1; last; }
	usleep(200_000);
}
ok($ok, 'b recovered by itself once its disk is back');
q1(q(SELECT search_engine.request('POST', '/a/_refresh')));
is(q1(q(SELECT body->'hits'->'total'->>'value' FROM search_engine.request('POST', '/a/_search', '{"track_total_hits":true}'))),
	'3', 'a has all three documents');
$node->stop;
done_testing();
