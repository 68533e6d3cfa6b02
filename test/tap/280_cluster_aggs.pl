# Aggregations across nodes (issue 17): an index whose shards are on two
# data nodes answers every aggregation, through any node (a coordinating-only
# one too), exactly as a single node holding the same shards does -- each
# node runs its shards' collection and ships their partial states in the
# query phase message, the coordinator reduces them.  Terms cut per shard
# (shard_size) give the same error bounds, since the shards hold the same
# documents (routing by _id) in both layouts.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;
use SeCluster;

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap280');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5, roles => ($n eq 'n3' ? '' : 'master,data'),
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres', 'CREATE ROLE se_peer LOGIN IN ROLE search_engine_node');
}
ok($cluster->wait_for('a master and three members', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return $m ne '' && !grep { keys(%{ SeCluster::nodes_of($node{$_}) }) != 3 } qw(n1 n2 n3);
}), 'the cluster formed');

my $ref = SeTest::new_node('ref', write_threads => 1);
my $create = q{SELECT search_engine.create_index('ag', '{"settings":{"number_of_shards":4,"number_of_replicas":0},
  "mappings":{"properties":{"tag":{"type":"keyword"},"n":{"type":"integer"},"price":{"type":"double"},
  "ts":{"type":"date"},"body":{"type":"text"}}}}')->>'acknowledged'};
is($node{n1}->safe_psql('postgres', $create), 'true', 'index created in the cluster');
is($ref->safe_psql('postgres', $create), 'true', 'and on the single node');
ok($cluster->wait_for('both data nodes hold shards', 30, sub {
	my $p = SeCluster::primaries($node{n3}, 'ag');
	return $p =~ /n1:STARTED/ && $p =~ /n2:STARTED/ && $p !~ /-/;
}), 'the four shards are started on n1 and n2');

my @tags = qw(red green blue black white amber);
my $ndjson = '';
for my $i (1 .. 400)
{
	my $n = $i % 13 == 0 ? '' : sprintf(',"n":%d', ($i * 37) % 101);
	my $day = 1 + $i % 28;
	$ndjson .= qq({"index":{"_id":"d$i"}}\n{"tag":"$tags[($i * $i) % @tags]","price":)
	  . ($i % 40) * 0.25 . qq($n,"ts":"2024-0) . (1 + $i % 6) . sprintf('-%02dT10:00:00Z', $day)
	  . qq(","body":"doc $i"}\n);
}
for my $target ($node{n3}, $ref)
{
	is($target->safe_psql('postgres',
		"SELECT (search_engine.bulk(\$b\$$ndjson\$b\$, 'ag', 'true'))::jsonb->>'errors'"),
		'false', 'bulk of 400 documents (' . $target->name . ')');
}

my @bodies = (
	'{"size":0,"aggs":{"t":{"terms":{"field":"tag"},"aggs":{"s":{"stats":{"field":"n"}},"c":{"cardinality":{"field":"n"}}}}}}',
	'{"size":0,"aggs":{"t":{"terms":{"field":"n","size":3,"shard_size":3,"show_term_doc_count_error":true}}}}',
	'{"size":0,"query":{"match":{"body":"doc"}},"aggs":{"h":{"histogram":{"field":"price","interval":2.5},"aggs":{"e":{"extended_stats":{"field":"n"}}}}}}',
	'{"size":0,"aggs":{"d":{"date_histogram":{"field":"ts","calendar_interval":"month"},"aggs":{"t":{"terms":{"field":"tag","order":{"m":"desc"}},"aggs":{"m":{"max":{"field":"price"}}}}}}}}',
	'{"size":0,"aggs":{"r":{"range":{"field":"n","ranges":[{"to":20},{"from":20,"to":60},{"from":60}]}},"f":{"filters":{"filters":{"red":{"term":{"tag":"red"}},"cheap":{"range":{"price":{"lt":2}}}}}},"m":{"missing":{"field":"n"}}}}',
	'{"size":0,"aggs":{"p":{"percentiles":{"field":"n","percents":[5,50,95]}},"r":{"percentile_ranks":{"field":"price","values":[1,5]}}}}',
	'{"size":3,"sort":[{"n":"desc"}],"aggs":{"a":{"avg":{"field":"price"}}}}',
	'{"size":0,"query":{"range":{"n":{"gte":60}}},"aggs":{"s":{"significant_terms":{"field":"tag","min_doc_count":1}}}}',
	'{"size":0,"query":{"range":{"n":{"lt":10}}},"aggs":{"t":{"terms":{"field":"tag","min_doc_count":0},"aggs":{"u":{"terms":{"field":"n","size":500,"min_doc_count":0}}}}}}',
	'{"size":0,"query":{"range":{"n":{"gte":60}}},"aggs":{"c":{"significant_terms":{"field":"tag","min_doc_count":1,"chi_square":{"include_negatives":true}}},"m":{"significant_terms":{"field":"tag","min_doc_count":1,"mutual_information":{}}},"g":{"significant_terms":{"field":"tag","min_doc_count":1,"gnd":{}}},"p":{"significant_terms":{"field":"tag","min_doc_count":1,"percentage":{}}}}}',
	'{"size":0,"aggs":{"t":{"terms":{"field":"tag"},"aggs":{"h":{"top_hits":{"size":4,"sort":[{"price":"desc"},"_score",{"tag":"asc"},{"n":"asc"}],"_source":false}}}},"s":{"stats":{"field":"n","exact_sum":true}}}}',
	'{"size":0,"aggs":{"c":{"composite":{"size":5,"after":{"t":"blue","h":50},"sources":[{"t":{"terms":{"field":"tag"}}},{"h":{"histogram":{"field":"n","interval":25}}}]},"aggs":{"s":{"sum":{"field":"price"}}}},"x":{"max_bucket":{"buckets_path":"c>s"}}}}',
);
for my $b (@bodies)
{
	my $sql = "SELECT search_engine.search('ag', '$b')->'aggregations'";
	my $want = $ref->safe_psql('postgres', $sql);
	ok($want ne '' && $want !~ /"buckets": \[\]/, "the single node answers: $b");
	for my $n (qw(n1 n2 n3))
	{
		is($node{$n}->safe_psql('postgres', $sql), $want, "through $n, the same: $b");
	}
}
my ($status, $body) = SeCluster::request($node{n3}, 'POST', '/ag/_search',
	'{"size":0,"aggs":{"t":{"terms":{"field":"tag","size":2}}}}');
is("$status " . scalar(@{ $body->{aggregations}{t}{buckets} }) . " $body->{_shards}{successful}",
	'200 2 4', 'the REST _search through the coordinating-only node: aggregations of all four shards');

done_testing();
