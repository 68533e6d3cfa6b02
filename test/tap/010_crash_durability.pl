# kill -9 of the postmaster at random moments during a long series of
# acknowledged bulk requests (durability "request"): after restart every
# acknowledged document is gettable and, after refresh, searchable.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(usleep time);
use SeTest;

$SIG{PIPE} = 'IGNORE';

my $node = SeTest::new_node('crash');
$node->safe_psql('postgres', q{SELECT search_engine.create_index('durable',
  '{"settings": {"number_of_shards": 3, "number_of_replicas": 0,
                 "translog.durability": "request", "refresh_interval": "200ms"}}')});

my %acked;
my $next_id = 0;
my $rounds = 4;
srand(42);

for my $round (1 .. $rounds)
{
	my $killer = fork();
	die "fork failed" unless defined $killer;
	if ($killer == 0)
	{
		usleep(int(300_000 + rand(1_500_000)));
		SeTest::crash($node);
		POSIX::_exit(0);
	}
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		my @ids = map { "r${round}-" . ($next_id++) } 1 .. 20;
		my $body = join('', map {
			qq({"index": {"_id": "$_"}}\n{"title": "document $_ round $round", "n": $round}\n)
		} @ids);
		$body =~ s/'/''/g;
		# psql may die mid-write when the server is killed (EPIPE from
		# IPC::Run): that is the crash we are waiting for, not a failure
		my ($rc, $out, $err) = (1, '', '');
		eval {
			($rc, $out, $err) = $node->psql('postgres',
				"SELECT search_engine.bulk(E'" . ($body =~ s/\n/\\n/gr) . "', 'durable')->'errors'",
				on_error_stop => 1);
		};
		last if $@ || $rc != 0;    # the server is gone: stop sending
		if ($out eq 'false')
		{
			$acked{$_} = 1 for @ids;
		}
	}
	waitpid($killer, 0);
	SeTest::after_crash($node);
	$node->start;
	SeTest::wait_ready($node);
	my $missing = 0;
	my @keys = sort keys %acked;
	# every acknowledged document is gettable (realtime)
	for my $chunk_start (0 .. int($#keys / 200))
	{
		my @chunk = @keys[$chunk_start * 200 .. (($chunk_start + 1) * 200 - 1 < $#keys ? ($chunk_start + 1) * 200 - 1 : $#keys)];
		my $json = join(',', map { qq("$_") } @chunk);
		my $found = $node->safe_psql('postgres',
			qq{SELECT count(*) FROM jsonb_array_elements(search_engine.mget('{"ids": [$json]}', 'durable')->'docs') d WHERE (d->>'found')::bool});
		$missing += scalar(@chunk) - $found;
	}
	is($missing, 0, "round $round: all " . scalar(@keys) . " acknowledged documents are gettable after kill -9");
	$node->safe_psql('postgres', "SELECT search_engine.refresh('durable')");
	my $searchable = $node->safe_psql('postgres', "SELECT search_engine.count('durable')");
	cmp_ok($searchable, '>=', scalar(@keys), "round $round: acknowledged documents are searchable after refresh");
}
ok(scalar(keys %acked) > 100, 'enough acknowledged documents were written: ' . scalar(keys %acked));

# cluster settings: persistent ones survive a restart, transient ones do
# not (as a whole ES cluster forgets them)
$node->safe_psql('postgres', q{SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.routing.allocation.enable": "primaries"}, "transient": {"cluster.routing.allocation.total_shards_per_node": 7}}')});
$node->restart;
SeTest::wait_ready($node);
is($node->safe_psql('postgres', q{SELECT search_engine.cluster_settings(true)::text}),
	'{"transient": {}, "persistent": {"cluster.routing.allocation.enable": "primaries"}}',
	'after a restart the persistent cluster setting is kept, the transient one is gone');
$node->stop;
done_testing();
