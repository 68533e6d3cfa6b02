# collapse, more_like_this and distance_feature over shards on other
# nodes (issue 17): two data nodes (n1, n2) and a dedicated master (n3,
# which holds no shard and so coordinates every shard remotely), an index
# of 2 shards, no replica.  Through n3 the collapsed hits are the best doc
# of each group over both shards (the group values travel in the remote
# query phases), the same as through n1 (one shard local) and as computed
# here from the uncollapsed hits; inner_hits (the expand phase) count each
# group's docs; a more_like_this item named by _id is fetched from the
# node that holds it; distance_feature scores the same everywhere.
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

my $cluster = SeCluster->new(etcd_members => 3, name => 'tap291');
my %node;
for my $n (qw(n1 n2 n3))
{
	$node{$n} = $cluster->new_node($n, ttl => 5, roles => $n eq 'n3' ? 'master' : 'data');
}

my $canon = JSON::PP->new->canonical;

sub req
{
	my ($n, @call) = @_;
	return SeCluster::request($node{$n}, @call);
}

ok($cluster->wait_for('the nodes in the cluster', 30, sub {
	return SeCluster::master_of($node{n1}) eq 'n3' && keys(%{ SeCluster::nodes_of($node{n1}) }) == 3;
}), 'two data nodes and their master');
my ($st, $b) = req('n3', 'PUT', '/cr', '{"settings":{"number_of_shards":2,"number_of_replicas":0},'
	  . '"mappings":{"properties":{"t":{"type":"text"},"g":{"type":"keyword"},"n":{"type":"long"},"d":{"type":"date"}}}}');
is($st, 200, 'an index of 2 shards') or diag(explain $b);
ok($cluster->wait_for('green', 60, sub {
	my ($s, $h) = req('n3', 'GET', '/_cluster/health/cr');
	return $s == 200 && $h->{status} eq 'green';
}), 'green');
my $placed = SeCluster::primaries($node{n3}, 'cr');
like($placed, qr/^n[12]:STARTED n[12]:STARTED$/, "shards on the data nodes ($placed)");

my @words = qw(alpha beta gamma delta);
($st, $b) = req('n3', 'POST', '/cr/_bulk?refresh=true',
	join('', map {
		my $g = $_ % 7 ? qq("g":"g@{[$_ % 7]}",) : '';
		qq({"index":{"_id":"d$_"}}\n{$g"t":"$words[$_ % 4] $words[$_ % 3] alpha w$_","n":$_,"d":"2024-01-@{[sprintf('%02d', 1 + $_ % 28)]}"}\n)
	} 1 .. 60));
ok($st == 200 && !$b->{errors}, '60 documents') or diag(explain $b);

# sorted by n: the best of each group, checked against the docs themselves
my %best;
for my $i (1 .. 60)
{
	my $g = $i % 7 ? "g" . ($i % 7) : '';
	$best{$g} = $i if !defined $best{$g} || $i > $best{$g};
}
# (sort's package $a/$b: the lexical $b holds responses here)
my @expect = map { "d$_" } sort { $main::b <=> $main::a } values %best;
($st, $b) = req('n3', 'POST', '/cr/_search', '{"collapse":{"field":"g"},"sort":[{"n":"desc"}],"size":20,"_source":false}');
is($st, 200, 'collapse through n3') or diag(explain $b);
is_deeply([ map { $_->{_id} } @{ $b->{hits}{hits} } ], \@expect, 'each group\'s last doc, groups in order, over both shards');
is_deeply([ map { $_->{fields}{g}[0] } @{ $b->{hits}{hits} } ], [ 'g4', 'g3', 'g2', 'g1', undef, 'g6', 'g5' ],
	'each hit\'s collapse value (the null group without one)') or diag(explain $b->{hits}{hits});
is($b->{hits}{total}{value}, 60, 'the total counts docs');
my $n3 = $canon->encode($b->{hits}{hits});
($st, $b) = req('n1', 'POST', '/cr/_search', '{"collapse":{"field":"g"},"sort":[{"n":"desc"}],"size":20,"_source":false}');
is($canon->encode($b->{hits}{hits}), $n3, 'the same through n1 (one shard local)');
($st, $b) = req('n3', 'POST', '/cr/_search', '{"collapse":{"field":"g"},"sort":[{"n":"desc"}],"from":2,"size":3,"_source":false}');
is_deeply([ map { $_->{_id} } @{ $b->{hits}{hits} } ], [ @expect[2 .. 4] ], 'from/size page over groups');

# by relevance: the first hit of each group in the uncollapsed order
my $q = '{"match":{"t":"gamma delta"}}';
($st, $b) = req('n3', 'POST', '/cr/_search', qq({"query":$q,"size":100,"_source":false,"docvalue_fields":["g"]}));
my (%seen, @first);
for my $h (@{ $b->{hits}{hits} })
{
	my $g = $h->{fields}{g} ? $h->{fields}{g}[0] : '';
	push @first, [ $h->{_id}, $h->{_score} ] unless $seen{$g}++;
}
($st, $b) = req('n3', 'POST', '/cr/_search', qq({"query":$q,"collapse":{"field":"g"},"size":100,"_source":false}));
is_deeply([ map { [ $_->{_id}, $_->{_score} ] } @{ $b->{hits}{hits} } ], \@first,
	'by relevance: the best-scoring doc of each group, with its score');

# inner_hits: the expand phase's searches reach both data nodes
($st, $b) = req('n3', 'POST', '/cr/_search', '{"collapse":{"field":"g","inner_hits":{"name":"low","size":2,"sort":["n"]}},"sort":[{"n":"desc"}],"size":20}');
is($st, 200, 'inner_hits through n3') or diag(explain $b);
my %count;
$count{ $_ % 7 ? "g" . ($_ % 7) : '' }++ for 1 .. 60;
is(scalar(grep {
	my $g = $_->{fields}{g}[0] // '';
	my @low = map { $_->{_id} } @{ $_->{inner_hits}{low}{hits}{hits} };
	my $first = $g eq '' ? 7 : substr($g, 1);
	$_->{inner_hits}{low}{hits}{total}{value} == $count{$g} && "@low" eq "d$first d@{[$first + 7]}"
} @{ $b->{hits}{hits} }), 7, 'each group\'s count and its two lowest docs') or diag(explain $b->{hits}{hits});

# more_like_this: a liked doc on a data node, fetched for the query
($st, $b) = req('n3', 'POST', '/cr/_search', '{"query":{"more_like_this":{"fields":["t"],"like":[{"_index":"cr","_id":"d5"}],"min_term_freq":1,"min_doc_freq":1}},"size":100}');
is($st, 200, 'more_like_this through n3') or diag(explain $b);
ok($b->{hits}{total}{value} > 0 && !grep({ $_->{_id} eq 'd5' } @{ $b->{hits}{hits} }), 'similar docs, not the liked one');
my $mlt = $canon->encode($b->{hits});
($st, $b) = req('n2', 'POST', '/cr/_search', '{"query":{"more_like_this":{"fields":["t"],"like":[{"_index":"cr","_id":"d5"}],"min_term_freq":1,"min_doc_freq":1}},"size":100}');
is($canon->encode($b->{hits}), $mlt, 'the same through n2');
($st, $b) = req('n3', 'POST', '/cr/_search', '{"query":{"more_like_this":{"fields":["t"],"like":[{"_index":"cr","_id":"d5"}],"min_term_freq":1,"min_doc_freq":1,"include":true}},"size":1}');
is($b->{hits}{hits}[0]{_id}, 'd5', 'include: the liked doc is the most like itself');

# distance_feature: the same scores through every node
($st, $b) = req('n3', 'POST', '/cr/_search', '{"query":{"distance_feature":{"field":"d","origin":"2024-01-10","pivot":"3d"}},"size":100}');
is($b->{hits}{total}{value}, 60, 'distance_feature matches docs with the field');
is(scalar(grep {
	my ($day) = $_->{_source}{d} =~ /-(\d\d)$/;
	abs($_->{_score} - 3 / (3 + abs($day - 10))) < 1e-6
} @{ $b->{hits}{hits} }), 60, 'pivot / (pivot + distance) on every doc');

$cluster->teardown;
done_testing();
