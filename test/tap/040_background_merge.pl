# Background merges: many small refreshes produce many segments; merge
# workers fold them while writes (new docs, updates, deletes) keep coming.
# Deletes that land while a merge runs are carried over, no document is
# lost or resurrected, and the segment count stays bounded.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SeTest;

my $node = SeTest::new_node('merge');
$node->safe_psql('postgres', q{SELECT search_engine.create_index('m',
  '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}')});

my %live;
srand(7);
for my $round (1 .. 40)
{
	my @lines;
	for my $i (1 .. 30)
	{
		my $id = int(rand(600));
		if (rand() < 0.25 && %live)
		{
			push @lines, qq({"delete": {"_id": "$id"}});
			delete $live{$id};
		}
		else
		{
			push @lines, qq({"index": {"_id": "$id"}}), qq({"t": "round $round item $i", "r": $round});
			$live{$id} = $round;
		}
	}
	my $body = join('\n', @lines);
	$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 'm', refresh => 'true')");
}
my $segs;
for my $i (1 .. 100)
{
	$segs = $node->safe_psql('postgres', "SELECT count(*) FROM search_engine.segments WHERE index = 'm'");
	last if $segs <= 12;
	usleep(100_000);
}
cmp_ok($segs, '<=', 12, "40 refreshes were merged down to $segs segments in the background");
$node->safe_psql('postgres', "SELECT search_engine.refresh('m')");
is($node->safe_psql('postgres', "SELECT search_engine.count('m')"), scalar(keys %live), 'document count matches the model');
my $bad = 0;
for my $id (sort keys %live)
{
	$bad++ unless $node->safe_psql('postgres', qq{SELECT search_engine.count('m', '{"query": {"bool": {"filter": [{"ids": {"values": ["$id"]}}, {"term": {"r": $live{$id}}}]}}}')}) eq '1';
}
is($bad, 0, 'every live document has its latest version');
my $gone = join(',', map { qq("$_") } grep { !exists $live{$_} } 0 .. 599);
is($node->safe_psql('postgres', qq{SELECT search_engine.count('m', '{"query": {"ids": {"values": [$gone]}}}')}), '0', 'deleted documents stay deleted');

# force merge to one segment expunges the deletes
$node->safe_psql('postgres', "SELECT search_engine.force_merge('m', 1)");
is($node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(\"docs.deleted\") FROM search_engine.segments WHERE index = 'm'"), '1 0', 'force_merge leaves one segment without deletes');
is($node->safe_psql('postgres', "SELECT search_engine.count('m')"), scalar(keys %live), 'same count after force merge');

# restart: the merged state recovers from commit + translog
$node->restart;
SeTest::wait_ready($node);
is($node->safe_psql('postgres', "SELECT search_engine.count('m')"), scalar(keys %live), 'same count after restart');
$node->stop;
done_testing();
