# An update asked for _source answers with the document as that update
# wrote it: a write that overtakes it between the shard's write and the
# answer (held there by the debug waitpoint se:update:after_write) must
# not show in its "get".
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use SeTest;

my $node = SeTest::new_node('upget', extra => "search_engine.debug_waitpoints = on\n");
my $dir = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', q{SELECT search_engine.request('PUT', '/u', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}')});
$node->safe_psql('postgres', q{SELECT search_engine.request('PUT', '/u/_doc/1', '{"n": 1, "tag": "a"}')});

my $holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock(hashtext('se:update:after_write'))");
my $pid = fork();
die "fork failed" unless defined $pid;
if ($pid == 0)
{
	my ($rc, $out, $err) = $node->psql('postgres',
		q{SET application_name = 'upd'; SELECT (body->'get')::text FROM search_engine.request('POST', '/u/_update/1', '{"doc": {"n": 2}, "_source": ["n"]}')},
		timeout => 180);
	open(my $fh, '>', "$dir/upd.part") or die;
	print $fh "$rc\n$out\n---\n$err";
	close $fh;
	rename("$dir/upd.part", "$dir/upd");
	POSIX::_exit(0);
}
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'upd' AND wait_event_type = 'Lock'")
  or die "the update did not reach its waitpoint";
# the overtaking write
is($node->safe_psql('postgres', q{SELECT body->>'result' FROM search_engine.request('PUT', '/u/_doc/1', '{"n": 3, "tag": "b"}')}),
	'updated', 'a write overtakes the update');
$holder->query_safe("SELECT pg_advisory_unlock(hashtext('se:update:after_write'))");
$holder->quit;
waitpid($pid, 0);
my ($rc, $rest) = split /\n/, slurp_file("$dir/upd"), 2;
my ($out, $err) = split /\n---\n/, $rest, 2;
is($rc, 0, 'the update succeeded') or diag($err);
is($out, '{"found": true, "_seq_no": 1, "_source": {"n": 2}, "_primary_term": 1}',
	"its get shows what it wrote, not the overtaking write");
is($node->safe_psql('postgres', q{SELECT body->>'_source' FROM search_engine.request('GET', '/u/_doc/1')}),
	'{"n": 3, "tag": "b"}', 'the overtaking write is the document now');

$node->stop;
done_testing();
