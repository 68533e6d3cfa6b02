# The cluster state in etcd and the libpq transport, on three PostgreSQL
# nodes (two master-eligible data nodes, one coordinating-only) over a real
# three-member etcd cluster: index metadata changed through any node is
# decided by the master and applied everywhere, concurrent changes to one
# index lose nothing, the shards are placed on the data nodes, and
# _nodes/stats gathers every node's figures over libpq with ES's failure
# reporting (a peer that refuses the transport role, a peer that hangs).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use POSIX ();
use SeTest;
use SeCluster;

my $TTL = 5;
my $cluster = SeCluster->new(etcd_members => 3, name => 'tap210');
my %node;
for my $n (qw(n1 n2 n3))
{
	# peers log in to each other as the transport role
	$node{$n} = $cluster->new_node($n, ttl => $TTL, roles => ($n eq 'n3' ? '' : 'master,data'),
		extra => "search_engine.transport_conninfo = 'user=se_peer'\n");
	$node{$n}->safe_psql('postgres',
		"CREATE ROLE se_peer LOGIN IN ROLE search_engine_node; CREATE ROLE outsider LOGIN");
}

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

my $master;
ok($cluster->wait_for('a master all agree on', 30, sub {
	my $m = SeCluster::master_of($node{n1});
	return 0 if $m eq '' || grep { SeCluster::master_of($node{$_}) ne $m } qw(n2 n3);
	return 0 if grep { keys(%{ SeCluster::nodes_of($node{$_}) }) != 3 } qw(n1 n2 n3);
	$master = $m;
}), "the nodes agree on master $master");
my ($other) = grep { $_ ne $master } qw(n1 n2);

# ---- _nodes/stats and _cat/thread_pool over the transport
my ($status, $body) = req('n3', 'GET', '/_nodes/stats');
is($status, 200, '_nodes/stats answers on a coordinating-only node');
is("$body->{_nodes}{total}/$body->{_nodes}{successful}/$body->{_nodes}{failed}", '3/3/0',
	'_nodes/stats: every node answered');
is(join(',', sort map { $_->{name} } values %{ $body->{nodes} }), 'n1,n2,n3', 'one entry per node');
ok((grep { defined $_->{thread_pool}{write}{rejected} && defined $_->{thread_pool}{write}{queue} }
	values %{ $body->{nodes} }) == 3, 'each node reports its write thread pool');
is($node{n1}->safe_psql('postgres',
	"SELECT string_agg(node_name || ':' || name, ',' ORDER BY node_name, name) FROM search_engine.thread_pool"),
	'n1:search,n1:write,n2:search,n2:write,n3:search,n3:write',
	'_cat/thread_pool (the thread_pool view) lists every node\'s pools');
# transport: each node counts the libpq traffic of both sides (the first
# _nodes/stats above went out from n3 and was served by n1 and n2)
($status, $body) = req('n3', 'GET', '/_nodes/stats/transport');
my %tr = map { $_->{name} => $_->{transport} } values %{ $body->{nodes} };
ok($tr{n3}{tx_count} >= 2 && $tr{n3}{rx_count} >= 2 && $tr{n3}{total_outbound_connections} >= 2,
	'n3 sent requests to its peers and got their replies over connections it opened')
  or diag(explain \%tr);
ok((grep { $tr{$_}{server_open} >= 1 && $tr{$_}{rx_count} >= 1 && $tr{$_}{rx_size_in_bytes} > 0
		&& $tr{$_}{tx_size_in_bytes} > 0 } qw(n1 n2)) == 2,
	'n1 and n2 serve a peer connection and count what it carried');
($status, $body) = req('n1', 'GET', '/_nodes/_local/stats/thread_pool');
is(join(',', map { $_->{name} } values %{ $body->{nodes} }), 'n1', '_nodes/_local/stats is this node alone');

# ---- index metadata through the master, from any node
($status, $body) = req('n3', 'PUT', '/books',
	'{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"}}}}');
is($status, 200, 'create index through the coordinating-only node') or diag(explain $body);
is($body->{shards_acknowledged}, JSON::PP::true, 'and it answers once both shards started on their nodes');
my $w0 = time;
# three copies on two data nodes: the second replica is never placed
($status, $body) = req('n3', 'PUT', '/waiting?wait_for_active_shards=all&timeout=1s',
	'{"settings":{"number_of_shards":1,"number_of_replicas":2}}');
ok($status == 200 && !$body->{shards_acknowledged} && time - $w0 < 5,
	'wait_for_active_shards=all with more copies than data nodes: created, shards_acknowledged false after the timeout');
req('n3', 'DELETE', '/waiting');
my %uuid;
for my $n (qw(n1 n2 n3))
{
	($status, $body) = req($n, 'GET', '/books');
	$uuid{$n} = $status == 200 ? $body->{books}{settings}{index}{uuid} : "status $status";
}
ok($uuid{n1} && $uuid{n1} eq $uuid{n2} && $uuid{n2} eq $uuid{n3},
	"every node has the index with one uuid ($uuid{n1})");
($status, $body) = req($other, 'PUT', '/books', '{}');
is("$status $body->{error}{type}", '400 resource_already_exists_exception',
	'creating it again on another node is refused by the master');

# the shards are placed one per data node, never on the coordinating-only node
($status, $body) = req('n3', 'GET', '/_cluster/state/routing_table,nodes,metadata');
my $shards = $body->{routing_table}{indices}{books}{shards};
my $placed = join(',', sort map { $body->{nodes}{ $shards->{$_}[0]{node} // '' }{name} // 'none' } keys %$shards);
is($placed, 'n1,n2', "the two shards are on the two data nodes ($placed)");
is($body->{metadata}{indices}{books}{state}, 'open', '_cluster/state carries the index metadata');
is($body->{metadata}{indices}{books}{mappings}{properties}{title}{type}, 'text', 'with its mappings');
# every node shows the master's routing: each copy STARTED (its data node
# reported it to the master) under one allocation id, on the node holding it
sub routing_of
{
	my ($n, $index) = @_;
	my ($st, $b) = req($n, 'GET', '/_cluster/state/routing_table,nodes');
	my $sh = $b->{routing_table}{indices}{$index}{shards} // {};
	return join(',', map {
		my $c = $sh->{$_}[0];
		"$_:$c->{state}:" . ($b->{nodes}{ $c->{node} // '' }{name} // 'none') . ':' . ($c->{allocation_id}{id} // 'none')
	} sort keys %$sh);
}
my %routing = map { $_ => routing_of($_, 'books') } qw(n1 n2 n3);
like($routing{n3}, qr/^0:STARTED:n\d:[\w-]{22},1:STARTED:n\d:[\w-]{22}$/,
	"_cluster/state: both shards STARTED with allocation ids ($routing{n3})");
ok($routing{n1} eq $routing{n3} && $routing{n2} eq $routing{n3},
	'every node shows the same routing, allocation ids included');
# the master checks a report against its state: a stale allocation id changes nothing
my ($n0) = $routing{n3} =~ /^0:STARTED:(n\d):/;
my $stale = qq({"node":"$n0","shards":[{"index_uuid":"$uuid{n1}","shard":0,"allocation_id":"AAAAAAAAAAAAAAAAAAAAAA","message":"x"}]});
my (undef, $so) = $node{$master}->psql('postgres',
	"SET ROLE se_peer; SELECT encode(search_engine._transport('shard_failed', '$stale'), 'escape')");
like($so, qr/"applied":0/, 'a shard_failed naming a stale allocation id is ignored by the master');
is(routing_of('n3', 'books'), $routing{n3}, 'and the routing is unchanged');
(undef, $so) = $node{$other}->psql('postgres',
	"SET ROLE se_peer; SELECT encode(search_engine._transport('shard_started', '$stale'), 'escape')");
like($so, qr/not_master_exception/, 'a node that is not the master refuses shard reports');
($status, $body) = req('n2', 'GET', '/_cluster/state/routing_nodes,nodes');
my %by_node = map { $body->{nodes}{$_}{name} => join(',', map { "$_->{index}/$_->{shard}:$_->{state}" }
	grep { $_->{index} eq 'books' } @{ $body->{routing_nodes}{nodes}{$_} }) } keys %{ $body->{routing_nodes}{nodes} };
is(join(';', map { "$_=" . ($by_node{$_} // '') } sort keys %by_node),
	join(';', map { my $n = $_; "$n=" . join(',', map { "books/$_->[0]:STARTED" } grep { $_->[1] eq $n }
		map { [ (split /:/)[0, 2] ] } split /,/, $routing{n3}) } qw(n1 n2 n3)),
	'routing_nodes lists each copy under its node, none under the coordinating-only node');
($status, $body) = req('n1', 'GET', '/_cluster/health/books');
is("$body->{status} $body->{active_shards} $body->{initializing_shards} $body->{unassigned_shards}",
	'green 2 0 0', '_cluster/health from the routing: green, both shards active');

# created through a non-master data node: started as well, seen everywhere
($status, $body) = req($other, 'PUT', '/via_other', '{"settings":{"number_of_shards":3,"number_of_replicas":0}}');
is("$status $body->{shards_acknowledged}", '200 1', "create through $other waits for the master's routing");
like(routing_of($master, 'via_other'), qr/^0:STARTED:n\d:\S+,1:STARTED:n\d:\S+,2:STARTED:n\d:\S+$/,
	'the master\'s state has its three shards STARTED');
ok($cluster->wait_for('every node applied the started shards', 10, sub {
	my %r = map { $_ => routing_of($_, 'via_other') } qw(n1 n2 n3);
	$r{n1} eq $r{n2} && $r{n2} eq $r{n3} && $r{n1} eq routing_of($master, 'via_other') }),
	'and so has every node\'s');

# a shard whose open fails on its node: shard_failed makes it UNASSIGNED
my @dirs = map { $node{$_}->data_dir . '/search_engine/indices' } qw(n1 n2);
my @modes = map { (stat $_)[2] & 07777 } @dirs;
chmod 0555, @dirs;
($status, $body) = req('n3', 'PUT', '/broken?wait_for_active_shards=0',
	'{"settings":{"number_of_shards":2,"number_of_replicas":0}}');
is($status, 200, 'an index whose shards cannot be created on their nodes is still created');
ok($cluster->wait_for('the failed shards become unassigned', 40, sub {
	routing_of('n3', 'broken') eq '0:UNASSIGNED:none:none,1:UNASSIGNED:none:none' }),
	'both shards failed to open and the master unassigned them: ' . routing_of('n3', 'broken'));
# the allocator tries a failed copy again, up to index.allocation.max_retries (5)
my $u;
$cluster->wait_for('five failed attempts', 30, sub {
	($status, $body) = req('n1', 'GET', '/_cluster/state/routing_table');
	$u = $body->{routing_table}{indices}{broken}{shards}{0}[0];
	($u->{unassigned_info}{failed_attempts} // 0) == 5;
});
chmod $modes[$_], $dirs[$_] for 0 .. $#dirs;
# (deleted only now: its nodes could not remove its directories before)
req('n3', 'DELETE', '/via_other');
is("$u->{state} $u->{unassigned_info}{reason} $u->{unassigned_info}{failed_attempts}", 'UNASSIGNED ALLOCATION_FAILED 5',
	'with ES\'s unassigned_info, after index.allocation.max_retries attempts');
like($u->{unassigned_info}{details} // '', qr/failed shard on node \[n\d\]/, 'saying which node failed it');
($status, $body) = req('n2', 'GET', '/_cluster/health/broken');
is("$body->{status} $body->{unassigned_shards}", 'red 2', '_cluster/health: red, two unassigned shards');
($status, $body) = req('n3', 'GET', '/_cat/shards/broken?format=json&h=shard,state,node');
is(join(',', map { "$_->{shard}:$_->{state}:" . ($_->{node} // '') } sort { $a->{shard} <=> $b->{shard} } @$body),
	'0:UNASSIGNED:,1:UNASSIGNED:', '_cat/shards shows them unassigned, on no node');
req('n3', 'POST', '/broken/_close');
($status, $body) = req('n3', 'POST', '/broken/_open');
ok($cluster->wait_for('the reopened index starts', 20, sub {
	routing_of('n3', 'broken') =~ /^0:STARTED:n\d:\S+,1:STARTED:n\d:\S+$/ }),
	'reopened once the directory is writable: placed again and STARTED');
req('n3', 'DELETE', '/broken');


# concurrent mapping updates of one index from two nodes: both land
my @kids;
for my $i (0 .. 1)
{
	my $n = $i == 0 ? 'n1' : 'n2';
	my $pid = fork();
	if ($pid == 0)
	{
		my $failed = 0;
		for my $k (1 .. 10)
		{
			my ($ret, $out, $err) = $node{$n}->psql('postgres',
				"SELECT search_engine.put_mapping('books', '{\"properties\":{\"f_${n}_$k\":{\"type\":\"keyword\"}}}')");
			if ($ret != 0)
			{
				print STDERR "put_mapping on $n: $err\n";
				$failed = 1;
			}
		}
		# no END blocks in the child: they would stop the test's servers
		POSIX::_exit($failed);
	}
	push @kids, $pid;
}
waitpid($_, 0) for @kids;
my %fields;
for my $n (qw(n1 n2 n3))
{
	($status, $body) = req($n, 'GET', '/books/_mapping');
	$fields{$n} = join(',', sort grep { /^f_/ } keys %{ $body->{books}{mappings}{properties} });
}
is(scalar(split /,/, $fields{n3}), 20, 'twenty concurrent mapping updates from two nodes all landed');
ok($fields{n1} eq $fields{n3} && $fields{n2} eq $fields{n3}, 'and every node applied the same mapping');

# ---- requests across nodes: bulk, get, mget, search and count through any node
# the same documents on a single-node server: the answers must be the same
my $ref = SeTest::new_node('ref', write_threads => 1);
$ref->safe_psql('postgres', q{SELECT search_engine.create_index('books',
	'{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"}}}}')});
my @words = qw(alpha beta gamma delta epsilon zeta eta theta iota kappa);
my $ndjson = '';
for my $i (1 .. 200)
{
	my $title = join(' ', map { $words[($i * $_ + $_) % @words] } 1 .. (1 + $i % 5));
	$ndjson .= qq({"index":{"_id":"d$i"}}\n{"title":"$title","n":$i}\n);
}
for my $target ($node{n3}, $ref)
{
	my $out = $target->safe_psql('postgres',
		"SELECT (search_engine.bulk(\$b\$$ndjson\$b\$, 'books', 'true'))::jsonb->>'errors'");
	is($out, 'false', 'bulk of 200 documents without errors (' . $target->name . ')');
}
is($node{n3}->safe_psql('postgres', "SELECT search_engine.count('books', NULL)"), '200',
	'count through the coordinating-only node sees both data nodes\' shards');
my $q = '{"query":{"match":{"title":"alpha gamma"}},"size":15}';
my $want = $ref->safe_psql('postgres',
	"SELECT string_agg((h->>'_id') || ':' || (h->>'_score'), ',') FROM jsonb_array_elements((search_engine.search('books', '$q'))->'hits'->'hits') h");
for my $n (qw(n1 n2 n3))
{
	is($node{$n}->safe_psql('postgres',
		"SELECT string_agg((h->>'_id') || ':' || (h->>'_score'), ',') FROM jsonb_array_elements((search_engine.search('books', '$q'))->'hits'->'hits') h"),
		$want, "search through $n: the single node's hits, order and scores");
}
# dfs_query_then_fetch: the statistics of both nodes' shards, summed, so
# the scores are those of one shard holding every document
$ref->safe_psql('postgres', q{SELECT search_engine.create_index('books1',
	'{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{"title":{"type":"text"}}}}')});
is($ref->safe_psql('postgres',
	"SELECT (search_engine.bulk(\$b\$$ndjson\$b\$, 'books1', 'true'))::jsonb->>'errors'"), 'false',
	'the same documents in a one-shard index on the single node');
sub scores_by_id
{
	my ($target, $index, $query, $type) = @_;
	return $target->safe_psql('postgres',
		"SELECT string_agg((h->>'_id') || ':' || (h->>'_score'), ',' ORDER BY h->>'_id') FROM jsonb_array_elements("
		  . "(search_engine.search('$index', '$query', '$type'))->'hits'->'hits') h");
}
for my $dq ('{"query":{"match":{"title":"alpha gamma kappa"}},"size":200}',
	'{"query":{"match_phrase":{"title":"delta eta"}},"size":200}',
	'{"query":{"bool":{"should":[{"match":{"title":"zeta"}},{"term":{"title":"eta"}}],"must_not":[{"match":{"title":"iota"}}]}},"size":200}')
{
	my $one = scores_by_id($ref, 'books1', $dq, 'query_then_fetch');
	isnt(scores_by_id($node{n1}, 'books', $dq, 'query_then_fetch'), $one,
		"without DFS the two nodes' shards score otherwise than one shard: $dq");
	for my $n (qw(n1 n2 n3))
	{
		is(scores_by_id($node{$n}, 'books', $dq, 'dfs_query_then_fetch'), $one,
			"dfs_query_then_fetch through $n: the one-shard index's hits and scores");
	}
}
($status, $body) = req('n3', 'GET', '/books/_search?search_type=dfs_query_then_fetch&size=5',
	'{"query":{"match":{"title":"alpha gamma kappa"}}}');
my $rest_scores = join(',', map { $_->{_score} } @{ $body->{hits}{hits} });
is($rest_scores, $ref->safe_psql('postgres',
	"SELECT string_agg(h->>'_score', ',') FROM jsonb_array_elements((search_engine.search('books1', "
	  . "'{\"query\":{\"match\":{\"title\":\"alpha gamma kappa\"}},\"size\":5}'))->'hits'->'hits') h"),
	'?search_type=dfs_query_then_fetch through the REST router on the coordinating-only node: the top scores');
($status, $body) = req('n3', 'GET', '/books/_search?search_type=nope', '{}');
is("$status $body->{error}{type}", '400 illegal_argument_exception', 'an unknown search_type is a 400');
is($node{n1}->safe_psql('postgres',
	"SELECT (search_engine.search('books', '{\"query\":{\"match_all\":{}},\"sort\":[{\"n\":\"desc\"}],\"from\":3,\"size\":4}'))->'hits'->'hits' @? '\$[*] ? (@._source.n == 197)'"),
	't', 'a sorted, paged search merges both nodes\' shards');
is($node{n3}->safe_psql('postgres',
	"SELECT string_agg((search_engine.get_doc('books', 'd' || i))->>'found', ',') FROM generate_series(1, 6) i"),
	'true,true,true,true,true,true', 'get through the coordinating-only node finds documents on both data nodes');
is($node{n3}->safe_psql('postgres',
	"SELECT (search_engine.get_doc('books', 'd7'))->'_source'->>'n'"), '7', 'with their source');
my $items = $node{n3}->safe_psql('postgres',
	"SELECT string_agg(i->(SELECT k FROM jsonb_object_keys(i) k)->>'status', ',') FROM jsonb_array_elements((search_engine.bulk("
	  . "\$b\$" . qq({"create":{"_id":"d1"}}\n{"title":"dup"}\n{"create":{"_id":"d2"}}\n{"title":"dup"}\n{"create":{"_id":"new1"}}\n{"title":"new"}\n)
	  . "\$b\$, 'books'))::jsonb->'items') i");
is($items, '409,409,201',
	'per-item outcomes come back from the nodes holding the shards');

# refresh through the coordinating-only node reaches both data nodes' shards
my $more = join('', map { qq({"index":{"_id":"late$_"}}\n{"title":"late"}\n) } 1 .. 10);
$node{n3}->safe_psql('postgres', "SELECT search_engine.bulk(\$b\$$more\$b\$, 'books', 'false')");
($status, $body) = req('n3', 'POST', '/books/_refresh');
is("$body->{_shards}{total}/$body->{_shards}{successful}/$body->{_shards}{failed}", '2/2/0',
	'_refresh through the coordinating-only node refreshes both data nodes\' shards');
is($node{n1}->safe_psql('postgres', "SELECT search_engine.count('books', '{\"query\":{\"match\":{\"title\":\"late\"}}}')"),
	'10', 'and the refreshed documents are searchable from every node');
($status, $body) = req('n3', 'GET', '/_cat/shards/books?format=json&h=shard,state,docs,node');
is(join(',', sort map { "$_->{node}:$_->{state}" } @$body), 'n1:STARTED,n2:STARTED',
	'_cat/shards on the coordinating-only node shows each shard started on its node');
my $docs = 0;
$docs += $_->{docs} for @$body;
is($docs, 211, 'with the documents each node holds');
is($node{n3}->safe_psql('postgres', "SELECT \"docs.count\" || ' ' || health FROM search_engine.indices WHERE index = 'books'"),
	'211 green', '_cat/indices (the indices view) adds up the shards of every node');
($status, $body) = req('n3', 'GET', '/_cat/segments/books?format=json&h=shard,docs.count');
my %segdocs;
$segdocs{ $_->{shard} } += $_->{'docs.count'} for @$body;
ok(keys(%segdocs) == 2 && $segdocs{0} + $segdocs{1} == 211,
	'_cat/segments on the coordinating-only node lists the segments of both data nodes\' shards');
($status, $body) = req('n3', 'GET', '/_cluster/health/books');
is("$body->{status} $body->{active_primary_shards}", 'green 2',
	'_cluster/health on the coordinating-only node counts the shards started on the data nodes');

# ---- the FDW against the cluster: a foreign table on any node sees the
# whole index (local shards in-process, the others through the transport),
# with the single-node server's answers
$ref->safe_psql('postgres', "SELECT search_engine.bulk(\$b\$"
	  . qq({"create":{"_id":"new1"}}\n{"title":"new"}\n) . $more . "\$b\$, 'books', 'true')");
my $fdw_ddl = q{
	CREATE SERVER se FOREIGN DATA WRAPPER search_engine;
	CREATE FOREIGN TABLE books (_id text, title text, n bigint, _score real,
		_seq_no bigint, _primary_term bigint) SERVER se OPTIONS (index 'books');
	CREATE FOREIGN TABLE books_over (_id text, title text, n bigint)
		SERVER se OPTIONS (index 'books', op_type 'index');
};
$_->safe_psql('postgres', $fdw_ddl) for ($node{n1}, $node{n3}, $ref);
my %fdw_q = (
	'count(*)' => 'SELECT count(*) FROM books',
	'pushed-down match' => q{SELECT string_agg(_id, ',' ORDER BY _id) FROM books
		WHERE title OPERATOR(search_engine.@@@) 'gamma' AND n > 20},
	'ORDER BY _score LIMIT' => q{SELECT string_agg(_id || ':' || _score, ',') FROM
		(SELECT _id, _score FROM books WHERE title OPERATOR(search_engine.@@@) 'alpha gamma'
		 ORDER BY _score DESC LIMIT 12) s},
	'ORDER BY a field OFFSET LIMIT' => q{SELECT string_agg(_id, ',') FROM
		(SELECT _id FROM books ORDER BY n DESC NULLS LAST OFFSET 3 LIMIT 5) s},
	'aggregates' => q{SELECT count(*) || ' ' || count(n) || ' ' || sum(n) || ' ' || min(n) || ' '
		|| max(n) || ' ' || round(avg(n), 6) FROM books WHERE title OPERATOR(search_engine.@@@) 'beta'},
	'GROUP BY' => q{SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT (n / 50) || ':' || count(*)
		|| ':' || sum(n) AS g FROM books WHERE n > 0 GROUP BY n / 50) s},
	'GROUP BY a column' => q{SELECT string_agg(coalesce(n::text, 'null') || '=' || c, ',' ORDER BY n)
		FROM (SELECT n, count(*) c FROM books GROUP BY n) s},
	'lookup by _id' => q{SELECT string_agg(_id || ':' || n || ':' || title, ',' ORDER BY _id)
		FROM books WHERE _id IN ('d7', 'd8', 'd150')},
	'every row' => q{SELECT count(*) || ' ' || sum(n) || ' ' || sum(length(title)) FROM
		(SELECT * FROM books OFFSET 0) s},
);
my %fdw_want = map { $_ => $ref->safe_psql('postgres', $fdw_q{$_}) } keys %fdw_q;
for my $n (qw(n3 n1))
{
	for my $k (sort keys %fdw_q)
	{
		is($node{$n}->safe_psql('postgres', $fdw_q{$k}), $fdw_want{$k},
			"foreign table on $n: $k as on one node");
	}
}
like($fdw_want{'ORDER BY _score LIMIT'}, qr/^d\d+:\d/, 'the top-k query has hits');
unlike($node{n3}->safe_psql('postgres', "EXPLAIN (COSTS OFF) $fdw_q{'ORDER BY _score LIMIT'}"),
	qr/Sort|Limit/, 'ORDER BY _score LIMIT is the engine\'s top-k across the nodes');
like($node{n3}->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $fdw_q{'GROUP BY a column'}"),
	qr/aggregation over doc values/,
	'GROUP BY is pushed down on a node without shards (the data nodes aggregate theirs)');

# a remote scan longer than one batch (1000 documents) pages through its
# node's scan context
my $many = join('', map { qq({"index":{"_id":"m$_"}}\n{"k":"k@{[$_ % 7]}","n":$_}\n) } 1 .. 2600);
for my $target ($node{n3}, $ref)
{
	$target->safe_psql('postgres', q{SELECT search_engine.create_index('many',
		'{"settings":{"number_of_shards":2,"number_of_replicas":0}}')});
	is($target->safe_psql('postgres',
		"SELECT (search_engine.bulk(\$b\$$many\$b\$, 'many', 'true'))::jsonb->>'errors'"), 'false',
		'2600 more documents (' . $target->name . ')');
	$target->safe_psql('postgres', q{CREATE FOREIGN TABLE many (_id text, k text, n bigint)
		SERVER se OPTIONS (index 'many')});
}
my $many_q = q{SELECT count(*) || ' ' || count(DISTINCT _id) || ' ' || sum(n) || ' ' || sum(length(k))
	FROM (SELECT * FROM many OFFSET 0) s};
is($node{n3}->safe_psql('postgres', $many_q), $ref->safe_psql('postgres', $many_q),
	'every row of a scan of several batches per node, as on one node');
like($node{n3}->safe_psql('postgres', $many_q), qr/^2600 2600 /, 'all of them');
$many_q = q{SELECT string_agg(k || ':' || c || ':' || s, ',' ORDER BY k) FROM
	(SELECT k, count(*) c, sum(n) s FROM many GROUP BY k) x};
is($node{n3}->safe_psql('postgres', $many_q), $ref->safe_psql('postgres', $many_q),
	'GROUP BY a keyword merges the nodes\' groups');
# the index privilege is checked on the coordinating node, for the caller;
# the data nodes serve their search_engine_node peer
$node{n3}->safe_psql('postgres', 'GRANT SELECT ON books TO outsider');
my $as_outsider = q{SET ROLE outsider; SELECT count(*) || ' ' || sum(n) FROM (SELECT * FROM books OFFSET 0) s};
my ($pret, $pout, $perr) = $node{n3}->psql('postgres', $as_outsider);
like($perr, qr/security_exception|permission|privilege/i,
	'a role with SELECT on the foreign table but no read on the index is refused');
$node{n3}->safe_psql('postgres', "SELECT search_engine.grant('read', 'books', 'outsider')");
is($node{n3}->safe_psql('postgres', $as_outsider),
	$node{n3}->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(n) FROM (SELECT * FROM books OFFSET 0) s}),
	'granted read on n3 alone, it reads the shards of the data nodes through n3');
($status, $body) = req('n3', 'DELETE', '/many');
is($status, 200, 'the index of many documents is deleted again');

# ANALYZE samples and IMPORT FOREIGN SCHEMA guesses columns through the
# same remote scan
my $sample_q = q{ANALYZE books; CREATE SCHEMA imp; IMPORT FOREIGN SCHEMA "books" FROM SERVER se INTO imp;
	SELECT (SELECT reltuples FROM pg_class WHERE oid = 'books'::regclass) || ' ' ||
	(SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
	 FROM pg_attribute WHERE attrelid = 'imp.books'::regclass AND attnum > 0
	   AND attname NOT LIKE 'f\\_n%') || ' ' || (SELECT count(*) FROM imp.books)};
is($node{n3}->safe_psql('postgres', $sample_q), $ref->safe_psql('postgres', $sample_q),
	'ANALYZE and IMPORT FOREIGN SCHEMA on n3 see what they see on one node (but the mapping updates above)');

# writes of rows living on other nodes' shards: the scan carries their
# _seq_no / _primary_term, bulk routes the conditional writes
my $fdw_w = q{
	UPDATE books SET n = n + 1000 WHERE _id IN ('d1', 'd2', 'd3', 'd4');
	UPDATE books SET title = 'renamed' WHERE title OPERATOR(search_engine.@@@) 'late';
	DELETE FROM books WHERE _id IN ('d5', 'd6', 'late1', 'new1');
	INSERT INTO books_over VALUES ('d9', 'overwritten', 9), ('d10', 'overwritten', 10);
};
$_->safe_psql('postgres', $fdw_w) for ($node{n3}, $ref);
my $after = q{SELECT count(*) || ' ' || sum(n) || ' ' || string_agg(_id || ':' || title || ':' || coalesce(n::text, ''), ','
	ORDER BY _id) FROM books WHERE _id IN ('d1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd9', 'd10', 'late1', 'late2', 'new1')
	OR title OPERATOR(search_engine.@@@) 'renamed'};
$fdw_want{after} = $ref->safe_psql('postgres', $after);
like($fdw_want{after}, qr/^15 .*d1:.*:1001,/, 'the writes applied on one node');
is($node{$_}->safe_psql('postgres', $after), $fdw_want{after},
	"UPDATE / DELETE / INSERT through n3 of rows on the data nodes: read back through $_ as on one node")
	for qw(n1 n3);
is($node{n3}->safe_psql('postgres', 'SELECT count(*) FROM books'), $ref->safe_psql('postgres', 'SELECT count(*) FROM books'),
	'and the count after them');
# a conditional write whose read is stale fails (the remote scan's _seq_no is checked)
my ($fret, $fout, $ferr) = $node{n3}->psql('postgres', q{
	BEGIN;
	UPDATE books SET n = 1 WHERE _id = 'd11';
	SELECT search_engine.bulk($b${"index":{"_id":"d11"}}
{"title":"meanwhile","n":11}
$b$, 'books', 'true');
	COMMIT;}, on_error_stop => 1);
like($ferr, qr/version_conflict|40001|conflict/i, 'an UPDATE of a remote row changed after the scan fails at commit');
is($node{n1}->safe_psql('postgres', "SELECT title FROM books WHERE _id = 'd11'"), 'meanwhile',
	'and leaves the other write in place');

# ---- update/delete-by-query and reindex: slices run on the nodes holding their shards
# (children of the coordinating node's task), with the single node's results
for my $t ($node{n1}, $node{n2}, $node{n3}, $ref)
{
	$t->safe_psql('postgres', 'CREATE ROLE ubq_user IN ROLE search_engine_write');
}
$node{n3}->safe_psql('postgres', 'CREATE ROLE ubq_lone IN ROLE search_engine_write');
my $ubq_docs = join('', map { qq({"index":{"_id":"u$_"}}\n{"n":$_,"tag":") . ($_ % 3 == 0 ? 'three' : 'other')
	  . qq(","title":"doc $_"}\n) } 1 .. 300);
for my $t ($node{n3}, $ref)
{
	for my $idx (qw(ubq ubq_copy))
	{
		$t->safe_psql('postgres', qq{SELECT search_engine.create_index('$idx',
			'{"settings":{"number_of_shards":4,"number_of_replicas":0},"mappings":{"properties":{"n":{"type":"integer"},"tag":{"type":"keyword"},"title":{"type":"text"}}}}')});
	}
	is($t->safe_psql('postgres', "SELECT (search_engine.bulk(\$b\$$ubq_docs\$b\$, 'ubq', 'true'))::jsonb->>'errors'"),
		'false', 'by-query documents loaded (' . $t->name . ')');
}
($status, $body) = req('n3', 'GET', '/_cat/shards/ubq?format=json&h=shard,node');
is(join(',', sort map { $_->{node} } @$body), 'n1,n1,n2,n2', 'ubq has two shards on each data node');

# each operation's counters (and per-slice updated/deleted), through a node or on the single node
my @ubq_ops = (
	[ 'n3', 'update_by_query', q{'ubq', '{"query":{"term":{"tag":"three"}},"script":{"source":"ctx._source.n += params.inc; ctx._source.seen = true","params":{"inc":1000}}}', slices => 'auto'} ],
	[ 'n1', 'update_by_query', q{'ubq', '{"script":{"source":"if (ctx._source.n > 1000) { ctx.op = \"noop\" } else if (ctx._source.n <= 30) { ctx.op = \"delete\" } else { ctx._source.pass = 1 }"}}', slices => '3'} ],
	[ 'n3', 'delete_by_query', q{'ubq', '{"query":{"range":{"n":{"gte":250,"lte":280}}}}', slices => '6'} ],
	[ 'n3', 'reindex', q{'{"source":{"index":"ubq","query":{"range":{"n":{"lt":100}}}},"dest":{"index":"ubq_copy"},"script":{"source":"ctx._source.copied = true"}}', slices => '2'} ],
	[ 'n2', 'update_by_query', q{'ubq', '{"query":{"match":{"title":"doc"}},"script":{"source":"ctx._source.tail = ctx._id"}}', slices => '1'} ],
	# max_docs: a slice's shards on two nodes share its limit, never exceeding it
	[ 'n3', 'update_by_query', q{'ubq', '{"max_docs":10}', slices => '3'} ],
	[ 'n1', 'update_by_query', q{'ubq', '{"max_docs":7}', slices => '1'} ],
);
for my $op (@ubq_ops)
{
	my ($via, $fn, $args) = @$op;
	my $sql = "SET ROLE ubq_user; SELECT concat_ws('/', r->'total', r->'updated', r->'created', r->'deleted', r->'noops', "
	  . "r->'version_conflicts', jsonb_array_length(r->'failures'), "
	  . "(SELECT string_agg((s->'updated')::text || ':' || (s->'deleted')::text, ',') FROM jsonb_array_elements(r->'slices') s)) "
	  . "FROM search_engine.$fn($args, refresh => true) r";
	my ($ret, $got, $err) = $node{$via}->psql('postgres', $sql);
	my $want = $ref->safe_psql('postgres', $sql);
	is($got, $want, "$fn ($args) through $via: the single node's counters ($want)") or diag($err);
}
for my $idx (qw(ubq ubq_copy))
{
	my $q = q{SELECT string_agg((h->>'_id') || '=' || (h->'_source')::text, ',' ORDER BY h->>'_id') FROM jsonb_array_elements((search_engine.search('IDX', '{"size":500,"query":{"match_all":{}}}'))->'hits'->'hits') h};
	$q =~ s/IDX/$idx/;
	my $want = $ref->safe_psql('postgres', $q);
	ok(length($want) > 100 && $node{n3}->safe_psql('postgres', $q) eq $want,
		"$idx afterwards: the single node's documents, every one");
}
my $mq = q{SELECT string_agg(h->>'_id', ',') FROM jsonb_array_elements((search_engine.search('ubq', '{"query":{"bool":{"must":{"match":{"title":"doc"}},"filter":{"exists":{"field":"seen"}}}},"sort":[{"n":"desc"}],"size":5}'))->'hits'->'hits') h};
is($node{n1}->safe_psql('postgres', $mq), $ref->safe_psql('postgres', $mq), 'and the same search hits');

# the role that asked runs the slices on every node: one missing there is refused
my ($r0, $o0, $e0) = $node{n3}->psql('postgres', "SET ROLE ubq_lone; SELECT search_engine.update_by_query('ubq', '{}')");
like($e0, qr/security_exception.*no such role on node|no such role on node/s,
	'a role that does not exist on the data nodes: 403 security_exception');

# ---- tasks cluster-wide: listed, read, rethrottled and cancelled through any node
my $task = $node{n3}->safe_psql('postgres',
	q{SET ROLE ubq_user; SELECT search_engine.update_by_query('ubq', '{"script":{"source":"ctx._source.slow = 1"}}', slices => 'auto', scroll_size => 2, requests_per_second => 4, wait_for_completion => false)->>'task'});
like($task, qr/^n3:\d+$/, "the task belongs to the coordinating node ($task)");
my %children;
ok($cluster->wait_for('the children on both data nodes', 10, sub {
	($status, $body) = req('n3', 'GET', '/_tasks?actions=*byquery');
	%children = ();
	for my $n (keys %{ $body->{nodes} })
	{
		for my $id (keys %{ $body->{nodes}{$n}{tasks} })
		{
			$children{$n} = $id if ($body->{nodes}{$n}{tasks}{$id}{parent_task_id} // '') eq $task;
		}
	}
	return $body->{nodes}{n3}{tasks}{$task} && $children{n1} && $children{n2};
}), 'GET /_tasks through n3 lists the parent on n3 and its children on n1 and n2');
($status, $body) = req('n1', 'GET', '/_tasks?actions=*byquery');
is(join(',', map { scalar(keys %{ $body->{nodes}{$_}{tasks} }) } qw(n1 n2 n3)), '1,1,1',
	'and so does GET /_tasks through a data node');
is($node{n3}->safe_psql('postgres',
	"SET ROLE ubq_user; SELECT string_agg(node, ',' ORDER BY node) FROM search_engine.tasks WHERE status = 'running'"),
	'n1,n2,n3', 'and the tasks view on n3 shows the running tasks of every node');
($status, $body) = req('n2', 'GET', "/_tasks/$task");
is("$status $body->{completed} $body->{task}{node}", "200 0 n3", 'get_task of n3\'s task through n2');
($status, $body) = req('n3', 'GET', "/_tasks/$children{n1}");
is("$status $body->{task}{parent_task_id}", "200 $task", 'a child read through n3 names its parent');
($status, $body) = req('n1', 'POST', "/_update_by_query/$task/_rethrottle?requests_per_second=6");
is($status, 200, 'rethrottle through n1');
ok($cluster->wait_for('the child on n2 has its part of the new throttle', 10, sub {
	($status, $body) = req('n3', 'GET', "/_tasks/$children{n2}");
	($body->{task}{status}{requests_per_second} // 0) == 3;
}), 'the parent divides the new throttle among its children (n2 holds half the shards: 3 of 6)');
($status, $body) = req('n2', 'POST', "/_tasks/$task/_cancel");
is($status, 200, 'cancel through n2');
($status, $body) = req('n1', 'GET', "/_tasks/$task?wait_for_completion=true");
ok($body->{completed} && ($body->{response}{canceled} // '') eq 'by user request'
	&& $body->{response}{updated} < 270, "the cancelled task ends early ($body->{response}{updated} updated)")
	or diag(explain $body);
ok($cluster->wait_for('the children stopped too', 10, sub {
	($status, $body) = req('n3', 'GET', '/_tasks?actions=*byquery');
	!grep { %{ $body->{nodes}{$_}{tasks} } } keys %{ $body->{nodes} };
}), 'cancelling the parent cancelled its children on the other nodes');
($status, $body) = req('n3', 'GET', '/_tasks/n9:1');
is($status, 404, 'a task of a node outside the cluster is 404');

# ---- delete through a non-master: gone on every node, shards closed
($status, $body) = req($other, 'DELETE', '/books');
is($status, 200, 'delete through a non-master node');
is(join(',', map { (req($_, 'GET', '/books'))[0] } qw(n1 n2 n3)), '404,404,404',
	'the index is gone on every node');
ok($cluster->wait_for('the data nodes closed their shards of books', 20, sub {
	!grep { $node{$_}->safe_psql('postgres', "SELECT count(*) FROM search_engine.shards WHERE index = 'books'") ne '0' } qw(n1 n2)
}), 'the data nodes stopped their shards of the deleted index');

# ---- the transport's failures, reported per node as ES does
$node{n1}->safe_psql('postgres', "ALTER SYSTEM SET search_engine.transport_conninfo = 'user=outsider'; SELECT pg_reload_conf()");
usleep(300_000);
($status, $body) = req('n1', 'GET', '/_nodes/stats');
is("$body->{_nodes}{successful}/$body->{_nodes}{failed}", '1/2',
	'a transport login without search_engine_node fails on both peers');
like($body->{_nodes}{failures}[0]{reason} // '', qr/permission denied/,
	'and the failure says the peer refused the role');
$node{n1}->safe_psql('postgres', "ALTER SYSTEM RESET search_engine.transport_conninfo; SELECT pg_reload_conf()");
$node{n1}->safe_psql('postgres', "ALTER SYSTEM SET search_engine.transport_conninfo = 'user=se_peer'; SELECT pg_reload_conf()");
usleep(300_000);

my ($r, $o, $e) = $node{n2}->psql('postgres',
	"SET ROLE outsider; SELECT search_engine._transport('node_stats', '')");
like($e, qr/permission denied/, 'a role outside search_engine_node cannot call _transport');
($r, $o, $e) = $node{n2}->psql('postgres',
	"SET ROLE se_peer; SELECT encode(search_engine._transport('no_such_action', ''), 'escape')");
like($o, qr/action_not_found_transport_exception/, 'an unknown action is ES\'s action_not_found_transport_exception');

# a peer that hangs: the deadline holds and the others still answer
my @stopped = (SeTest::postmaster_pid($node{n2}));
push @stopped, grep { /^\d+$/ } split /\s+/, `pgrep -P $stopped[0]`;
kill 'STOP', @stopped;
my $t0 = time;
($status, $body) = req('n3', 'GET', '/_nodes/stats?timeout=1s');
my $took = time - $t0;
kill 'CONT', @stopped;
is("$body->{_nodes}{successful}/$body->{_nodes}{failed}", '2/1', 'a stopped peer is one failed node');
ok($took < 4, sprintf('_nodes/stats?timeout=1s answered in %.2fs despite it', $took));

# ---- a new master after kill -9 still decides, from the state in etcd
# (and a node holding a child of a running task dies with it: the task
# records that node's failure instead of waiting for it forever)
my $dying = $node{n3}->safe_psql('postgres',
	q{SET ROLE ubq_user; SELECT search_engine.update_by_query('ubq', '{"script":{"source":"ctx._source.late = 1"}}', slices => 'auto', scroll_size => 5, requests_per_second => 40, wait_for_completion => false)->>'task'});
usleep(500_000);
SeTest::crash($node{$master});
SeTest::after_crash($node{$master});
($status, $body) = req('n3', 'GET', "/_tasks/$dying?wait_for_completion=true");
ok($body->{completed} && (grep { ($_->{node} // '') eq $master } @{ $body->{response}{failures} // [] }),
	"a task whose child's node died ends with that node's failure") or diag(explain $body);
cmp_ok($body->{response}{updated} // 0, '>', 0, 'keeping what the surviving node updated');
ok($cluster->wait_for("$other becomes master", 2 * $TTL + 10,
	sub { SeCluster::master_of($node{$other}) eq $other }), "$other took over");
($status, $body) = req('n3', 'PUT', '/after', '{"settings":{"number_of_shards":1,"number_of_replicas":0}}');
is($status, 200, 'the new master creates an index requested on another node');
($status, $body) = req($other, 'GET', '/after');
is($status, 200, 'and it is applied on the master');
$node{$master}->start;
ok($cluster->wait_for('the restarted node applied the state', 30, sub {
	(req($master, 'GET', '/after'))[0] == 200
}), 'the restarted old master reads the index created while it was down');

my $log = join('', map { slurp_file($node{$_}->logfile) } qw(n1 n2 n3));
unlike($log, qr/PANIC|terminated by signal 11|TRAP:/, 'no crash in any server log');

$ref->stop;
$cluster->teardown;
done_testing();
