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
my $miscount = 0;
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
	# what a refresh publishes is exact, also when it installs a merge whose
	# inputs lost documents while it ran (their deletes must be carried over)
	my $count = $node->safe_psql('postgres', "SELECT search_engine.count('m')");
	$miscount++ if $count != scalar(keys %live);
}
is($miscount, 0, 'after every refresh the count matches the model (no deleted document visible)');
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
# index.merge.*: a small tier, two merges of the shard at a time; settings
# are dynamic (PUT _settings reaches the shard owner without a restart)
$node->safe_psql('postgres', q{SELECT search_engine.create_index('t',
  '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}')});
$node->safe_psql('postgres', q{SELECT search_engine.put_settings('t', '{"index": {"merge": {"policy": {"segments_per_tier": 2, "max_merge_at_once": 2}, "scheduler": {"max_thread_count": 2}}}}')});
for my $round (1 .. 30)
{
	my $body = join('\n', map {; qq({"index": {"_id": "$round-$_"}}), qq({"t": "tier round $round"}) } 1 .. 5);
	$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 't', refresh => 'true')");
}
for my $i (1 .. 100)
{
	$segs = $node->safe_psql('postgres', "SELECT count(*) FROM search_engine.segments WHERE index = 't'");
	last if $segs <= 3;
	usleep(100_000);
}
cmp_ok($segs, '<=', 3, "segments_per_tier 2: 30 refreshes merged down to $segs segments");
$node->safe_psql('postgres', "SELECT search_engine.refresh('t')");
is($node->safe_psql('postgres', "SELECT search_engine.count('t')"), '150', 'no document lost by the tiered merges');
is($node->safe_psql('postgres', "SELECT search_engine.count('t', '{\"query\": {\"match\": {\"t\": \"round\"}}}')"), '150', 'every document searchable');

$node->stop;
done_testing();
