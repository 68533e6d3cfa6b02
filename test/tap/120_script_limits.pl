# Hostile painless scripts fail their own documents, not the workers that
# run them: an endless loop and an unbounded allocation fail with errors
# naming the limit in update_by_query (task worker), _update and bulk
# update (write worker), and the same workers go on serving.  Then
# search_engine.allowed_script_languages turns script languages off
# node-wide: sql only, then every language.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use SeTest;

my $node = SeTest::new_node('limits', write_threads => 1,
	extra => "search_engine.task_threads = 1\n");
$node->safe_psql('postgres', q{SELECT search_engine.create_index('lim', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}')});
$node->safe_psql('postgres', q{SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\n{"n": 1}\n{"index": {"_id": "2"}}\n{"n": 2}\n{"index": {"_id": "3"}}\n{"n": 3}', 'lim', refresh => 'true')});

# SQLSTATE|DETAIL|message of a statement's error, or "ok"
$node->safe_psql('postgres', q{
CREATE FUNCTION try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  st text; det text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, msg = MESSAGE_TEXT;
  RETURN st || '|' || det || '|' || msg;
END $$});

# pids of the workers whose title matches (write workers have no pg_stat_activity row)
sub workers
{
	my ($kind) = @_;
	my $pm = SeTest::postmaster_pid($node);
	my @pids = map { /^\s*(\d+)/ ? $1 : () }
	  grep { /search_engine $kind worker/ } split /\n/, `ps -o pid=,args= --ppid $pm`;
	return join(',', sort { $a <=> $b } @pids);
}

sub update_doc
{
	my ($script) = @_;
	return $node->safe_psql('postgres', qq{SELECT try(\$q\$SELECT search_engine.update_doc('lim', '1', '{"script": {"source": "$script"}}')\$q\$)});
}

my $endless = 'while (true) {}';
my $statements = qr/The maximum number of statements that can be executed \(1000000\) has been reached/;
my $unbounded = 'def l = []; while (true) { l.add([[], [], [], [], [], [], [], []]) }';
my $memory = qr/script exceeded the memory limit of 67108864 bytes/;
# 128 kB of pointers to one 128 kB string: 2 GB of JSON (quoted for SQL)
my $shared = q{def s = ''a''; while (s.length() < 100000) { s += s } def l = [s]; for (int i = 0; i < 14; i++) { l.addAll(l) } ctx._source.l = l};
my $too_large = qr/the updated _source exceeds the limit of 104857600 bytes/;
my $before = workers('(write|task)');
like($before, qr/^\d+,\d+$/, "one write worker and one task worker ($before)");

# 1. update_by_query: every document fails with the limit, the task completes
for my $case ([ 'endless loop', $endless, $statements ], [ 'unbounded allocation', $unbounded, $memory ],
	[ 'shared output', $shared, $too_large ])
{
	my ($what, $script, $reason) = @$case;
	my ($updated, $nfail, $type, $why) = split /\|/, $node->safe_psql('postgres',
		"SELECT r->'updated', jsonb_array_length(r->'failures'), r->'failures'->0->'cause'->>'type', r->'failures'->0->'cause'->>'reason' FROM ("
		  . "SELECT search_engine.update_by_query('lim', '{\"script\": {\"source\": \"$script\"}}', conflicts => 'proceed') r) x");
	is($updated, '0', "update_by_query, $what: nothing updated");
	is($nfail, '3', "update_by_query, $what: each document failed");
	is($type, 'script_exception', "update_by_query, $what: as a script_exception");
	like($why, $reason, "update_by_query, $what: naming the limit ($why)");
}

# 1b. lang sql scripts have a time and a memory budget of their own: a
# script that sleeps 30 s, or one that asks for 200 MB at once or builds
# a string of 200 MB row by row, fails its document with a
# script_exception naming the limit; the task completes and the next
# script runs
is($node->safe_psql('postgres', q{SELECT string_agg(name || ' ' || context || ' ' || setting || unit, ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('search_engine.sql_script_timeout', 'search_engine.sql_script_memory')}),
	'search_engine.sql_script_memory sighup 65536kB, search_engine.sql_script_timeout sighup 1000ms',
	'lang sql budgets: sighup settings, 1 s and 64 MB by default');

sub sql_script_case
{
	my ($what, $script, $reason, $within) = @_;
	my $start = time;
	my ($updated, $nfail, $type, $why, $canceled) = split /\|/, $node->safe_psql('postgres',
		"SELECT r->'updated', jsonb_array_length(r->'failures'), r->'failures'->0->'cause'->>'type', r->'failures'->0->'cause'->>'reason', r->>'canceled' FROM ("
		  . "SELECT search_engine.update_by_query('lim', '{\"query\": {\"ids\": {\"values\": [\"1\", \"2\"]}}, \"script\": {\"lang\": \"sql\", \"source\": \"$script\"}}', conflicts => 'proceed') r) x");
	my $took = time - $start;
	is($updated, '0', "lang sql, $what: nothing updated");
	is($nfail, '2', "lang sql, $what: each document failed, the task went on");
	is($type, 'script_exception', "lang sql, $what: as a script_exception");
	like($why, $reason, "lang sql, $what: naming the limit ($why)");
	is($canceled, '', "lang sql, $what: the task completed");
	cmp_ok($took, '<', $within, sprintf('lang sql, %s: two documents within %d s (%.1f s)', $what, $within, $took));
}

my $sql_memory = qr/^sql script exceeded the memory limit of 67108864 bytes \(search_engine.sql_script_memory\): out of memory$/;
sql_script_case('sleep', q{(SELECT $1 FROM pg_sleep(30))},
	qr/^sql script exceeded the time limit of 1000 ms \(search_engine.sql_script_timeout\)$/, 10);
# this machine faults fresh pages in slowly: give the memory cases time
$node->safe_psql('postgres', q{ALTER SYSTEM SET search_engine.sql_script_timeout = '5min'});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
usleep(500_000);
sql_script_case('200 MB at once', q{$1 || jsonb_build_object(''len'', length(repeat(repeat(''x'', 10000), 20000)))},
	$sql_memory, 30);
sql_script_case('200 MB row by row', q{(SELECT $1 || jsonb_build_object(''len'', length(string_agg(repeat(repeat(''x'', 1000), 1000), ''''))) FROM generate_series(1, 200) g)},
	$sql_memory, 60);
$node->safe_psql('postgres', q{ALTER SYSTEM RESET search_engine.sql_script_timeout});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
is($node->safe_psql('postgres', q{SELECT search_engine.update_by_query('lim', '{"query": {"ids": {"values": ["1"]}}, "script": {"lang": "sql", "source": "$1 || jsonb_build_object(''sql'', 1)"}}')->'updated'}),
	'1', 'lang sql: the next script runs');

# 2. _update and bulk update (write worker): the item fails, the shard does not
like(update_doc($endless), qr/^22023\|script_exception\|.*$statements/, '_update, endless loop: 22023 naming the limit');
like(update_doc($unbounded), qr/^22023\|script_exception\|.*$memory/, '_update, unbounded allocation: 22023 naming the limit');
like(update_doc($shared), qr/^22023\|script_exception\|.*$too_large/, '_update, shared output: 22023 naming the limit');
my $bulk = $node->safe_psql('postgres', qq{SELECT search_engine.bulk(E'{"update": {"_id": "2"}}\\n{"script": {"source": "$unbounded"}}\\n{"update": {"_id": "3"}}\\n{"script": "ctx._source.n += 10"}', 'lim', refresh => 'true')});
like($bulk, qr/"update":\{[^{}]*"status":400,"error":\{"type":"script_exception","reason":"[^"]*memory limit/,
	'bulk: the hostile update item fails with the memory limit');
like($bulk, qr/"_id":"3"[^{}]*"result":"updated"/, 'bulk: the next item in the same batch is applied');

# 3. the same workers go on serving, and nothing crashed
is(workers('(write|task)'), $before, 'the same write and task workers are running');
$node->safe_psql('postgres', q{SELECT search_engine.bulk(E'{"index": {"_id": "4"}}\n{"n": 4}', 'lim', refresh => 'true')});
is($node->safe_psql('postgres', q{SELECT search_engine.count('lim', '{"query": {"range": {"n": {"gte": 4}}}}')}), '2',
	'bulk and search still work (4 and 13)');
is($node->safe_psql('postgres', q{SELECT search_engine.update_by_query('lim', '{"script": {"source": "ctx._source.ok = true"}}', refresh => true)->'updated'}),
	'4', 'a normal update_by_query updates every document');
is(update_doc('ctx._source.n = 100'), 'ok', 'a normal _update succeeds');
# a task worker frees each document's script memory: 15 documents whose
# script holds about 40 MB each (within its budget) in one batch
$node->safe_psql('postgres', q{SELECT search_engine.create_index('mem', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}')});
$node->safe_psql('postgres', q{SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n{"n": %s}', i, i), E'\n') FROM generate_series(1, 15) i), 'mem', refresh => 'true')});
is($node->safe_psql('postgres', q{SELECT search_engine.update_by_query('mem', '{"script": {"source": "def l = []; for (int i = 0; i < 100000; i++) { l.add([[], [], []]) } ctx.op = ''noop''"}}')->'noops'}),
	'15', 'fifteen documents each ran a script holding about 40 MB');
my ($peak) = slurp_file('/proc/' . workers('task') . '/status') =~ /VmHWM:\s*(\d+) kB/;
cmp_ok($peak, '<', 250 * 1024, "the task worker's peak memory stays low (${peak} kB): freed per document");
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|exited with exit code|PANIC|shard_failed/, 'no worker crashed, exited or failed a shard');

# 4. search_engine.allowed_script_languages: superuser only, checked, node-wide
is($node->safe_psql('postgres', q{SELECT context || ' ' || setting FROM pg_settings WHERE name = 'search_engine.allowed_script_languages'}),
	'sighup painless,sql', 'a sighup setting, painless and sql by default');
my ($ret, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET search_engine.allowed_script_languages = 'painless, lua'});
like($err, qr/invalid value.*\n.*Unknown script language "lua"/, 'unknown languages are rejected');
($ret, $out, $err) = $node->psql('postgres', q{SET search_engine.allowed_script_languages = 'sql'});
like($err, qr/cannot be changed now/, 'not settable in a session');

sub set_languages
{
	my ($value) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET search_engine.allowed_script_languages = '$value'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
}

# the write worker rereads the configuration at the top of its loop
sub wait_for_update_doc
{
	my ($script, $want) = @_;
	my $got;
	for my $i (1 .. 100)
	{
		$got = update_doc($script);
		return $got if $got =~ $want;
		usleep(100_000);
	}
	return $got;
}

set_languages('painless');
my $sql_ubq = q{'{"script": {"lang": "sql", "source": "$1 || jsonb_build_object(''s'', 1)"}}'};
like($node->safe_psql('postgres', "SELECT try(\$q\$SELECT search_engine.update_by_query('lim', $sql_ubq)\$q\$)"),
	qr/^22023\|illegal_argument_exception\|cannot execute \[sql\] scripts: search_engine.allowed_script_languages is \[painless\]$/,
	'painless only: a sql update_by_query is refused (22023)');
is($node->safe_psql('postgres', q{SELECT status || ' ' || (body->'error'->>'type') FROM search_engine.request('POST', '/lim/_update_by_query',
	'{"script": {"lang": "sql", "source": "$1"}}')}), '400 illegal_argument_exception', 'and answered 400 over REST');
is($node->safe_psql('postgres', q{SELECT search_engine.update_by_query('lim', '{"script": "ctx._source.p = 1"}')->'updated'}),
	'4', 'painless only: a painless update_by_query runs');

set_languages('none');
like(wait_for_update_doc('ctx._source.n = 5', qr/illegal_argument_exception/),
	qr/^22023\|illegal_argument_exception\|cannot execute \[painless\] scripts: search_engine.allowed_script_languages is \[none\]$/,
	'none: the write worker refuses a painless _update');
like($node->safe_psql('postgres', q{SELECT try($q$SELECT search_engine.update_by_query('lim', '{"script": "ctx._source.p = 2"}')$q$)}),
	qr/^22023\|illegal_argument_exception\|cannot execute \[painless\] scripts/, 'none: a painless update_by_query is refused');
like($node->safe_psql('postgres', q{SELECT search_engine.bulk(E'{"update": {"_id": "1"}}\n{"script": "ctx._source.n = 6", "upsert": {"n": 0}}', 'lim')}),
	qr/"status":400,"error":\{"type":"illegal_argument_exception","reason":"cannot execute \[painless\] scripts/,
	'none: a bulk scripted update is refused');
is($node->safe_psql('postgres', q{SELECT search_engine.get_doc('lim', '1')->'_source'->>'n'}), '100', 'and the document is unchanged');
is($node->safe_psql('postgres', q{SELECT search_engine.update_doc('lim', '1', '{"doc": {"n": 7}}')->>'result'}), 'updated',
	'none: updates without a script still work');

set_languages('painless,sql');
like(wait_for_update_doc('ctx._source.n = 8', qr/^ok$/), qr/^ok$/, 'languages back on: scripts run again');
$node->stop;
done_testing();
