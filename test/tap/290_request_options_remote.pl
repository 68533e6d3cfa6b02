# Request options over shards on other nodes (issue 17): two data nodes
# (n1, n2) and a dedicated master (n3, which holds no shard and so
# coordinates every shard remotely), an index of 2 shards, no replica.
# Through n3: explain: true, docvalue_fields and fields come back with the
# hits fetched on the data nodes (shard_fetch), the explanation's value is
# each hit's _score; rescore runs in the remote query phases; _explain is
# answered by the copy's node (explain_doc); get and mget filter _source on
# the copy (get_doc); refresh=wait_for written through n3 waits on the
# primaries' nodes, and DELETE _search/scroll/_all frees the scroll
# contexts on both data nodes.  Highlighting runs in the data nodes'
# fetch, held to their copy of index.highlight.max_analyzed_offset.
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

my ($cluster, $node) = SeCluster->data_nodes_and_master(etcd_members => 3, name => 'tap290');
my %node = %$node;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my ($st, $b);
$cluster->index_on_data_nodes(\%node, 'ro', '{"settings":{"number_of_shards":2,"number_of_replicas":0,"refresh_interval":"-1"},'
	  . '"mappings":{"properties":{"t":{"type":"text"},"k":{"type":"keyword"},"n":{"type":"long"},"d":{"type":"date"}}}}');

# refresh=wait_for through n3: visible once answered, not forced (a
# refresh comes from max_refresh_listeners 0 here: forced on each node)
($st, $b) = req('n3', 'PUT', '/ro/_settings', '{"index":{"max_refresh_listeners":0}}');
is($st, 200, 'max_refresh_listeners 0');
($st, $b) = req('n3', 'POST', '/ro/_bulk?refresh=wait_for',
	join('', map { qq({"index":{"_id":"d$_"}}\n{"t":"@{[ $_ % 3 ? 'alpha beta' : 'alpha gamma gamma' ]} w$_","k":"k@{[$_ % 4]}","n":$_,"d":"2024-01-0@{[1 + $_ % 9]}"}\n) } 1 .. 40));
ok($st == 200 && !$b->{errors}, '40 documents with refresh=wait_for') or diag(explain $b);
is(scalar(grep { $_->{index}{forced_refresh} } @{ $b->{items} }), 40, 'past max_refresh_listeners: forced on both nodes');
($st, $b) = req('n3', 'POST', '/ro/_search', '{"size":0}');
is($b->{hits}{total}{value}, 40, 'all 40 visible to search at once');

# explain, fields and docvalue_fields with hits fetched on the data nodes
($st, $b) = req('n3', 'POST', '/ro/_search', encode_json({
	size => 40, explain => JSON::PP::true, query => { match => { t => 'alpha gamma' } },
	docvalue_fields => [ 'k', { field => 'd', format => 'yyyy-MM-dd' } ], fields => ['n'] }));
is($st, 200, 'explain search through n3') or diag(explain $b);
my @h = @{ $b->{hits}{hits} };
is(scalar(@h), 40, '40 hits');
is(scalar(grep { defined $_->{_explanation} && unpack('f', pack('f', $_->{_explanation}{value})) == unpack('f', pack('f', $_->{_score})) } @h),
	40, 'every remote hit\'s explanation value is its _score');
is(scalar(grep { $_->{fields}{k}[0] =~ /^k\d$/ && $_->{fields}{d}[0] =~ /^2024-01-0\d$/ && $_->{fields}{n}[0] == substr($_->{_id}, 1) } @h),
	40, 'fields and docvalue_fields of remote hits');

# rescore in the remote query phases
($st, $b) = req('n3', 'POST', '/ro/_search', encode_json({
	size => 40, query => { match => { t => 'alpha' } },
	rescore => { window_size => 100, query => { rescore_query => { term => { k => 'k1' } }, query_weight => 0, rescore_query_weight => 1 } } }));
my @top = map { $_->{_id} } @{ $b->{hits}{hits} }[0 .. 9];
is(scalar(grep { (substr($_, 1) % 4) == 1 } @top), 10, 'rescored on the data nodes: the k1 docs first') or diag(explain \@top);

# explanations of rescored hits: the window membership comes back with
# each remote doc, so the fetch on the data node explains the rescore
($st, $b) = req('n3', 'POST', '/ro/_search', encode_json({
	size => 40, explain => JSON::PP::true, query => { match => { t => 'alpha' } },
	rescore => { window_size => 5, query => { rescore_query => { term => { k => 'k1' } }, rescore_query_weight => 2 } } }));
@h = @{ $b->{hits}{hits} };
is(scalar(grep { unpack('f', pack('f', $_->{_explanation}{value})) == unpack('f', pack('f', $_->{_score})) } @h),
	scalar(@h), 'every rescored remote hit\'s explanation value is its _score') or diag(explain $b);
ok((grep { $_->{_explanation}{description} eq 'sum of:' } @h) > 0
   && (grep { $_->{_explanation}{description} eq 'product of:' } @h) > 0,
   'hits in a window explained as "sum of:", the others "product of:"');

# _explain answered by the copy's node
($st, $b) = req('n3', 'POST', '/ro/_explain/d3', '{"query":{"match":{"t":"gamma"}}}');
is_deeply([ $st, $b->{matched} ], [ 200, JSON::PP::true ], '_explain of a remote doc') or diag(explain $b);
my $expl = $b->{explanation}{value};
($st, $b) = req('n3', 'POST', '/ro/_search', '{"query":{"bool":{"must":{"match":{"t":"gamma"}},"filter":{"ids":{"values":["d3"]}}}}}');
is(unpack('f', pack('f', $expl)), unpack('f', pack('f', $b->{hits}{hits}[0]{_score})), 'its value is the doc\'s score');
($st, $b) = req('n3', 'POST', '/ro/_explain/nope', '{"query":{"match_all":{}}}');
is_deeply([ $st, $b->{matched} ], [ 404, JSON::PP::false ], '_explain of a missing doc: 404');

# highlight fragments made on the data nodes, with the index's
# max_analyzed_offset as they have it (the settings reach them by the
# cluster state) and the request's, which truncates instead
($st, $b) = req('n3', 'POST', '/ro/_search', '{"size":40,"query":{"match":{"t":"gamma"}},"highlight":{"fields":{"t":{}}}}');
is($st, 200, 'highlight through n3') or diag(explain $b);
is(scalar(grep { ($_->{highlight}{t}[0] // '') =~ /^alpha <em>gamma<\/em> <em>gamma<\/em> w\d+$/ } @{ $b->{hits}{hits} }), 13,
	'the 13 gamma docs highlighted on their nodes') or diag(explain $b);
($st, $b) = req('n3', 'PUT', '/ro/_settings', '{"index":{"highlight.max_analyzed_offset":10}}');
is($st, 200, 'index.highlight.max_analyzed_offset 10');
ok($cluster->wait_for('the data nodes refuse text past 10', 30, sub {
	my ($s, $r) = req('n3', 'POST', '/ro/_search', '{"query":{"match":{"t":"gamma"}},"highlight":{"fields":{"t":{}}}}');
	return $s == 400 && encode_json($r) =~ /exceeds the \[index.highlight.max_analyzed_offset\] limit \[10\]/;
}), 'text longer than index.highlight.max_analyzed_offset: ES\'s error from the data nodes');
($st, $b) = req('n3', 'POST', '/ro/_search', '{"size":40,"query":{"match":{"t":"gamma"}},"highlight":{"max_analyzed_offset":9,"fields":{"t":{}}}}');
is(scalar(grep { ($_->{highlight}{t}[0] // '') =~ /^alpha <em>gamma<\/em> gamma w\d+$/ } @{ $b->{hits}{hits} }), 13,
	'the request\'s max_analyzed_offset 9: only the first gamma analysed') or diag(explain $b);

# get and mget filter _source on the copy
($st, $b) = req('n3', 'GET', '/ro/_doc/d5?_source_includes=k,n');
is_deeply($b->{_source}, { k => 'k1', n => 5 }, 'get with _source_includes through n3') or diag(explain $b);
($st, $b) = req('n3', 'POST', '/ro/_mget?_source_excludes=t,d', '{"docs":[{"_id":"d6"},{"_id":"d7","_source":["n"]}]}');
is_deeply([ map { $_->{_source} } @{ $b->{docs} } ], [ { k => 'k2', n => 6 }, { n => 7 } ], 'mget filters per doc')
  or diag(explain $b);

# an update's "get" carries the _source the data node wrote (bulk_items'
# reply), filtered on n3
($st, $b) = req('n3', 'POST', '/ro/_update/d8?_source_includes=n,k', '{"doc":{"n":800}}');
is_deeply([ $st, $b->{result}, $b->{get}{found}, $b->{get}{_source} ], [ 200, 'updated', JSON::PP::true, { k => 'k0', n => 800 } ],
	'update with _source through n3: the document as written') or diag(explain $b);

# DELETE _search/scroll/_all through n3 frees both data nodes' scroll contexts
($st, $b) = req('n3', 'POST', '/ro/_search?scroll=1m&size=5', '{}');
my $sid = $b->{_scroll_id};
($st, $b) = req('n3', 'DELETE', '/_search/scroll/_all');
is_deeply([ $st, $b->{num_freed} ], [ 200, 2 ], '_all freed the scroll on both data nodes') or diag(explain $b);
($st, $b) = req('n3', 'POST', '/_search/scroll', encode_json({ scroll => '1m', scroll_id => $sid }));
is($st, 404, 'the scroll is gone');

$cluster->teardown;
done_testing();
