# geo_point over shards on other nodes (issue 17): two data nodes (n1, n2)
# and a dedicated master (n3, which holds no shard and so coordinates every
# shard remotely), an index of 2 shards, no replica.  ES's museums example:
# the geo queries, the _geo_distance sort's values (computed per shard and
# carried as sort values) and the geo aggregations (per-shard states, geo
# bounds' longitudes among them, reduced at the coordinator) give through
# n3 what ES documents and the same as through n1 (one shard local).
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

my ($cluster, $nodes) = SeCluster->data_nodes_and_master(etcd_members => 3, name => 'tap299');
my %node = %$nodes;
my $canon = JSON::PP->new->canonical;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

$cluster->index_on_data_nodes(\%node, 'museums', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"location":{"type":"geo_point"},"city":{"type":"keyword"}}}}');
my ($st, $b);

my @docs = (
	[ 'POINT (4.912350 52.374081)', 'Amsterdam' ], [ 'POINT (4.901618 52.369219)', 'Amsterdam' ],
	[ 'POINT (4.914722 52.371667)', 'Amsterdam' ], [ 'POINT (4.405200 51.222900)', 'Antwerp' ],
	[ 'POINT (2.336389 48.861111)', 'Paris' ], [ 'POINT (2.327000 48.860000)', 'Paris' ]);
($st, $b) = req('n3', 'POST', '/museums/_bulk?refresh=true',
	join('', map { qq({"index":{"_id":"@{[$_ + 1]}"}}\n{"location":"$docs[$_][0]","city":"$docs[$_][1]"}\n) } 0 .. $#docs));
ok($st == 200 && !$b->{errors}, '6 museums') or diag(explain $b);
my $aggs = '{"size":0,"aggs":{'
  . '"rings":{"geo_distance":{"field":"location","origin":"POINT (4.894 52.3760)","ranges":[{"to":100000},{"from":100000,"to":300000},{"from":300000}]}},'
  . '"centroid":{"geo_centroid":{"field":"location"}},'
  . '"viewport":{"geo_bounds":{"field":"location"}},'
  . '"hash":{"geohash_grid":{"field":"location","precision":3}},'
  . '"tiles":{"geotile_grid":{"field":"location","precision":8}},'
  . '"cities":{"terms":{"field":"city"},"aggs":{"b":{"geo_bounds":{"field":"location"}}}}}}';
($st, $b) = req('n3', 'POST', '/museums/_search', $aggs);
is($st, 200, 'geo aggregations through n3') or diag(explain $b);
my $a = $b->{aggregations};
is_deeply([ map { [ $_->{key}, $_->{doc_count} ] } @{ $a->{rings}{buckets} } ],
	[ [ '*-100000.0', 3 ], [ '100000.0-300000.0', 1 ], [ '300000.0-*', 2 ] ], 'rings around Amsterdam');
ok(abs($a->{centroid}{location}{lat} - 51.00982965203002) < 1e-12
	  && abs($a->{centroid}{location}{lon} - 3.9662131341174245) < 1e-12
	  && $a->{centroid}{count} == 6, 'the centroid ES documents') or diag(explain $a->{centroid});
is_deeply([ map { [ $_->{key}, $_->{doc_count} ] } @{ $a->{hash}{buckets} } ],
	[ [ 'u17', 3 ], [ 'u09', 2 ], [ 'u15', 1 ] ], 'geohash cells');
is_deeply([ map { [ $_->{key}, $_->{doc_count} ] } @{ $a->{tiles}{buckets} } ],
	[ [ '8/131/84', 3 ], [ '8/129/88', 2 ], [ '8/131/85', 1 ] ], 'geotile cells');
my $vb = $a->{viewport}{bounds};
ok(abs($vb->{top_left}{lat} - 52.374080987647176) < 1e-12 && abs($vb->{top_left}{lon} - 2.3269999679178) < 1e-12
	  && abs($vb->{bottom_right}{lat} - 48.85999997612089) < 1e-12
	  && abs($vb->{bottom_right}{lon} - 4.91472196765244) < 1e-12, 'the bounds over both shards (quantised points)')
  or diag(explain $vb);
my $n3 = $canon->encode($a);
($st, $b) = req('n1', 'POST', '/museums/_search', $aggs);
is($canon->encode($b->{aggregations}), $n3, 'the same through n1 (one shard local)');

# queries and the sort: the distances are computed where the shards are
my $sort = '{"_source":false,"query":{"geo_distance":{"distance":"200km","location":{"lat":52.376,"lon":4.894}}},'
  . '"sort":[{"_geo_distance":{"location":[4.894,52.376],"unit":"km"}}]}';
($st, $b) = req('n3', 'POST', '/museums/_search', $sort);
is($st, 200, 'geo_distance and the geo sort through n3') or diag(explain $b);
is_deeply([ map { $_->{_id} } @{ $b->{hits}{hits} } ], [ '2', '1', '3', '4' ], 'the four museums within 200 km, nearest first');
ok($b->{hits}{hits}[0]{sort}[0] > 0.91 && $b->{hits}{hits}[0]{sort}[0] < 0.92
	  && $b->{hits}{hits}[3]{sort}[0] > 132.5 && $b->{hits}{hits}[3]{sort}[0] < 132.6, 'their distances in km')
  or diag(explain $b->{hits}{hits});
my $hits = $canon->encode($b->{hits}{hits});
($st, $b) = req('n2', 'POST', '/museums/_search', $sort);
is($canon->encode($b->{hits}{hits}), $hits, 'the same through n2');
($st, $b) = req('n3', 'POST', '/museums/_search',
	'{"query":{"geo_bounding_box":{"location":{"top":53,"left":4,"bottom":51,"right":5}}},"size":0}');
is($b->{hits}{total}{value}, 4, 'geo_bounding_box over both shards');
($st, $b) = req('n3', 'POST', '/museums/_search',
	'{"query":{"distance_feature":{"field":"location","origin":[4.894,52.376],"pivot":"10km"}},"size":10,"_source":false}');
is($b->{hits}{hits}[0]{_id}, '2', 'distance_feature: the nearest museum first');

$cluster->teardown;
done_testing();
