# A full disk (issue 13).  The node's data directory is on a small tmpfs
# (SE_TMPFS_DIR, mounted by test/run_all.sh when it runs as root; without
# it the test skips).  A filler file and bulks fill it until writes fail:
# the failed shard keeps answering searches from its last published
# segments, every acknowledged document stays readable, writes get 429
# cluster_block_exception; once the filler is deleted, its owner recovers
# the shard by itself (back-off 1 s doubling to 30 s), without close/open.
# The batch that hits the full disk gets the same 429 as the writes after
# it.  A force_merge that runs out of space is abandoned: it reports the
# failure, deletes its partial output and leaves the shard started.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use JSON::PP;
use SeTest;

plan skip_all => 'SE_TMPFS_DIR is not set (test/run_all.sh mounts it as root)'
  unless $ENV{SE_TMPFS_DIR} && -d $ENV{SE_TMPFS_DIR} && -w $ENV{SE_TMPFS_DIR};
my $fs = $ENV{SE_TMPFS_DIR};
my $filler = "$fs/filler";
system("rm -rf '$fs/data' '$filler'");

my $node = SeTest::new_node('diskfull', write_threads => 1,
	extra => "search_engine.data_directory = '$fs/data'\n");
sub q1 { return $node->safe_psql('postgres', $_[0]); }

# free bytes of the tmpfs
sub free_bytes
{
	my $out = `df -B1 --output=avail '$fs' | tail -1`;
	$out =~ s/\s+//g;
	return $out;
}

# fill the tmpfs but for $keep bytes
sub fill
{
	my ($keep) = @_;
	my $mb = int((free_bytes() - $keep) / (1024 * 1024));
	system("dd if=/dev/zero of='$filler' bs=1M count=$mb status=none oflag=append conv=notrunc") if $mb > 0;
}

my $pad = 'x' x 20000;
my $n = 0;
# one bulk of $k documents into index $ix; returns the ids acknowledged
sub bulk
{
	my ($ix, $k, $refresh) = @_;
	my $body = '';
	my @ids;
	for (1 .. $k)
	{
		$n++;
		push @ids, "d$n";
		# index m gets incompressible text, so that merging it needs space
		my $text = $ix eq 'm' ? join('', map { chr(97 + int(rand(26))) } 1 .. 20000) : "$pad $n";
		$body .= qq({"index": {"_id": "d$n"}}\n{"n": $n, "pad": "$text"}\n);
	}
	my $res = q1("SELECT search_engine.bulk(\$b\$$body\$b\$, '$ix', '$refresh')");
	my @acked = map { $_->{_id} } grep { $_->{status} == 200 || $_->{status} == 201 }
	  map { values %$_ } @{ decode_json($res)->{items} };
	return (\@acked, $res);
}

sub hits
{
	my ($ix) = @_;
	my $res = q1("SELECT status || ' ' || coalesce(body->'hits'->'total'->>'value', body::text)
	  FROM search_engine.request('POST', '/$ix/_search', '{\"size\": 0, \"track_total_hits\": true}')");
	return $res;
}

sub ids_found
{
	my ($ix, $ids) = @_;
	my $list = join(',', map { qq("$_") } @$ids);
	return q1("SELECT coalesce(body->'hits'->'total'->>'value', body::text) FROM search_engine.request('POST', '/$ix/_search',
	  '{\"size\": 0, \"track_total_hits\": true, \"query\": {\"ids\": {\"values\": [$list]}}}')");
}

q1(q{SELECT search_engine.create_index('d', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}')});
q1(q{SELECT search_engine.create_index('m', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}')});

# --- writes on a full disk, then space freed ---
my @acked;
my ($a, $res) = bulk('d', 20, 'true');
push @acked, @$a;
is(scalar @$a, 20, 'bulks succeed while there is space');
fill(3 * 1024 * 1024);
my $failed_res;
for my $round (1 .. 200)
{
	($a, $res) = bulk('d', 20, 'true');
	push @acked, @$a;
	if (@$a < 20)
	{
		$failed_res = $res;
		last;
	}
}
ok(defined $failed_res, 'writes fail once the disk is full') or diag("free: " . free_bytes());
like($failed_res // '', qr/No space left on device|cluster_block_exception/, 'with a clear error');
# the batch that hit the full disk is answered as every later write is:
# 429 cluster_block_exception (which clients retry) naming the write error
my @refused = grep { $_->{status} != 200 && $_->{status} != 201 }
  map { values %$_ } @{ decode_json($failed_res // '{"items": []}')->{items} };
ok(@refused > 0, 'the first failing bulk has refused items');
is(join(',', sort keys %{ { map { $_->{status} => 1 } @refused } }), '429',
	'the batch that hit the full disk is answered 429, not 500') or diag($failed_res);
is(scalar(grep { ($_->{error}{type} // '') eq 'cluster_block_exception' && ($_->{error}{reason} // '') =~ /No space left on device/ } @refused),
	scalar @refused, 'as cluster_block_exception naming the write error');

($a, $res) = bulk('d', 1, 'false');
like($res, qr/"status"\s*:\s*(429|500|503)/, 'a write to the failed shard is refused');
like($res, qr/cluster_block_exception|No space left|not started/, 'with the disk-full error') or diag($res);

my $count = scalar @acked;
like(hits('d'), qr/^200 \d+$/, 'searches answer while the shard is failed');
is(ids_found('d', \@acked), $count, "all $count acknowledged documents are searchable during the failure");

unlink($filler) or die "unlink $filler: $!";
my $t0 = time;
my $ok = 0;
while (time - $t0 < 60)
{
	($a, $res) = bulk('d', 1, 'true');
	if (@$a == 1)
	{
		push @acked, @$a;
		$ok = 1;
		last;
	}
	usleep(500_000);
}
ok($ok, sprintf('writes succeed again %.1f s after space is freed, without close/open', time - $t0)) or diag($res);
cmp_ok(time - $t0, '<', 45, 'within the bounded back-off');
is(ids_found('d', \@acked), scalar @acked, 'every acknowledged document is searchable after recovery');

# --- force_merge on a full disk ---
for (1 .. 8)
{
	($a) = bulk('m', 20, 'true');
	is(scalar @$a, 20, "segment $_ of the index to merge") if $_ == 8;
}
my $before = hits('m');
fill(256 * 1024);
my $free_before = free_bytes();
my $fm = q1(q{SELECT search_engine.force_merge('m', 1)});
note("force_merge: $fm");
like($fm, qr/"failed"\s*:\s*[1-9]/, 'force_merge on a full disk reports the shard failure') or diag($fm);
like($fm, qr/No space left on device/, 'with the reason');
like($fm, qr/"type"\s*:\s*"io_exception"/, 'as an io_exception of the merge, not a failed shard');
# the merge is abandoned, not the shard: its partial output is gone and
# the shard is open at once (no failure, no recovery)
cmp_ok(free_bytes(), '>=', $free_before - 64 * 1024, 'the partial merge output was deleted');
is(q1(q{SELECT string_agg(state, ',') FROM search_engine.shards WHERE index = 'm'}), 'STARTED',
	'the shard stays started');
is(hits('m'), $before, 'the shard stays readable');
unlink($filler);

$t0 = time;
my $fm2 = '';
while (time - $t0 < 60)
{
	$fm2 = q1(q{SELECT search_engine.force_merge('m', 1)});
	last if $fm2 =~ /"failed"\s*:\s*0/;
	usleep(500_000);
}
like($fm2, qr/"failed"\s*:\s*0/, 'with space back, force_merge succeeds');
is(hits('m'), $before, 'with every document');

$node->stop;
system("rm -rf '$fs/data' '$filler'");
done_testing();
