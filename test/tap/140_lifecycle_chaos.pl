# Index lifecycle chaos on one node: for a bounded time, clients create,
# open, close, delete, re-map and bulk-auto-create the same few index names
# while others search.  Nothing may crash (no PANIC, no backend or worker
# killed by a signal, also through a fast shutdown after the churn), the
# losers of races get clean ES errors, and every item acknowledged to an
# incarnation of an index that was not deleted afterwards survives kill -9.
#
# Which items must survive: every client records when each request started
# and ended.  An item acknowledged by a bulk that started after the last
# delete attempt of its index name had ended belongs to the incarnation
# that is never deleted (the last phase of round 2 deletes nothing).  An
# item acknowledged by a bulk that ended before a successful delete of its
# name started belonged to a deleted incarnation and must never come back.
#
# SE_CHAOS_SECONDS (default 80) is the total churn time; bench/ runs a
# longer form.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time);
use SeTest;

$SIG{PIPE} = 'IGNORE';

my $seconds = $ENV{SE_CHAOS_SECONDS} || 80;
my @names = qw(r1 r2 r3);
# 503 no_shard_available_action_exception: a shard of an index just created
# is not started yet, as Elasticsearch answers.
my %allowed = map { $_ => 1 } qw(index_not_found_exception index_closed_exception
  resource_already_exists_exception es_rejected_execution_exception
  no_shard_available_action_exception);

my $node = SeTest::new_node('chaos', write_threads => 2,
	extra => "max_connections = 40\nsearch_engine.max_shards = 64\n");
my $data = $node->data_dir . '/search_engine';

# The clients are server-side loops (one psql each), so that operations on
# the same names follow each other as fast as the node answers them.  Every
# operation is logged to chaos_log with its start and end (clock_timestamp)
# and outcome; a bulk logs each item.
$node->safe_psql('postgres', q{
CREATE TABLE chaos_log (client text, op text, name text, t_start timestamptz,
  t_end timestamptz, ok boolean, id text, status int, type text, message text);
CREATE PROCEDURE chaos_client(kind text, c text, churn_until timestamptz, quiet_until timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  names text[] := ARRAY['r1', 'r2', 'r3'];
  n text;
  op text;
  body text;
  r json;
  t0 timestamptz;
  seq int := 0;
  quiet boolean;
  d text;
  m text;
BEGIN
  LOOP
    EXIT WHEN clock_timestamp() >= quiet_until;
    quiet := clock_timestamp() >= churn_until;
    n := names[1 + floor(random() * 3)::int];
    op := CASE kind
      WHEN 'delete' THEN CASE WHEN quiet THEN 'sleep' ELSE 'delete' END
      WHEN 'search' THEN (ARRAY['count', 'search', 'get'])[1 + floor(random() * 3)::int]
      WHEN 'life' THEN CASE WHEN quiet
        THEN (ARRAY['create', 'open', 'mapping'])[1 + floor(random() * 3)::int]
        ELSE (ARRAY['create', 'create', 'open', 'close', 'delete', 'mapping'])[1 + floor(random() * 6)::int] END
      ELSE kind END;
    t0 := clock_timestamp();
    BEGIN
      CASE op
        WHEN 'bulk' THEN
          SELECT string_agg(format(E'{"index": {"_id": "%s-%s"}}\n{"title": "doc %s", "c": "%s"}', c, seq + g, g, c), E'\n') || E'\n'
            INTO body FROM generate_series(1, 8) g;
          seq := seq + 8;
          r := search_engine.bulk(body, n);
          INSERT INTO chaos_log
            SELECT c, op, n, t0, clock_timestamp(), true, i->'index'->>'_id',
                   (i->'index'->>'status')::int, i->'index'->'error'->>'type',
                   i->'index'->'error'->>'reason'
              FROM json_array_elements(r->'items') i;
        WHEN 'create' THEN PERFORM search_engine.create_index(n,
          '{"settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "100ms"}}');
        WHEN 'open' THEN PERFORM search_engine.open_index(n);
        WHEN 'close' THEN PERFORM search_engine.close_index(n);
        WHEN 'delete' THEN PERFORM search_engine.delete_index(n);
        WHEN 'mapping' THEN PERFORM search_engine.put_mapping(n,
          format('{"properties": {"k%s": {"type": "keyword"}}}', floor(random() * 5))::jsonb);
        WHEN 'count' THEN PERFORM search_engine.count('r*');
        WHEN 'search' THEN PERFORM search_engine.search(n, '{"query": {"match": {"title": "doc"}}}');
        WHEN 'get' THEN PERFORM search_engine.get_doc(n, 'b1-1');
        ELSE PERFORM pg_sleep(0.05);
      END CASE;
      IF op <> 'bulk' THEN
        INSERT INTO chaos_log VALUES (c, op, n, t0, clock_timestamp(), true);
      END IF;
    EXCEPTION WHEN others THEN
      GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, m = MESSAGE_TEXT;
      INSERT INTO chaos_log VALUES (c, op, n, t0, clock_timestamp(), false, NULL, NULL, d, m);
    END;
    COMMIT;
    IF op = 'delete' AND kind = 'delete' THEN
      PERFORM pg_sleep(random() * 0.1);
    END IF;
  END LOOP;
END $$;
});

sub server_log { return slurp_file($node->logfile); }

sub no_crash_in_log
{
	my ($from, $what) = @_;
	my $log = substr(server_log(), $from);
	# also what an --enable-cassert server (test/asan_check.sh) only warns
	# about: a write past a palloc'd chunk, a resource left open; and UBSan's
	# reports, which go to stderr beside ASan
	my @bad = grep { /PANIC|terminated by signal|server process .* was terminated|was terminated by|TRAP:|segmentation fault|write past chunk end|reference leak|refcount leak|file leak|runtime error:/i }
	  split /\n/, $log;
	is(scalar(@bad), 0, "$what: no crash or PANIC in the server log")
	  or diag(join("\n", @bad[0 .. ($#bad < 9 ? $#bad : 9)]));
	return length(server_log());
}

# One round of churn: clients until $end; deletes and closes stop at $quiet_at.
sub churn
{
	my ($round, $end, $quiet_at) = @_;
	my @pids;
	my @clients = (map({ ['bulk', "b$round$_"] } 1 .. 3), ['life', "l$round"],
		['open', "o${round}1"], ['open', "o${round}2"], ['delete', "d$round"], ['search', "s$round"]);
	for my $cl (@clients)
	{
		my $pid = fork();
		die "fork failed" unless defined $pid;
		if ($pid == 0)
		{
			# never let a child run the node's END teardown
			eval {
				my ($rc, $out, $err) = $node->psql('postgres',
					"SET synchronous_commit = off; CALL chaos_client('$cl->[0]', '$cl->[1]', to_timestamp($quiet_at), to_timestamp($end))",
					timeout => $end - time() + 300);
				print STDERR "client $cl->[1]: $err\n" if $rc != 0;
			};
			POSIX::_exit(0);
		}
		push @pids, $pid;
	}
	waitpid($_, 0) for @pids;
}

my $logpos = 0;
my $t0 = time();
churn(1, $t0 + $seconds / 2, $t0 + $seconds / 2);
$logpos = no_crash_in_log($logpos, 'round 1');
# a fast shutdown right after the churn flushes every open shard
eval { $node->restart; };
ok(!$@, 'fast shutdown and restart after the churn') or diag($@);
SeTest::wait_ready($node);
$logpos = no_crash_in_log($logpos, 'shutdown after round 1');

my $t1 = time();
churn(2, $t1 + $seconds / 2, $t1 + $seconds / 4);
$logpos = no_crash_in_log($logpos, 'round 2');

# What the clients saw: operations, errors, and which acknowledged items
# must survive (must) or must not come back (gone).
note($node->safe_psql('postgres',
	q{SELECT string_agg(op || ' ' || n, ', ' ORDER BY op) FROM (SELECT op, count(*) n FROM chaos_log GROUP BY op) o}));
my $errors = $node->safe_psql('postgres', q{
  SELECT op || ': ' || coalesce(nullif(type, ''), 'unclean: ' || message) || ' ' || count(*)
    FROM chaos_log WHERE NOT ok OR status NOT IN (200, 201)
   GROUP BY op, coalesce(nullif(type, ''), 'unclean: ' || message) ORDER BY 1});
note($errors);
my @unclean = grep { my ($type) = /^\w+: (\S+) \d+$/; !defined $type || !$allowed{$type} } split /\n/, $errors;
is(scalar(@unclean), 0, 'the losers of races get clean ES errors')
  or diag(join("\n", @unclean));
$node->safe_psql('postgres', q{
CREATE TABLE chaos_expect AS
  WITH d AS (SELECT name, max(t_end) AS last_end,
                    max(t_start) FILTER (WHERE ok) AS last_ok_start
               FROM chaos_log WHERE op = 'delete' GROUP BY name)
  SELECT l.name, l.id,
         l.t_start > coalesce(d.last_end, '-infinity') AS must,
         l.t_end < coalesce(d.last_ok_start, '-infinity') AS gone
    FROM chaos_log l LEFT JOIN d USING (name)
   WHERE l.op = 'bulk' AND l.ok AND l.status IN (200, 201);
CHECKPOINT;
});

# Every index that exists is opened, then the node is killed.
for my $name (@names)
{
	$node->psql('postgres', "SELECT search_engine.open_index('$name')");
}
SeTest::crash($node);
SeTest::after_crash($node);
$node->start;
SeTest::wait_ready($node);
$logpos = length(server_log());

# how many of the expected items (must or gone) of index name are there
sub found
{
	my ($name, $which) = @_;
	my ($rc, $out) = $node->psql('postgres', qq{
	  SELECT count(*) FROM jsonb_array_elements(search_engine.mget(
	           jsonb_build_object('ids', (SELECT coalesce(jsonb_agg(id), '[]') FROM chaos_expect
	                                        WHERE name = '$name' AND $which)), '$name')->'docs') d
	   WHERE (d->>'found')::bool});
	return $rc == 0 ? $out : 0;		# an index that does not exist holds nothing
}

my ($nmust, $ngone) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*) FILTER (WHERE must), count(*) FILTER (WHERE gone) FROM chaos_expect');
for my $name (@names)
{
	my ($m, $g) = split /\|/, $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE must), count(*) FILTER (WHERE gone) FROM chaos_expect WHERE name = '$name'");
	is(found($name, 'must'), $m, "$name: all $m items acknowledged to its last incarnation survive kill -9");
	is(found($name, 'gone'), 0, "$name: none of $g items acknowledged to deleted incarnations came back");
}
cmp_ok($nmust, '>', 100, "enough acknowledged items to check ($nmust)");
cmp_ok($ngone, '>', 0, "some acknowledged items were deleted with their index ($ngone)");

# the data directory holds exactly the indices of the cluster state
my %uuids = map { $_ => 1 } split /\n/,
  $node->safe_psql('postgres', 'SELECT uuid FROM search_engine.indices');
opendir(my $dh, "$data/indices") or die "opendir: $!";
my @dirs = grep { !/^\./ } readdir($dh);
closedir $dh;
is(join(',', sort @dirs), join(',', sort keys %uuids), 'no index directory survives its index');

no_crash_in_log($logpos, 'recovery');
$node->stop;
done_testing();
