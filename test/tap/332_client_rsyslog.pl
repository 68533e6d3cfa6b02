# rsyslog's omelasticsearch (Debian's rsyslog-elasticsearch), unchanged:
# an rsyslogd of its own (config, work directory, pid file in the test's
# directory) takes syslog lines over TCP and ships them in bulk mode into
# daily indices (syslog-YYYY.MM.DD from each line's timestamp), with
# writeoperation=create, an id per line and retryfailures: items the tiny
# write queue rejects with 429 come back through the retry ruleset and are
# sent again.  Every line arrives exactly once, in its day's index.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use POSIX qw(strftime);
use SeClients;

my $rsyslogd = '/usr/sbin/rsyslogd';
plan skip_all => 'rsyslog-elasticsearch is not installed (test/setup_deps.sh installs it)'
  unless -x $rsyslogd && grep { -e "$_/omelasticsearch.so" } glob('/usr/lib/*/rsyslog');

my ($node, $base, $port) = SeClients::http_node('rsyslog', write_threads => 1,
	extra => "search_engine.write_queue_size = 2\n");

# three days of lines: the two earlier days' indices exist with 8 shards
# (most of each bulk's shard requests are rejected), today's is created by
# the first bulk that names it
my @days = map { strftime('%Y-%m-%d', gmtime(time - $_ * 86400)) } (2, 1, 0);
(my $d0 = $days[0]) =~ tr/-/./;
(my $d1 = $days[1]) =~ tr/-/./;
(my $d2 = $days[2]) =~ tr/-/./;
for my $d ($d0, $d1)
{
	my ($st) = SeClients::curl('-X', 'PUT', '-H', 'Content-Type: application/json',
		'-d', '{"settings": {"number_of_shards": 8, "number_of_replicas": 0}}', "$base/syslog-$d");
	is($st, 200, "daily index syslog-$d created with 8 shards");
}

my $dir = PostgreSQL::Test::Utils::tempdir;
my $tcp = PostgreSQL::Test::Cluster::get_free_port();
mkdir "$dir/work";
open(my $cf, '>', "$dir/rsyslog.conf") or die;
print $cf <<"CONF";
global(workDirectory="$dir/work")
module(load="imtcp")
module(load="omelasticsearch")
input(type="imtcp" address="127.0.0.1" port="$tcp" ruleset="to_es")

template(name="doc" type="list" option.json="on") {
  constant(value="{\\"\@timestamp\\":\\"") property(name="timereported" dateFormat="rfc3339")
  constant(value="\\",\\"host\\":\\"") property(name="hostname")
  constant(value="\\",\\"message\\":\\"") property(name="msg")
  constant(value="\\"}")
}
template(name="daily" type="list") {
  constant(value="syslog-")
  property(name="timereported" dateFormat="year") constant(value=".")
  property(name="timereported" dateFormat="month") constant(value=".")
  property(name="timereported" dateFormat="day")
}
template(name="index" type="list") { property(name="\$.es_index") }
template(name="docid" type="list") { property(name="\$.es_id") }

ruleset(name="to_es") {
  if strlen(\$.omes!status) > 0 then {
    # an item coming back from the bulk: done if created (409: created by an
    # earlier try); retried only if rejected (429), logged otherwise
    if (\$.omes!status == 200) or (\$.omes!status == 201) or ((\$.omes!status == 409) and (\$.omes!writeoperation == "create")) then {
      stop
    }
    if (\$.omes!status != 429) then {
      action(type="omfile" file="$dir/failed.log")
      stop
    }
  }
  # a retried item is a new message made from the request: it keeps the
  # index and id its first try computed
  if strlen(\$.omes!_index) > 0 then {
    set \$.es_index = \$.omes!_index;
    set \$.es_id = \$.omes!_id;
  } else {
    set \$.es_index = exec_template("daily");
    set \$.es_id = re_extract(\$msg, "seq=([0-9]+)", 0, 1, "none");
  }
  action(type="omelasticsearch" server="127.0.0.1" serverport="$port"
         template="doc" searchIndex="index" dynSearchIndex="on"
         bulkmode="on" bulkid="docid" dynbulkid="on" writeoperation="create"
         esVersion.major="8" retryfailures="on" retryruleset="to_es"
         errorfile="$dir/es-errors.json"
         action.resumeRetryCount="-1" action.resumeInterval="1")
}
CONF
close $cf;

my ($out, $err) = ('', '');
my $rs = IPC::Run::start([ $rsyslogd, '-n', '-f', "$dir/rsyslog.conf", '-i', "$dir/rsyslog.pid" ],
	'<', \undef, '>', \$out, '2>', \$err);
my $sock;
for (1 .. 100)
{
	last if $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$tcp", Proto => 'tcp');
	select(undef, undef, undef, 0.1);
}
ok($sock, 'rsyslogd listens');

# RFC 5424 lines, seq=N numbering them; day N % 3
my $per_day = 1000;
my $n = 3 * $per_day;
for my $i (1 .. $n)
{
	print $sock "<13>1 $days[$i % 3]T10:00:00Z testhost app - - - seq=$i line $i of the rsyslog client test\n";
}
close $sock;

# all arrive, within two minutes
my $total = 0;
for (1 .. 240)
{
	$total = SeClients::sql_count($node, 'syslog-*');
	last if $total >= $n;
	select(undef, undef, undef, 0.5);
}
is($total, $n, 'every line arrived');
# nothing more comes (no duplicate from a late retry)
sleep 3;
is(SeClients::sql_count($node, 'syslog-*'), $n, 'and no line twice');
my %want = ($d0 => $per_day, $d1 => $per_day, $d2 => $per_day);
for my $d (sort keys %want)
{
	is(SeClients::sql_count($node, "syslog-$d"), $per_day, "syslog-$d holds its day's lines");
}
# the ids are the lines' numbers: 3000 documents with ids from 1..3000 in
# the index of their day, so each line is there exactly once
for my $i (1, 2, 3, 1500, 2999, 3000)
{
	my $d = (($d0, $d1, $d2)[$i % 3]) =~ s/-/./gr;
	my ($st, $body) = SeClients::curl("$base/syslog-$d/_doc/$i");
	like($body, qr/seq=$i line $i of/, "line $i is document $i of syslog-$d");
}
my $rejected = $node->safe_psql('postgres', q{SELECT rejected FROM search_engine.thread_pool WHERE name = 'write'});
cmp_ok($rejected, '>', 0, "the queue was saturated: $rejected shard requests rejected, their items retried");
ok(!-s "$dir/failed.log", 'no item failed for another reason than 429');

$rs->signal('TERM');
eval { $rs->finish };
$node->stop;
done_testing();
