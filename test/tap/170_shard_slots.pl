# Shard slots (search_engine.max_shards) are a hard limit of the node: an
# index whose shards would not fit is refused before it is created -- 400
# validation_exception with ES's shard-limit words -- instead of being
# written to the cluster state and left red.  create_index, a bulk's
# auto-creation and open_index of a closed index all count; indices within
# the limit keep working; and of two concurrent creates of different names
# that do not fit together, made deterministic with a debug waitpoint,
# only one is created.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;

my $node = SeTest::new_node('slots',
	extra => "search_engine.max_shards = 8\nsearch_engine.debug_waitpoints = on\n");

sub q1 { return $node->safe_psql('postgres', $_[0]); }

sub request
{
	my ($method, $path, $body) = @_;
	my $b = defined $body ? "'$body'" : 'NULL';
	return split /\|/, q1("SELECT status, body->'error'->>'type', body->'error'->>'reason'
	  FROM search_engine.request('$method', '$path', $b)");
}

sub indices { return q1(q{SELECT coalesce(string_agg(index, ',' ORDER BY index), '') FROM search_engine.indices}); }

my ($st, $type, $reason) = request('PUT', '/a', '{"settings": {"number_of_shards": 6}}');
is($st, 200, 'an index of 6 shards fits in 8 slots');

($st, $type, $reason) = request('PUT', '/b', '{"settings": {"number_of_shards": 3}}');
is("$st $type", '400 validation_exception', 'an index of 3 more shards is refused');
like($reason, qr/this action would add \[3\] shards, but this cluster currently has \[6\]\/\[8\] maximum normal shards open/,
	"with ES's shard-limit reason");
is(indices(), 'a', 'and it is not in the cluster state');

# auto-creation: the default is 1 shard, so fill to 8 first
($st) = request('PUT', '/c', '{"settings": {"number_of_shards": 2}}');
is($st, 200, 'an index of 2 shards fills the node');
my $bulk = q1(q{SELECT search_engine.bulk(E'{"index": {"_index": "auto", "_id": "1"}}\n{"x": 1}\n{"index": {"_index": "a", "_id": "1"}}\n{"x": 2}\n')});
like($bulk, qr/"status":\s*400.*validation_exception.*maximum normal shards open/s,
	'a bulk item that would auto-create an index is refused with the error');
like($bulk, qr/"_index":\s*"a".*"result":\s*"created"/s, 'the item for an index within the limit is applied');
is(indices(), 'a,c', 'the auto-created index is not in the cluster state');

# open of a closed index
q1(q{SELECT search_engine.close_index('c')});
($st) = request('PUT', '/d', '{"settings": {"number_of_shards": 2}}');
is($st, 200, "a closed index's slots are free for another index");
($st, $type, $reason) = request('POST', '/c/_open');
is("$st $type", '400 validation_exception', 'opening the closed index beyond the limit is refused');
like($reason, qr/would add \[2\] shards, but this cluster currently has \[8\]\/\[8\]/, 'with the error');
is(q1(q{SELECT status FROM search_engine.indices WHERE index = 'c'}), 'close', 'and it stays closed');

q1(q{SELECT search_engine.delete_index('d')});
($st) = request('POST', '/c/_open');
is($st, 200, 'once there is room it opens');

# everything within the limit works
q1(q{SELECT search_engine.bulk(E'{"index": {"_index": "c", "_id": "1"}}\n{"x": 3}\n', refresh => 'true')});
q1(q{SELECT search_engine.refresh('a')});
is(q1(q{SELECT (body->'hits'->'total'->>'value') FROM search_engine.request('GET', '/a,c/_search')}), '2',
	'documents of the indices within the limit are searchable');
is(q1(q{SELECT status FROM search_engine.request('GET', '/_cluster/health')}), '200', 'health answers');
like(q1(q{SELECT body->>'status' FROM search_engine.request('GET', '/_cluster/health')}), qr/green|yellow/,
	'and no index is red');

# two creates of different names that each fit alone but not together:
# the first stops (debug waitpoint) after writing the state, before its
# slots are allocated; the second must not count those slots as free
q1(q{SELECT search_engine.delete_index('a')});
q1(q{SELECT search_engine.delete_index('c')});
my $wp = 'se:create_index:after_state';
my $holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock(hashtext('$wp'))");
my $out = PostgreSQL::Test::Utils::tempdir;
my %pids;
sub create_in_background
{
	my ($name) = @_;
	my $pid = fork();
	die "fork failed" unless defined $pid;
	if ($pid == 0)
	{
		$ENV{PGAPPNAME} = $name;
		open(STDOUT, '>', "$out/$name") or die;
		open(STDERR, '>&', \*STDOUT) or die;
		exec('psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
			qq{SELECT search_engine.create_index('$name', '{"settings": {"number_of_shards": 6}}')});
	}
	$pids{$name} = $pid;
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$name' AND wait_event_type = 'Lock'")
	  or die "$name does not wait";
}
create_in_background('x');
create_in_background('y');
$holder->query_safe("SELECT pg_advisory_unlock(hashtext('$wp'))");
$holder->quit;
waitpid($pids{$_}, 0) for qw(x y);
is(indices(), 'x', 'of two concurrent creates that do not fit together, the first is created');
like(slurp_file("$out/y"), qr/would add \[6\] shards, but this cluster currently has \[6\]\/\[8\]/,
	'the second is refused with the error');
like(q1(q{SELECT body->>'status' FROM search_engine.request('GET', '/_cluster/health')}), qr/green|yellow/,
	'and no index is red');

$node->stop;
done_testing();
