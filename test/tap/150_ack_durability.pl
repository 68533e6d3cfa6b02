# Nothing acknowledged is dropped by recovery (issue 13):
#  - a dynamic mapping change is published node-wide before a document that
#    needs it is acknowledged, so two shards cannot acknowledge conflicting
#    documents ({"g": 7} and {"g": {"x": 1}}), and the total fields limit
#    holds across shards;
#  - one nesting limit, at the door: a document nested 600 levels deep is
#    acknowledged, survives kill -9 and can be updated; 1001 levels are
#    refused;
#  - translog replay skips nothing (the log says so when it does).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;

my $node = SeTest::new_node('ackdur', write_threads => 2);

sub bulk_items
{
	my ($body, $index) = @_;
	$body =~ s/'/''/g;
	my $out = $node->safe_psql('postgres',
		"SELECT i->>'_id', i->>'status', coalesce(i->'error'->>'type', '') "
		  . "FROM jsonb_path_query(search_engine.bulk(E'"
		  . ($body =~ s/\n/\\n/gr)
		  . "', '$index')::jsonb, '\$.items[*].*') i");
	return map { [ split /\|/, $_, -1 ] } split /\n/, $out;
}

# --- conflicting dynamic mappings from two shards, many rounds
my %acked;       # index => [ids]
my ($conflicts, $rounds) = (0, 20);
for my $r (1 .. $rounds)
{
	my $index = "race$r";
	$node->safe_psql('postgres',
		qq{SELECT search_engine.create_index('$index', '{"settings": {"number_of_shards": 2, "refresh_interval": "-1"}}')});
	# ids chosen on both shards; half say g is a number, half an object
	my $body = join('', map {
		my $doc = $_ % 2 ? qq({"g": $_}) : qq({"g": {"x": $_}});
		qq({"index": {"_id": "d$_"}}\n$doc\n)
	} 1 .. 16);
	for my $item (bulk_items($body, $index))
	{
		my ($id, $status, $type) = @$item;
		if ($status =~ /^20[01]$/) { push @{ $acked{$index} }, $id; }
		elsif ($status == 400 && $type eq 'mapper_parsing_exception') { $conflicts++; }
		else { fail("$index/$id: unexpected status $status $type"); }
	}
	# what was acknowledged agrees with the one published mapping
	my $gtype = $node->safe_psql('postgres',
		"SELECT coalesce(search_engine.get_mapping('$index')->'$index'->'mappings'->'properties'->'g'->>'type', 'object')");
	my $want_odd = $gtype ne 'object';
	my @wrong = grep { (substr($_, 1) % 2 == 1) != $want_odd } @{ $acked{$index} };
	is(scalar(@wrong), 0, "$index: every acknowledged document fits the published mapping ($gtype)");
}
cmp_ok($conflicts, '>', 0, "conflicting documents were refused ($conflicts), not acknowledged");

# --- the total fields limit across 4 shards
$node->safe_psql('postgres',
	q{SELECT search_engine.create_index('fields', '{"settings": {"number_of_shards": 4, "mapping.total_fields.limit": 40, "refresh_interval": "-1"}}')});
my $fbody = join('', map { qq({"index": {"_id": "f$_"}}\n{"field_$_": $_}\n) } 1 .. 100);
my ($fok, $frefused) = (0, 0);
for my $item (bulk_items($fbody, 'fields'))
{
	my ($id, $status, $type) = @$item;
	if ($status =~ /^20[01]$/) { push @{ $acked{fields} }, $id; $fok++; }
	elsif ($status == 400) { $frefused++; }
}
cmp_ok($fok, '<=', 40, "at most the limit's worth of new fields acknowledged ($fok)");
cmp_ok($frefused, '>=', 60, "the rest refused ($frefused)");

# --- nesting: one limit at the door
my $deep = ('{"a":' x 600) . '1' . ('}' x 600);
my $deep_arr = '{"v":' . ('[' x 599) . '1' . (']' x 599) . '}';
$node->safe_psql('postgres',
	q{SELECT search_engine.create_index('deep', '{"settings": {"mapping.depth.limit": 1000}}')});
my @d = bulk_items(qq({"index": {"_id": "obj"}}\n$deep\n{"index": {"_id": "arr"}}\n$deep_arr\n), 'deep');
is(join(',', map { $_->[1] } @d), '201,201', '600 levels deep: acknowledged');
push @{ $acked{deep} }, 'obj', 'arr';
my $too_deep = '{"v":' . ('[' x 1000) . '1' . (']' x 1000) . '}';
my @t = bulk_items(qq({"index": {"_id": "too"}}\n$too_deep\n), 'deep');
is($t[0][1], '400', '1001 levels deep: refused at the door');

# --- kill -9, restart: everything acknowledged is there, nothing skipped
my $log_before = -s $node->logfile;
SeTest::crash($node);
SeTest::after_crash($node);
$node->start;
SeTest::wait_ready($node);
for my $index (sort keys %acked)
{
	my @ids = @{ $acked{$index} };
	my $json = join(',', map { qq("$_") } @ids);
	my $found = $node->safe_psql('postgres',
		qq{SELECT count(*) FROM jsonb_array_elements(search_engine.mget('{"ids": [$json]}', '$index')->'docs') d WHERE (d->>'found')::bool});
	is($found, scalar(@ids), "$index: all " . scalar(@ids) . " acknowledged documents survive kill -9");
}
my $log = slurp_file($node->logfile, $log_before);
unlike($log, qr/skipping translog operation/, 'translog replay skipped no operation');
unlike($log, qr/terminated by signal (?!9)|PANIC/, 'no crash');

# the deep document can be updated after recovery
my $upd = $node->safe_psql('postgres',
	q{SELECT search_engine.update_doc('deep', 'obj', '{"doc": {"b": 1}}')->>'result'});
is($upd, 'updated', 'the 600-level document updates after recovery');
$node->safe_psql('postgres', q{SELECT search_engine.refresh('deep')});
is($node->safe_psql('postgres',
	q{SELECT search_engine.update_by_query('deep', '{"script": "ctx._source.c = 1"}')->>'updated'}),
	'2', 'update-by-query rewrites both deep documents');

$node->stop;
done_testing();
