# A refresh (and a flush) goes to every shard at once: with one write
# worker stopped (SIGSTOP), the shard the other worker owns is refreshed
# while the call still waits for the stopped one.  Sent one shard after
# another, as it was, a refresh whose first shard belonged to the stopped
# worker refreshed nothing else until that worker came back; each worker
# is stopped in turn, so one of the two rounds catches that.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use SeTest;

my $node = SeTest::new_node('broadcast', write_threads => 2);
my $pm = SeTest::postmaster_pid($node);
my @workers = sort { $a <=> $b } grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'write worker'`;
is(scalar(@workers), 2, 'two write workers');

for my $round (0, 1)
{
	my $index = "b$round";
	$node->safe_psql('postgres', qq{SELECT search_engine.create_index('$index',
	  '{"settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "-1"}}')});
	# documents in both shards (ids 1..40 route to both of 2 shards)
	is($node->safe_psql('postgres', qq{SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\\n{"n": %s}', g, g), E'\\n') || E'\\n' FROM generate_series(1, 40) g), '$index')->>'errors'}),
		'false', "$index: documents in both shards");
	is($node->safe_psql('postgres', qq{SELECT count(DISTINCT shard) FROM search_engine.segments WHERE index = '$index'}),
		'0', "$index: nothing refreshed yet");

	my $stopped = $workers[$round];
	kill 'STOP', $stopped;
	my $pid = fork();
	die "fork" unless defined $pid;
	if ($pid == 0)
	{
		eval { $node->safe_psql('postgres', "SELECT search_engine.refresh('$index')"); };
		POSIX::_exit(0);
	}
	my $one = $node->poll_query_until('postgres',
		qq{SELECT count(DISTINCT shard) = 1 FROM search_engine.segments WHERE index = '$index'});
	ok($one, "$index: the running worker's shard is refreshed while the stopped one's waits");
	kill 'CONT', $stopped;
	waitpid($pid, 0);
	is($node->safe_psql('postgres', qq{SELECT count(DISTINCT shard) FROM search_engine.segments WHERE index = '$index'}),
		'2', "$index: both shards refreshed once the worker is back");
	is($node->safe_psql('postgres', qq{SELECT search_engine.count('$index')}), '40', "$index: every document searchable");
}

$node->stop;
done_testing();
