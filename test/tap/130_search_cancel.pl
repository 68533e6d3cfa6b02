# Every long search is interruptible: a sloppy phrase of 3000 terms over
# long documents takes many seconds, and statement_timeout,
# pg_cancel_backend, pg_terminate_backend and the search's own "timeout"
# (in the body or the URL) must end it within a fraction of a second -- in
# the backend, and in the search workers running its other shards, which
# must be idle again soon after.  Before the search module checked for interrupts, the search ran
# to its end (42 s past a 1 s statement_timeout in the issue).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);
use SeTest;

my $node = SeTest::new_node('searchcancel',
	extra => "search_engine.search_threads = 2\nsearch_engine.merge_threads = 0\n");

# 2000 documents of 5000 words over a vocabulary of 100: every document
# holds every word dozens of times, so every document is a phrase
# candidate and the sloppy matcher walks all of its positions
my $t0 = time;
$node->safe_psql('postgres', q{
SELECT search_engine.create_index('long', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"body": {"type": "text"}}}}');
SELECT setseed(0.42);
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n{"body": "%s"}', g,
         (SELECT string_agg('w' || (random() * 99)::int, ' ') FROM generate_series(1, 5000) WHERE g > 0)), E'\n') || E'\n',
       'long', refresh => 'true')->>'errors'
  FROM generate_series(1, 2000) g;
CREATE TABLE q AS SELECT jsonb_build_object('size', 1, 'query', jsonb_build_object('match_phrase',
    jsonb_build_object('body', jsonb_build_object('slop', 100,
      'query', (SELECT string_agg('w' || (random() * 99)::int, ' ') FROM generate_series(1, 3000)))))) AS body;
CREATE ROLE reader LOGIN IN ROLE search_engine_read;
GRANT SELECT ON q TO reader;
-- seconds from t0 until the search workers are idle (at most 10)
CREATE FUNCTION pool_idle(t0 timestamptz) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
  WHILE (SELECT active FROM search_engine.thread_pool WHERE name = 'search') > 0
        AND clock_timestamp() - t0 < interval '10 s' LOOP
    PERFORM pg_sleep(0.002);
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
-- signal the reader's active backend: how many search workers were busy
-- then, seconds until it is no longer active, and until they are idle
CREATE FUNCTION signal_reader(fn text, OUT busy int, OUT backend float8, OUT workers float8)
LANGUAGE plpgsql AS $$
DECLARE
  p int;
  t0 timestamptz;
BEGIN
  SELECT pid INTO p FROM pg_stat_activity WHERE usename = 'reader' AND state = 'active';
  IF p IS NULL THEN
    backend := -1;
    RETURN;
  END IF;
  SELECT active INTO busy FROM search_engine.thread_pool WHERE name = 'search';
  t0 := clock_timestamp();
  EXECUTE format('SELECT %I(%s)', fn, p);
  LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = p AND state = 'active')
      OR clock_timestamp() - t0 > interval '10 s';
    PERFORM pg_sleep(0.002);
  END LOOP;
  backend := extract(epoch FROM clock_timestamp() - t0);
  workers := pool_idle(t0);
END $$;
});
note(sprintf('loaded in %.1f s', time - $t0));
is($node->safe_psql('postgres', q{SELECT search_engine.count('long')}), '2000', '2000 long documents');

my $search = q{SELECT search_engine.search('long', (SELECT body FROM q))};
my $reader = $node->connstr('postgres') . ' user=reader';

# the premise: the phrase runs for seconds (each shard past a 2 s timeout)
like($node->safe_psql('postgres', q{SET search_engine.search_parallel_min_docs = 0;
	SELECT search_engine.search('long', (SELECT body || '{"timeout": "2s"}' FROM q))->>'timed_out'}),
	qr/^true$/, 'the phrase search runs for more than 2 s');

# statement_timeout = 1s, as the reading role: 57014 within 2 s
sub timeout_case
{
	my ($what, $set) = @_;
	my $start = time;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$set SET statement_timeout = '1s'; $search",
		connstr => $reader);
	my $took = time - $start;
	my $idle = $node->safe_psql('postgres', 'SELECT pool_idle(now())');
	like($err, qr/ERROR:  57014: canceling statement due to statement timeout/, "$what: statement_timeout cancels the search");
	cmp_ok($took, '<', 2.0, "$what: within 2 s");
	cmp_ok($idle, '<', 1.0, "$what: the search workers are idle within 1 s after");
	note(sprintf('%s: statement_timeout 1s: the client answered after %.3f s, workers idle %.3f s later', $what, $took, $idle));
}

# a second session cancels (or terminates) the search after 0.5 s: it
# ends within 1 s of that
sub signal_case
{
	my ($what, $set, $fn, $expect) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(['psql', '-XAtq', '-d', $reader, '-c', "$set $search"],
		'>', \$out, '2>', \$err);
	my $active = 0;
	for (1 .. 100)
	{
		$active = $node->safe_psql('postgres',
			q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'reader' AND state = 'active'});
		last if $active;
		usleep(20_000);
	}
	usleep(500_000);
	my $start = time;
	my ($busy, $ended, $idle) = split /\|/, $node->safe_psql('postgres', "SELECT * FROM signal_reader('$fn')");
	$h->finish;
	my $took = time - $start;
	like($err, $expect, "$what: $fn ends the search");
	cmp_ok($ended, '>=', 0, "$what: the search was running when signalled");
	is($busy, '1', "$what: its other shard runs in a search worker") if $what eq 'parallel';
	cmp_ok($ended, '<', 0.2, "$what: the backend stops searching within 0.2 s");
	cmp_ok($idle, '<', 1.0, "$what: the search workers are idle within 1 s");
	cmp_ok($took, '<', 1.0, "$what: the client has its answer within 1 s");
	note(sprintf('%s: %s: backend done after %.3f s, workers idle after %.3f s, client answered after %.3f s',
			$what, $fn, $ended, $idle, $took));
}

for my $mode ('backend', 'parallel')
{
	# parallel: the other shard runs in a search worker
	my $set = $mode eq 'parallel' ? 'SET search_engine.search_parallel_min_docs = 0;' : '';
	my $completed = $node->safe_psql('postgres', q{SELECT completed FROM search_engine.thread_pool WHERE name = 'search'});

	timeout_case($mode, $set);
	signal_case($mode, $set, 'pg_cancel_backend', qr/canceling statement due to user request/);
	signal_case($mode, $set, 'pg_terminate_backend', qr/terminating connection due to administrator command/);

	# the search's own timeout: partial results, timed_out
	my $start = time;
	my ($timed_out, $relation, $took_ms) = split /\|/, $node->safe_psql('postgres',
		"$set SELECT r->>'timed_out', r->'hits'->'total'->>'relation', r->>'took'
		   FROM (SELECT search_engine.search('long', (SELECT body || '{\"timeout\": \"50ms\"}' FROM q)) r) x",
		connstr => $reader);
	my $took = time - $start;
	is($timed_out, 'true', "$mode: \"timeout\": \"50ms\" answers timed_out");
	is($relation, 'gte', "$mode: with the count as a lower bound");
	cmp_ok($took_ms, '<', 500, "$mode: quickly (took < 500 ms)");
	cmp_ok($took, '<', 2.0, "$mode: the client has its answer within 2 s");
	note(sprintf('%s: "timeout": "50ms": took %d ms, the client answered after %.3f s', $mode, $took_ms, $took));

	# the URL's ?timeout= does the same, over the body's (in the search
	# workers too: they would run their shard for seconds)
	$start = time;
	my ($status, $url_timed_out, $url_relation, $url_took_ms) = split /\|/, $node->safe_psql('postgres',
		"$set SELECT status, body->>'timed_out', body->'hits'->'total'->>'relation', body->>'took'
		   FROM search_engine.request('POST', '/long/_search?timeout=50ms', (SELECT body || '{\"timeout\": \"1m\"}' FROM q)::text)",
		connstr => $reader);
	$took = time - $start;
	is($status, '200', "$mode: ?timeout=50ms: 200");
	is($url_timed_out, 'true', "$mode: ?timeout=50ms over the body's 1m answers timed_out");
	is($url_relation, 'gte', "$mode: ?timeout=50ms: with the count as a lower bound");
	cmp_ok($url_took_ms, '<', 500, "$mode: ?timeout=50ms: quickly (took < 500 ms)");
	note(sprintf('%s: ?timeout=50ms: took %d ms, the client answered after %.3f s', $mode, $url_took_ms, $took));
	if ($mode eq 'parallel')
	{
		cmp_ok($node->safe_psql('postgres', q{SELECT completed FROM search_engine.thread_pool WHERE name = 'search'}),
			'>=', $completed + 4, 'the search workers ran the other shard each time');
		cmp_ok($node->safe_psql('postgres', 'SELECT pool_idle(now())'), '<', 1.0, 'and are idle');
	}
}

# searches go on, and nothing crashed
is($node->safe_psql('postgres', q{SELECT search_engine.search('long', '{"query": {"match": {"body": "w1"}}, "size": 0}')->'hits'->'total'->>'value'}),
	'2000', 'a search after all that');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|was terminated by|PANIC|TRAP:|server process .* exited with exit code [^0]/,
	'no crash in the server log');
$node->stop;
done_testing();
