# Runs the pgTAP suites (test/pgtap/*.sql) with pg_prove against a node
# that has search_engine preloaded and pgtap installed.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SeTest;

my $node = SeTest::new_node('pgtap');
$node->safe_psql('postgres', 'CREATE EXTENSION pgtap');
my @files = sort glob("$FindBin::RealBin/../pgtap/*.sql");
ok(@files > 0, 'found pgTAP files');
for my $f (@files)
{
	my $out = `pg_prove -h '${\ $node->host}' -p ${\ $node->port} -d postgres -U '${\ scalar getpwuid($<)}' '$f' 2>&1`;
	my $rc = $? >> 8;
	is($rc, 0, "pgTAP $f") or diag($out);
}
$node->stop;
done_testing();
