# The lifecycle races reported against one node, each made deterministic:
#
# - open_index, create_index and a bulk's auto-creation stopped (debug
#   waitpoint) right after they wrote the cluster state, while delete_index
#   of the same name runs: it must wait for them (lifecycle lock), and
#   nobody crashes;
# - a bulk queued to a write worker (stopped with SIGSTOP) while its index
#   is deleted or closed: the worker answers the ES error, 404
#   index_not_found_exception or 400 index_closed_exception;
# - shard directories removed under an open shard: flush and a fast
#   shutdown fail the shard, they do not PANIC;
# - the directory of an index that is not in the cluster state is removed
#   at start.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use File::Path qw(rmtree);
use Time::HiRes qw(usleep);
use SeTest;

my $node = SeTest::new_node('races', write_threads => 1,
	extra => "search_engine.debug_waitpoints = on\n");
my $dir = PostgreSQL::Test::Utils::tempdir;
my $data = $node->data_dir . '/search_engine';
my $one_shard = q{'{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}'};

# Run sql in a child session named tag; finish() returns (rc, stdout, stderr).
my %children;
sub start
{
	my ($tag, $sql) = @_;
	unlink("$dir/$tag");
	my $pid = fork();
	die "fork failed" unless defined $pid;
	if ($pid == 0)
	{
		eval {
			my ($rc, $out, $err) = $node->psql('postgres',
				"SET application_name = '$tag'; $sql", timeout => 180);
			open(my $fh, '>', "$dir/$tag.part") or die;
			print $fh "$rc\n$out\n---\n$err";
			close $fh;
			rename("$dir/$tag.part", "$dir/$tag");
		};
		POSIX::_exit(0);
	}
	$children{$tag} = $pid;
}

sub finish
{
	my ($tag) = @_;
	waitpid($children{$tag}, 0);
	my $text = slurp_file("$dir/$tag");
	my ($rc, $rest) = split /\n/, $text, 2;
	my ($out, $err) = split /\n---\n/, $rest, 2;
	chomp $out;
	return ($rc, $out, $err // '');
}

# Wait until session tag is done or waits on a lock (the lifecycle lock,
# or a waitpoint).
sub wait_done_or_locked
{
	my ($tag) = @_;
	for (1 .. 1800)
	{
		return 'done' if -e "$dir/$tag";
		return 'locked' if $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = '$tag' AND wait_event_type = 'Lock'") > 0;
		usleep(100_000);
	}
	die "$tag neither finished nor waited on a lock";
}

sub wait_active
{
	my ($tag, $wait_type) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = '$tag' AND state = 'active'"
		  . ($wait_type ? " AND wait_event_type = '$wait_type'" : ''))
	  or die "$tag did not start";
}

my $logpos = 0;
sub no_crash
{
	my ($what) = @_;
	# a crash is in the log once the postmaster has noticed it
	usleep(200_000);
	$node->psql('postgres', 'SELECT 1');
	my $log = substr(slurp_file($node->logfile), $logpos);
	$logpos += length($log);
	my @bad = grep { /PANIC|terminated by signal|was terminated/ } split /\n/, $log;
	is(scalar(@bad), 0, "$what: no crash or PANIC") or diag(join("\n", @bad));
}

# op_sql stops at waitpoint wp holding the name's lifecycle lock; delete_index
# of name races it.
sub race_with_delete
{
	my ($what, $wp, $op_sql, $name) = @_;
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("SELECT pg_advisory_lock(hashtext('$wp'))");
	start('op', $op_sql);
	wait_active('op', 'Lock');
	start('del', "SELECT search_engine.delete_index('$name')");
	my $how = wait_done_or_locked('del');
	$holder->query_safe("SELECT pg_advisory_unlock(hashtext('$wp'))");
	$holder->quit;
	my @op = finish('op');
	my @del = finish('del');
	is($how, 'locked', "$what: delete_index waits for it") or diag(join(' | ', @del));
	no_crash($what);
	return (\@op, \@del);
}

# 1. open_index racing delete_index
$node->safe_psql('postgres', "SELECT search_engine.create_index('o1', $one_shard)");
$node->safe_psql('postgres', "SELECT search_engine.close_index('o1')");
my ($op, $del) = race_with_delete('open vs delete', 'se:open_index:after_state',
	"SELECT search_engine.open_index('o1')->>'acknowledged'", 'o1');
is_deeply([ $op->[0], $op->[1] ], [ 0, 'true' ], 'open_index was acknowledged') or diag($op->[2]);
is($del->[0], 0, 'then delete_index was') or diag($del->[2]);

# 2. create_index racing delete_index
($op, $del) = race_with_delete('create vs delete', 'se:create_index:after_state',
	"SELECT search_engine.create_index('c1', $one_shard)->>'acknowledged'", 'c1');
is_deeply([ $op->[0], $op->[1] ], [ 0, 'true' ], 'create_index was acknowledged') or diag($op->[2]);
is($del->[0], 0, 'then delete_index was') or diag($del->[2]);

# 3. a bulk's auto-creation racing delete_index
# (the delete may come before the items are applied once the index is
# created: then they answer 404)
($op, $del) = race_with_delete('auto-create vs delete', 'se:create_index:after_state',
	q{SELECT string_agg(i->'index'->>'status' || ' ' || coalesce(i->'index'->'error'->>'type', '-'), ',')
	    FROM json_array_elements(search_engine.bulk(
	    E'{"index": {"_id": "1"}}\n{"a": 1}\n{"index": {"_id": "2"}}\n{"a": 2}\n', 'a1')->'items') i},
	'a1');
is($op->[0], 0, 'the bulk that created its index was answered') or diag($op->[2]);
like($op->[1], qr/^(201 -|404 index_not_found_exception),(201 -|404 index_not_found_exception)$/,
	'each of its items was created, or found its index deleted');
is($del->[0], 0, 'then delete_index deleted it') or diag($del->[2]);
is($node->safe_psql('postgres', "SELECT count(*) FROM search_engine.indices"), '0',
	'no index is left');

# 4 and 5. A bulk queued to the stopped write worker while its index is
# deleted (closed): the worker closes the shard first and answers the bulk
# with the ES error.
my $pm = SeTest::postmaster_pid($node);
my ($worker) = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm -f 'search_engine write worker'`;
ok($worker, "found the write worker ($worker)");
for my $case (['delete', 'delete_index', '404 index_not_found_exception'],
	['close', 'close_index', '400 index_closed_exception'])
{
	my ($what, $fn, $expect) = @$case;
	my $name = "q$what";
	$node->safe_psql('postgres', "SELECT search_engine.create_index('$name', $one_shard)");
	my ($uuid) = $node->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = '$name'");
	kill 'STOP', $worker;
	start('bulk', qq{SELECT string_agg((i->'index'->>'status') || ' ' || (i->'index'->'error'->>'type'), ',')
	  FROM json_array_elements(search_engine.bulk(E'{"index": {"_id": "1"}}\\n{"a": 1}\\n', '$name')->'items') i});
	wait_active('bulk', 'Extension');
	start('life', "SELECT search_engine.$fn('$name')->>'acknowledged'");
	wait_active('life', 'Extension');
	kill 'CONT', $worker;
	my @bulk = finish('bulk');
	my @life = finish('life');
	is_deeply([ $bulk[0], $bulk[1] ], [ 0, $expect ],
		"a bulk queued before $fn is answered $expect") or diag($bulk[2]);
	is_deeply([ $life[0], $life[1] ], [ 0, 'true' ], "$fn was acknowledged") or diag($life[2]);
	if ($what eq 'delete')
	{
		ok(!-e "$data/indices/$uuid", 'the deleted index left no directory');
	}
	else
	{
		$node->safe_psql('postgres', "SELECT search_engine.open_index('$name')");
		is($node->safe_psql('postgres', "SELECT search_engine.get_doc('$name', '1')->>'found'"), 'false',
			'the bulk answered index_closed_exception was not applied');
	}
	no_crash("bulk queued before $fn");
}

# 6. Directories removed under open shards: flush fails the shard, and so
# does the flush of a fast shutdown, without a PANIC.
for my $name (qw(m1 m2))
{
	$node->safe_psql('postgres', "SELECT search_engine.create_index('$name', $one_shard)");
	$node->safe_psql('postgres',
		qq{SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\\n{"a": 1}\\n', '$name', refresh => 'true')});
}
my %uuid = map { $_ => scalar $node->safe_psql('postgres', "SELECT uuid FROM search_engine.indices WHERE index = '$_'") } qw(m1 m2);
rmtree("$data/indices/$uuid{m1}/0");
$node->psql('postgres', "SELECT search_engine.flush('m1')");
no_crash('flush of a shard whose directory is gone');
rmtree("$data/indices/$uuid{m2}/0");
eval { $node->stop('fast'); };
ok(!$@, 'fast shutdown with a shard whose directory is gone') or diag($@);
no_crash('fast shutdown with a shard whose directory is gone');

# 7. A directory of an index that is not in the cluster state (a delete
# that crashed between the state and the files) goes at start.
mkdir("$data/indices/leftoverAAAAAAAAAAAAAAA");
mkdir("$data/indices/leftoverAAAAAAAAAAAAAAA/0");
$node->start;
SeTest::wait_ready($node);
ok(!-e "$data/indices/leftoverAAAAAAAAAAAAAAA", 'a leftover index directory is removed at start');
ok(-e "$data/indices/$uuid{m1}", 'the directories of known indices stay');
$node->safe_psql('postgres', "SELECT search_engine.delete_index('m1,m2')");
ok(!-e "$data/indices/$uuid{m1}" && !-e "$data/indices/$uuid{m2}", 'deleting the failed indices removes them');
no_crash('restart');
$node->stop;
done_testing();
