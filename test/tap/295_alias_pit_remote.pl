# Filtered aliases over shards on other nodes (issue 17): two data nodes
# (n1, n2) and a dedicated master (n3, which holds no shard and so
# coordinates every shard remotely), an index of 2 shards, no replica.
# A point in time opened on n3 through a filtered alias carries the
# alias's filter in its id: every search of it, coordinated by n3 or by
# n1, returns the alias's documents only, from both data nodes, even after
# the alias is changed.  A foreign table on n3 over the filtered alias
# counts, aggregates and scans its documents only on the data nodes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use SeTest;
use SeCluster;

my ($cluster, $node) = SeCluster->data_nodes_and_master(etcd_members => 1, name => 'tap295');
my %node = %$node;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

$cluster->index_on_data_nodes(\%node, 'ap', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"n":{"type":"long"},"k":{"type":"keyword"}}}}');
my ($st, $b) = req('n1', 'POST', '/ap/_bulk?refresh=true',
	join('', map { qq({"index":{"_id":"d$_"}}\n{"n":$_,"k":"@{[ $_ % 3 ? 'blue' : 'red' ]}"}\n) } 1 .. 30));
ok($st == 200 && !$b->{errors}, '30 documents, 10 red') or diag(explain $b);
($st, $b) = req('n1', 'PUT', '/ap/_alias/ap-red', '{"filter":{"term":{"k":"red"}}}');
is($st, 200, 'a filtered alias');

($st, $b) = req('n3', 'POST', '/ap-red/_pit?keep_alive=5m');
is_deeply([ $st, $b->{_shards}{successful} ], [ 200, 2 ], 'a point in time through it, opened on n3')
  or diag(explain $b);
my $pit = $b->{id};
($st, $b) = req('n1', 'POST', '/_aliases', '{"actions":[{"remove":{"index":"ap","alias":"ap-red"}}]}');
is($st, 200, 'the alias removed since');
for my $coord (qw(n3 n1))
{
	($st, $b) = req($coord, 'POST', '/_search', encode_json({ size => 100, pit => { id => $pit },
		aggs => { s => { sum => { field => 'n' } } } }));
	my @k = grep { $_ ne 'red' } map { $_->{_source}{k} } @{ $b->{hits}{hits} // [] };
	is_deeply([ $st, $b->{hits}{total}{value}, $b->{_shards}{successful}, scalar(@k), $b->{aggregations}{s}{value} ],
		[ 200, 10, 2, 0, 165 ], "through $coord: the red documents of both data nodes only")
	  or diag(explain $b);
}
($st, $b) = req('n3', 'DELETE', '/_pit', encode_json({ id => $pit }));
is_deeply([ $st, $b->{num_freed} ], [ 200, 2 ], 'closed');

# a foreign table on n3 (no shard there) over the filtered alias
($st, $b) = req('n1', 'PUT', '/ap/_alias/ap-red', '{"filter":{"term":{"k":"red"}}}');
is($st, 200, 'the alias back');
$node{n3}->safe_psql('postgres', q{
	CREATE SERVER se FOREIGN DATA WRAPPER search_engine;
	CREATE FOREIGN TABLE red (_id text, n bigint, k text) SERVER se OPTIONS (index 'ap-red');});
is($node{n3}->safe_psql('postgres', 'SELECT count(*), sum(n), min(n), max(n) FROM red'), '10|165|3|30',
	'count and aggregates pushed to the data nodes: the red ones');
is($node{n3}->safe_psql('postgres', q{SELECT string_agg(DISTINCT k, ',') FROM red WHERE n > 10}), 'red',
	'a scan: the red ones');
is($node{n3}->safe_psql('postgres', 'SELECT count(*) FROM (SELECT _id FROM red OFFSET 0) s'), '10',
	'a plain scan of every row: 10');

$cluster->teardown;
done_testing();
