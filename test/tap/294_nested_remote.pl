# Nested documents on shards of other nodes (issue 17): two data nodes (n1,
# n2) and a dedicated master (n3, which holds no shard and so coordinates
# every shard remotely), an index with a nested field, 2 shards, no
# replica.  Through n3: the nested query runs in the data nodes' query
# phases (block join over their segments), top-level searches and _count
# never see the nested docs, and inner_hits come back with the hits
# fetched on the data nodes (shard_fetch).  Then one node killed with
# nested blocks only in its translog: the replay brings them back whole.
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

my ($cluster, $nodes) = SeCluster->data_nodes_and_master(etcd_members => 3, name => 'tap294');
my %node = %$nodes;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

$cluster->index_on_data_nodes(\%node, 'nr', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"g":{"type":"keyword"},"user":{"type":"nested","properties":{"first":{"type":"keyword"},"last":{"type":"keyword"},"n":{"type":"long"}}}}}}');
my ($st, $b);

# 20 documents, each with users (John Smith, Alice White) and i extra ones
($st, $b) = req('n3', 'POST', '/nr/_bulk?refresh=true',
	join('', map {
		my $i = $_;
		my @u = ({ first => 'John', last => 'Smith', n => 1 }, { first => 'Alice', last => 'White', n => 2 },
				 map { { first => "u$_", last => 'Extra', n => 10 + $_ } } 1 .. $i % 3);
		qq({"index":{"_id":"d$i"}}\n) . encode_json({ g => "g" . ($i % 2), user => \@u }) . "\n"
	} 1 .. 20));
ok($st == 200 && !$b->{errors}, '20 documents with nested users') or diag(explain $b);

($st, $b) = req('n3', 'POST', '/nr/_search', '{"size":0,"aggs":{"g":{"terms":{"field":"g"}}}}');
is($b->{hits}{total}{value}, 20, 'match_all: root docs only on both data nodes');
is(join(',', map { "$_->{key}=$_->{doc_count}" } @{ $b->{aggregations}{g}{buckets} }), 'g0=10,g1=10',
	'aggregations count root docs only');
($st, $b) = req('n3', 'GET', '/nr/_count');
is($b->{count}, 20, '_count: root docs only');

my $cross = '{"query":{"nested":{"path":"user","query":{"bool":{"must":[{"term":{"user.first":"Alice"}},{"term":{"user.last":"Smith"}}]}}}}}';
($st, $b) = req('n3', 'POST', '/nr/_search', $cross);
is($st, 200, 'nested query through n3') or diag(explain $b);
is($b->{hits}{total}{value}, 0, 'no match across two nested objects');
my $one = '{"size":20,"query":{"nested":{"path":"user","score_mode":"sum","query":{"range":{"user.n":{"gte":2}}},'
	. '"inner_hits":{"size":5}}}}';
($st, $b) = req('n3', 'POST', '/nr/_search', $one);
is($b->{hits}{total}{value}, 20, 'a nested query matching one user of each doc');
my @h = @{ $b->{hits}{hits} };
is(scalar(grep { my $i = substr($_->{_id}, 1); $_->{_score} == 1 + $i % 3 } @h), 20,
	'score_mode sum over each block\'s children on the data nodes');
is(scalar(grep {
	my $i = substr($_->{_id}, 1);
	my $ih = $_->{inner_hits}{user}{hits};
	$ih->{total}{value} == 1 + $i % 3 && $ih->{hits}[0]{_nested}{field} eq 'user'
	  && $ih->{hits}[0]{_id} eq $_->{_id} && defined $ih->{hits}[0]{_source}{n}
	  && $ih->{hits}[0]{_source}{n} == [2, 11, 12]->[$ih->{hits}[0]{_nested}{offset} - 1]
} @h), 20, 'inner_hits of remote hits: total, _nested and the object as _source') or diag(explain $h[0]);

# a replaced document replaces its block on its data node
($st, $b) = req('n3', 'PUT', '/nr/_doc/d1?refresh=true', '{"g":"g1","user":[{"first":"Alice","last":"Smith","n":5}]}');
is($st, 200, 'd1 replaced');
($st, $b) = req('n3', 'POST', '/nr/_search', $cross);
is(join(',', map { $_->{_id} } @{ $b->{hits}{hits} }), 'd1', 'the new block matches');
($st, $b) = req('n3', 'POST', '/nr/_search', '{"query":{"nested":{"path":"user","query":{"term":{"user.last":"White"}}}}}');
is($b->{hits}{total}{value}, 19, 'the old block is gone');

$cluster->teardown;

# One node, kill -9 with the blocks only in the translog (no refresh, no
# flush): recovery replays them through the same parse, so the blocks come
# back whole, and a replace replayed after its first version leaves one.
my $one = SeTest::new_node('nested_crash');
sub one_req
{
	my ($m, $p, $body) = @_;
	my $q = defined $body ? "'" . ($body =~ s/'/''/gr) . "'" : 'NULL';
	my $r = $one->safe_psql('postgres', "SELECT status || ' ' || body::text FROM search_engine.request('$m', '$p', $q)");
	my ($code, $json) = split / /, $r, 2;
	return ($code, decode_json($json));
}
($st, $b) = one_req('PUT', '/nc', '{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"-1"},'
	. '"mappings":{"properties":{"user":{"type":"nested","properties":{"first":{"type":"keyword"},"last":{"type":"keyword"}}}}}}');
is($st, 200, 'a single-node index with a nested field');
one_req('PUT', '/nc/_doc/1', '{"user":[{"first":"John","last":"Smith"},{"first":"Alice","last":"White"}]}');
one_req('PUT', '/nc/_doc/2', '{"user":[{"first":"Bob","last":"Stone"}]}');
one_req('PUT', '/nc/_doc/2', '{"user":[{"first":"Alice","last":"Smith"}]}');
SeTest::crash($one);
SeTest::after_crash($one);
$one->start;
SeTest::wait_ready($one);
($st, $b) = one_req('POST', '/nc/_search', '{"query":{"nested":{"path":"user","query":{"bool":{"must":[{"term":{"user.first":"Alice"}},{"term":{"user.last":"Smith"}}]}}}}}');
is(join(',', map { $_->{_id} } @{ $b->{hits}{hits} }), '2', 'after translog replay: only the replaced block matches Alice Smith');
($st, $b) = one_req('POST', '/nc/_search', '{"query":{"nested":{"path":"user","query":{"term":{"user.first":"Bob"}}}}}');
is($b->{hits}{total}{value}, 0, 'the first version of doc 2 is gone');
($st, $b) = one_req('GET', '/nc/_count');
is($b->{count}, 2, '_count: 2 root docs');
($st, $b) = one_req('GET', '/_cat/indices/nc?h=docs.count&format=json');
is($b->[0]{'docs.count'}, '5', '_cat/indices: 3 nested + 2 root docs');
$one->stop;
done_testing();
