# Queue saturation: a tiny write queue and one write worker, many concurrent
# bulk sessions over several shards.  Some items get 429
# es_rejected_execution_exception, thread_pool.rejected counts them, every
# non-rejected item is stored and no rejected item is stored.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use SeTest;

my $node = SeTest::new_node('queue', write_threads => 1,
	extra => "search_engine.write_queue_size = 2\nmax_connections = 40\n");
$node->safe_psql('postgres', q{SELECT search_engine.create_index('q',
  '{"settings": {"number_of_shards": 8, "number_of_replicas": 0, "refresh_interval": "-1"}}')});

# The bound is ES's: write_queue_size waiting plus one executing per write
# thread.  On an idle node one bulk touching all 8 shards gets room for
# 2 + 1 = 3 sub-requests; the other 5 are rejected before anything is copied.
$node->safe_psql('postgres', q{SELECT search_engine.create_index('probe', '{"settings": {"number_of_shards": 8, "number_of_replicas": 0}}')});
my $one = join('\\n', map { qq({"index": {"_id": "probe-$_"}}\\n{"n": $_}) } 1 .. 200);
my $before = $node->safe_psql('postgres', "SELECT rejected FROM search_engine.thread_pool");
$node->safe_psql('postgres', "SELECT count(DISTINCT i->'index'->>'status') FROM json_array_elements(search_engine.bulk(E'$one\\n', 'probe')->'items') i");
is($node->safe_psql('postgres', "SELECT rejected FROM search_engine.thread_pool") - $before, 5,
	'an idle node admits write_queue_size + write_threads sub-requests of one bulk');

my $clients = 12;
my $requests = 6;
my $items = 64;
my $dir = PostgreSQL::Test::Utils::tempdir;
my $text = 'lorem ipsum dolor sit amet ' x 60;
my @pids;
for my $c (1 .. $clients)
{
	my $pid = fork();
	die "fork" unless defined $pid;
	if ($pid == 0)
	{
		# never let a child run the node's END teardown
		eval {
		open(my $out, '>', "$dir/client$c.txt") or die;
		for my $r (1 .. $requests)
		{
			my $body = join('\n', map {
				qq({"index": {"_id": "c$c-r$r-i$_"}}\\n{"text": "$text", "c": $c})
			} 1 .. $items);
			my $res = $node->safe_psql('postgres',
				"SELECT i->'index'->>'_id' || ' ' || (i->'index'->>'status') || ' ' || coalesce(i->'index'->'error'->>'type', '-')
				   FROM json_array_elements(search_engine.bulk(E'$body\\n', 'q')->'items') i");
			print $out "$res\n";
		}
		close $out;
		};
		POSIX::_exit(0);
	}
	push @pids, $pid;
}
waitpid($_, 0) for @pids;

my (%ok, %rejected, %other);
for my $c (1 .. $clients)
{
	open(my $in, '<', "$dir/client$c.txt") or die;
	while (<$in>)
	{
		chomp;
		next unless /\S/;
		my ($id, $status, $type) = split / /;
		if ($status == 201 || $status == 200) { $ok{$id} = 1; }
		elsif ($status == 429)
		{
			is($type, 'es_rejected_execution_exception', "429 carries the ES type") if !%rejected;
			$rejected{$id} = 1;
		}
		else { $other{$id} = "$status $type"; }
	}
}
my $total = $clients * $requests * $items;
is(scalar(keys %ok) + scalar(keys %rejected), $total, "every item was either stored or rejected ($total)");
is(scalar(keys %other), 0, 'no other errors') or diag(join(', ', map { "$_: $other{$_}" } (sort keys %other)[0..5]));
cmp_ok(scalar(keys %rejected), '>', 0, 'some items were rejected with 429: ' . scalar(keys %rejected));
cmp_ok(scalar(keys %ok), '>', 0, 'some items were stored: ' . scalar(keys %ok));

my $rejected_tasks = $node->safe_psql('postgres', "SELECT rejected FROM search_engine.thread_pool WHERE name = 'write'");
cmp_ok($rejected_tasks, '>', 0, "thread_pool.rejected counts rejected sub-requests ($rejected_tasks)");

$node->safe_psql('postgres', "SELECT search_engine.refresh('q')");
my $count = $node->safe_psql('postgres', "SELECT search_engine.count('q')");
is($count, scalar(keys %ok), 'the index holds exactly the non-rejected items');

# spot-check ids on both sides through realtime get
my @okids = (sort keys %ok)[0 .. 49];
my @rejids = (sort keys %rejected)[0 .. (keys %rejected > 50 ? 49 : scalar(keys %rejected) - 1)];
my $json = join(',', map { qq("$_") } grep { defined } @okids);
is($node->safe_psql('postgres', qq{SELECT count(*) FROM jsonb_array_elements(search_engine.mget('{"ids": [$json]}', 'q')->'docs') d WHERE (d->>'found')::bool}),
	scalar(grep { defined } @okids), 'stored items are gettable');
$json = join(',', map { qq("$_") } grep { defined } @rejids);
is($node->safe_psql('postgres', qq{SELECT count(*) FROM jsonb_array_elements(search_engine.mget('{"ids": [$json]}', 'q')->'docs') d WHERE (d->>'found')::bool}),
	'0', 'rejected items are not stored');

# retries with backoff index everything
my $res = $node->safe_psql('postgres', q{SELECT search_engine.bulk(E'{"index": {"_id": "retry-1"}}\n{"a": 1}\n', 'q', max_retries => 5)->'errors'});
is($res, 'false', 'a bulk with retries succeeds');
$node->stop;
done_testing();
