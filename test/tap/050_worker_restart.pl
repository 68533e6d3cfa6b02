# A write worker that exits (here: terminated) is restarted by the
# postmaster and recovers the shards it owned from their commit point and
# translog; nothing acknowledged is lost and writes continue.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SeTest;

my $node = SeTest::new_node('restart', write_threads => 2);
$node->safe_psql('postgres', q{SELECT search_engine.create_index('w', '{"settings": {"number_of_shards": 4, "number_of_replicas": 0}}')});
my $body = join('\n', map { qq({"index": {"_id": "$_"}}\\n{"n": $_}) } 1 .. 400);
is($node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 'w')->'errors'"), 'false', 'bulk acknowledged (not refreshed)');

sub workers
{
	my $pm = SeTest::postmaster_pid($node);
	return grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'search_engine write worker'`;
}
my @pids = workers();
is(scalar(@pids), 2, 'two write workers run');
kill 'TERM', @pids;

# the postmaster restarts them; the shards come back
my $ok = 0;
for my $i (1 .. 100)
{
	my %old = map { $_ => 1 } @pids;
	my @new = grep { !$old{$_} } workers();
	if (@new == 2) { $ok = 1; last; }
	usleep(100_000);
}
ok($ok, 'both write workers were restarted');
SeTest::wait_ready($node);
is($node->safe_psql('postgres', "SELECT search_engine.count('w')"), '400', 'all acknowledged documents are back');
$body = join('\n', map { qq({"index": {"_id": "x$_"}}\\n{"n": $_}) } 1 .. 100);
is($node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 'w', refresh => 'true')->'errors'"), 'false', 'writes continue');
is($node->safe_psql('postgres', "SELECT search_engine.count('w')"), '500', 'and are searchable');
$node->stop;
done_testing();
