# A flipped byte in a segment file gives INDEX_CORRUPTED (SQLSTATE XX002),
# never a crash or a wrong answer; the server keeps serving other indices.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Find;
use SeTest;

my $node = SeTest::new_node('corrupt');
$node->safe_psql('postgres', q{SELECT search_engine.create_index('c', '{"settings": {"number_of_replicas": 0}}')});
$node->safe_psql('postgres', q{SELECT search_engine.create_index('healthy', '{"settings": {"number_of_replicas": 0}}')});
my $body = join('\n', map { qq({"index": {"_id": "$_"}}\\n{"title": "document number $_ with some words", "n": $_}) } 1 .. 500);
$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 'c', refresh => 'true')");
$node->safe_psql('postgres', "SELECT search_engine.bulk(E'$body\\n', 'healthy', refresh => 'true')");
$node->safe_psql('postgres', "SELECT search_engine.flush('c')");
is($node->safe_psql('postgres', q{SELECT search_engine.count('c', '{"query": {"match": {"title": "words"}}}')}), '500', 'index is searchable before corruption');

my $uuid = $node->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = 'c'");
my @segs;
find(sub { push @segs, $File::Find::name if /\.seg$/ }, $node->data_dir . "/search_engine/indices/$uuid");
ok(@segs >= 1, 'found segment files');

sub flip
{
	my ($file) = @_;
	open(my $fh, '+<', $file) or die "open $file: $!";
	binmode $fh;
	my $size = -s $file;
	my $pos = int($size / 2);
	seek($fh, $pos, 0);
	read($fh, my $b, 1);
	seek($fh, $pos, 0);
	print $fh chr(ord($b) ^ 0x5a);
	close $fh;
}

# 1. corrupted while running: a scrub (verify_index) finds it and fails the
#    shard, so no later search can return a wrong answer
flip($_) for @segs;
my ($rc, $out, $err) = $node->psql('postgres',
	q{\set VERBOSITY verbose
	  SELECT search_engine.verify_index('c')});
isnt($rc, 0, 'verify_index finds the corrupted segment');
like($err, qr/XX002/, 'with SQLSTATE XX002 (index_corrupted)');
like($err, qr/index_corrupted_exception/, 'and the ES type in the detail');
($rc, $out, $err) = $node->psql('postgres',
	q{\set VERBOSITY verbose
	  SELECT search_engine.search('c', '{"query": {"match": {"title": "words"}}}')});
isnt($rc, 0, 'searches of the failed shard are refused');
like($err, qr/XX002/, 'also with XX002');
is($node->safe_psql('postgres', q{SELECT search_engine.verify_index('healthy')->'verified'}), 'true', 'a healthy index verifies');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server still answers');
is($node->safe_psql('postgres', q{SELECT search_engine.count('healthy')}), '500', 'other indices still work');

# 2. after a restart the shard fails recovery with the same error class
my $log_start = -s $node->logfile;
$node->restart;
SeTest::wait_ready($node) if 0;
($rc, $out, $err) = $node->psql('postgres',
	q{\set VERBOSITY verbose
	  SELECT search_engine.count('c')});
isnt($rc, 0, 'after restart the corrupted shard refuses searches');
like($err, qr/XX002/, 'with SQLSTATE XX002');
my ($st, $body2) = split /\|/, $node->safe_psql('postgres', q{SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/c/_search')});
is($st, '500', 'REST answers 500');
is($body2, 'index_corrupted_exception', 'REST error type is index_corrupted_exception');
is($node->safe_psql('postgres', q{SELECT search_engine.count('healthy')}), '500', 'other indices still work after restart');

# the failed shard stays failed: its owner does not retry it in a loop
# (each retry used to leak the shard's memory until the worker ran out)
sleep 3;
my $reports = () = slurp_file($node->logfile, $log_start) =~ /shard \[c\]\[\d+\] is corrupted/g;
ok($reports >= 1 && $reports < 20, "the corrupted shard is reported, not retried in a loop ($reports reports)");
is($node->safe_psql('postgres', q{SET statement_timeout = '30s'; SELECT search_engine.delete_index('c')->>'acknowledged'}),
	'true', 'an index with a failed shard can be deleted');
is($node->safe_psql('postgres', q{SELECT count(*) FROM search_engine.indices WHERE index = 'c'}), '0', 'and is gone');
is($node->safe_psql('postgres', q{SELECT search_engine.count('healthy')}), '500', 'other indices still work after the delete');
$node->stop;
done_testing();
