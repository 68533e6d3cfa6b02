# Debian's elasticsearch-curator 5.8, unchanged: it refuses a server at 8.0
# or above, so the node reports 7.17.0 on GET / under
# search_engine.override_main_response_version (as OpenSearch's
# compatibility.override_main_response_version).  A delete_indices action
# with an age filter on the date in the names (timestring %Y.%m.%d)
# deletes exactly the indices older than 5 days; the others and indices of
# another prefix stay.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use SeClients;

my $curator = '/usr/bin/curator';
plan skip_all => 'elasticsearch-curator is not installed (test/setup_deps.sh installs it)'
  unless -x $curator;

my ($node, $base, $port) = SeClients::http_node('curator',
	extra => "search_engine.override_main_response_version = '7.17.0'\n");
my ($st, $body) = SeClients::curl("$base/");
like($body, qr/"number":"7\.17\.0"/, 'GET / reports the override version');
like($body, qr/"lucene_version":"8\.11\.1"/, 'with that release\'s Lucene');

# logs-YYYY.MM.DD for today and the 9 days before, and one other prefix
my @names = map { 'logs-' . strftime('%Y.%m.%d', gmtime(time - $_ * 86400)) } 0 .. 9;
for my $name (@names, 'keep-2000.01.01')
{
	($st) = SeClients::curl('-X', 'PUT', '-H', 'Content-Type: application/json',
		'-d', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}', "$base/$name");
	is($st, 200, "created $name");
}

my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $c, '>', "$dir/config.yml") or die;
print $c <<"YML";
client:
  hosts: [127.0.0.1]
  port: $port
  timeout: 60
logging:
  loglevel: INFO
  logfile: $dir/curator.log
YML
close $c;
open(my $a, '>', "$dir/action.yml") or die;
print $a <<'YML';
actions:
  1:
    action: delete_indices
    description: delete the logs- indices older than 5 days by the date in their names
    options:
      ignore_empty_list: True
      continue_if_exception: False
    filters:
    - filtertype: pattern
      kind: prefix
      value: logs-
    - filtertype: age
      source: name
      direction: older
      timestring: '%Y.%m.%d'
      unit: days
      unit_count: 5
YML
close $a;

my ($rc, $out, $err) = SeClients::run_client(300, $curator, '--config', "$dir/config.yml",
	"$dir/action.yml");
my $log = PostgreSQL::Test::Utils::slurp_file("$dir/curator.log");
is($rc, 0, 'curator ran its action') or diag("stderr:\n$err\nlog:\n$log");
like($log, qr/"delete_indices" completed/, 'curator reports the action completed');

# older than 5 days: a name's day (00:00 UTC) before now - 5 days, i.e.
# days 5 to 9 back
my $left = $node->safe_psql('postgres',
	q{SELECT string_agg(index, ',' ORDER BY index) FROM search_engine.indices});
my @kept = sort(@names[0 .. 4], 'keep-2000.01.01');
is($left, join(',', @kept), 'the indices older than 5 days are deleted, the others stay');
for my $name (@names[5 .. 9])
{
	like($log, qr/deleting index \Q$name\E/, "curator deleted $name");
}

$node->stop;
done_testing();
