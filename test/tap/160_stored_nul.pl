# A document holding U+0000 that is already stored (an older build took
# \u0000 in a string) must not make reads fail: jsonb cannot hold U+0000,
# so each such character reads as U+FFFD, in that document only, through
# get_doc, search, search_hits and request.  New writes with \u0000 are
# refused (sql/13_bad_input).  The older build is simulated by writing the
# NUL into the translog, which replay takes as it finds it (replay never
# skips an acknowledged operation).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use File::Find;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;

# CRC-32C, as the translog's records carry it
my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;

sub crc32c
{
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8) for unpack('C*', $_[0]);
	return $crc ^ 0xFFFFFFFF;
}

# In every record of a translog file: each \u0030 escape becomes \u0000
# (same length), the record's checksum recomputed.  Returns records patched.
sub patch_translog
{
	my ($file) = @_;
	my $data = slurp_file($file);
	# after the header: 24 bytes since SETLOG02 (with max_seq_no), 16 before
	my ($pos, $patched) = (substr($data, 0, 8) eq 'SETLOG02' ? 24 : 16, 0);
	while ($pos + 8 <= length($data))
	{
		my ($len) = unpack('V', substr($data, $pos, 4));
		last if $pos + 8 + $len > length($data);
		my $payload = substr($data, $pos + 8, $len);
		if ($payload =~ s/\\u0030/\\u0000/g)
		{
			substr($data, $pos + 4, 4 + $len) = pack('V', crc32c($payload)) . $payload;
			$patched++;
		}
		$pos += 8 + $len;
	}
	open(my $fh, '>', $file) or die "open $file: $!";
	binmode $fh;
	print $fh $data;
	close $fh;
	return $patched;
}

my $node = SeTest::new_node('storednul');
$node->safe_psql('postgres',
	q{SELECT search_engine.create_index('legacy', '{"settings": {"number_of_shards": 1, "refresh_interval": "-1"},
	  "mappings": {"properties": {"raw": {"type": "object", "enabled": false}}}}')});
# \u0030 ("0") stands where the NUL will be; keys were checked, but not
# inside an object that is not indexed
$node->safe_psql('postgres',
	q{SELECT search_engine.bulk(E'{"index": {"_id": "old"}}\n{"t": "a\\\\u0030b", "tags": ["x", "\\\\u0030"], "raw": {"k\\\\u0030": 1}}\n}
	  . q{{"index": {"_id": "fine"}}\n{"t": "plain"}\n', 'legacy')});

my $uuid = $node->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = 'legacy'");
SeTest::crash($node);
SeTest::after_crash($node);
my @logs;
find(sub { push @logs, $File::Find::name if /\.tlog$/ }, $node->data_dir . "/search_engine/indices/$uuid");
my $patched = 0;
$patched += patch_translog($_) for @logs;
is($patched, 1, 'the NUL is written into the acknowledged document in the translog');

my $log_start = -s $node->logfile;
$node->start;
SeTest::wait_ready($node);
$node->safe_psql('postgres', q{SELECT search_engine.refresh('legacy')});
unlike(slurp_file($node->logfile, $log_start), qr/skipping translog operation/, 'replay took the document');

my $fffd = q{chr(65533)};
is($node->safe_psql('postgres',
		qq{SELECT d->'_source'->>'t' = 'a' || $fffd || 'b', d->'_source'->'tags'->>1 = $fffd,
		          d->'_source'->'raw' ? ('k' || $fffd)
		     FROM search_engine.get_doc('legacy', 'old') AS d}),
	't|t|t', 'get_doc returns it, each NUL read as U+FFFD (in values and keys)');
is($node->safe_psql('postgres',
		q{SELECT jsonb_array_length(search_engine.search('legacy')->'hits'->'hits')}),
	'2', 'search returns it with the other document');
is($node->safe_psql('postgres', q{SELECT string_agg(_id, ',' ORDER BY _id) FROM search_engine.search_hits('legacy')}),
	'fine,old', 'search_hits returns both');
is($node->safe_psql('postgres',
		q{SELECT string_agg(status::text, ',') FROM (VALUES ('/legacy/_search'), ('/legacy/_doc/old'), ('/legacy/_source/old'),
		  ('/_search')) AS v(p), LATERAL search_engine.request('GET', p)}),
	'200,200,200,200', 'request answers 200 for every read that returns it');
is($node->safe_psql('postgres', q{SELECT search_engine.get_doc('legacy', 'fine')->'_source'->>'t'}),
	'plain', 'the other document is untouched');
$node->safe_psql('postgres', q{CREATE SERVER se FOREIGN DATA WRAPPER search_engine;
	CREATE FOREIGN TABLE legacy (_id text, _source jsonb) SERVER se OPTIONS (index 'legacy')});
is($node->safe_psql('postgres', qq{SELECT string_agg(_id || ':' || (_source->>'t' LIKE '%' || $fffd || '%'), ',' ORDER BY _id) FROM legacy}),
	'fine:false,old:true', 'a foreign table reads its _source as jsonb');

# it can still be updated; a new NUL is refused
is($node->safe_psql('postgres',
		q{SELECT search_engine.update_doc('legacy', 'old', '{"doc": {"n": 1}}', refresh => 'true')->>'result'}),
	'updated', 'an update of the stored document goes through');
is($node->safe_psql('postgres',
		q{SELECT i->'error'->>'type' FROM jsonb_path_query(search_engine.bulk(E'{"index": {"_id": "new"}}\n{"t": "\\\\u0000"}\n',
		  'legacy')::jsonb, '$.items[*].*') i}),
	'mapper_parsing_exception', 'a new document with \u0000 is refused');

# from the segment files after a flush and a restart, the same
$node->safe_psql('postgres', q{SELECT search_engine.flush('legacy')});
$node->restart;
SeTest::wait_ready($node);
is($node->safe_psql('postgres',
		qq{SELECT d->'_source'->>'t' = 'a' || $fffd || 'b', (d->'_source'->>'n')::int FROM search_engine.get_doc('legacy', 'old') AS d}),
	't|1', 'after a flush and a restart it still reads');
is($node->safe_psql('postgres', q{SELECT count(*) FROM search_engine.search_hits('legacy')}), '2', 'and searches');

$node->stop;
done_testing();
