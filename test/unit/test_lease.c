/* SOURCES: src/replication/lease.c src/util/json.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_lease.c
 *	  Unit tests for retention lease bookkeeping: renewal never lowers the
 *	  retaining seq_no, the minimum, expiry of unassigned copies' leases
 *	  after the period (assigned ones are kept), dropping when no copy can
 *	  come back, a full set, and the JSON round trip.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "replication/lease.h"
#include "unit_test.h"

static void
test_renew_and_min(void)
{
	SeLeaseSet	s;
	char		id1[SE_LEASE_ID_LEN];
	char		id2[SE_LEASE_ID_LEN];

	memset(&s, 0, sizeof(s));
	UT_CHECK(se_lease_min(&s) == -1, "empty set retains nothing");
	se_lease_id("n1", id1, sizeof(id1));
	se_lease_id("n2", id2, sizeof(id2));
	UT_CHECK(strcmp(id2, "peer_recovery/n2") == 0, "id %s", id2);
	UT_CHECK(se_lease_renew(&s, id1, 10, 1000), "new lease changes the set");
	UT_CHECK(se_lease_renew(&s, id2, 4, 1000), "second lease");
	UT_CHECK(se_lease_min(&s) == 4, "min %lld", (long long) se_lease_min(&s));
	UT_CHECK(!se_lease_renew(&s, id2, 2, 2000), "a lower retaining seq_no is not a change");
	UT_CHECK(se_lease_find(&s, id2)->retaining_seq_no == 4, "never goes backwards");
	UT_CHECK(se_lease_find(&s, id2)->timestamp_ms == 2000, "but the timestamp is renewed");
	UT_CHECK(se_lease_renew(&s, id2, 12, 3000), "a higher one is");
	UT_CHECK(se_lease_min(&s) == 10, "min %lld", (long long) se_lease_min(&s));
	UT_CHECK(se_lease_remove(&s, id1) && !se_lease_remove(&s, id1), "remove once");
	UT_CHECK(se_lease_min(&s) == 12 && s.n == 1, "one left");
}

static void
test_expire(void)
{
	SeLeaseSet	s;
	const char *keep[] = {"peer_recovery/a"};
	int64		period = 12 * 3600 * (int64) 1000;

	memset(&s, 0, sizeof(s));
	se_lease_renew(&s, "peer_recovery/a", 5, 0);
	se_lease_renew(&s, "peer_recovery/b", 7, 0);
	UT_CHECK(se_lease_expire(&s, keep, 1, true, period, period) == 0,
			 "nothing older than the period yet");
	UT_CHECK(se_lease_expire(&s, keep, 1, true, period + 1, period) == 1,
			 "the unassigned copy's lease expires");
	UT_CHECK(se_lease_find(&s, "peer_recovery/a") != NULL, "the assigned copy's stays, however old");
	UT_CHECK(se_lease_find(&s, "peer_recovery/b") == NULL, "b went");
	se_lease_renew(&s, "peer_recovery/b", 7, period);
	UT_CHECK(se_lease_expire(&s, keep, 1, false, period, period) == 1,
			 "no copy can come back: dropped at once");
	UT_CHECK(s.n == 1 && se_lease_min(&s) == 5, "a is left");
}

static void
test_full(void)
{
	SeLeaseSet	s;
	char		id[SE_LEASE_ID_LEN];
	int			i;

	memset(&s, 0, sizeof(s));
	for (i = 0; i < SE_MAX_LEASES; i++)
	{
		snprintf(id, sizeof(id), "peer_recovery/n%d", i);
		UT_CHECK(se_lease_renew(&s, id, i, 0), "lease %d", i);
	}
	UT_CHECK(!se_lease_renew(&s, "peer_recovery/extra", 0, 0), "full set refuses");
	UT_CHECK(s.n == SE_MAX_LEASES, "n %d", s.n);
}

static void
test_json(void)
{
	SeLeaseSet	s;
	SeLeaseSet	t;
	StringInfoData b;

	memset(&s, 0, sizeof(s));
	se_lease_renew(&s, "peer_recovery/n\"1", 42, 1700000000000LL);
	se_lease_renew(&s, "peer_recovery/n2", 0, 5);
	initStringInfo(&b);
	se_lease_encode(&s, &b);
	UT_CHECK(se_lease_decode(b.data, b.len, &t), "decodes: %s", b.data);
	UT_CHECK(t.n == 2, "n %d", t.n);
	UT_CHECK(strcmp(t.leases[0].id, "peer_recovery/n\"1") == 0 && t.leases[0].retaining_seq_no == 42 &&
			 t.leases[0].timestamp_ms == 1700000000000LL, "first lease round-trips");
	UT_CHECK(t.version == 2 && s.version == 2, "the version round-trips: %lld", (long long) t.version);
	t.primary_term = 3;
	UT_CHECK(se_lease_set_newer(&t, &s) && !se_lease_set_newer(&s, &t), "a higher term is newer");
	t.primary_term = s.primary_term;
	se_lease_remove(&s, "peer_recovery/n2");
	UT_CHECK(se_lease_set_newer(&s, &t), "a removal makes a newer version");
	UT_CHECK(se_lease_decode("{\"leases\":[]}", 13, &t) && t.version == 0 && t.n == 0,
			 "a file from before versions decodes");
	UT_CHECK(!se_lease_decode("{\"leases\":[{\"id\":1}]}", 21, &t), "a bad lease refuses the file");
	UT_CHECK(!se_lease_decode("[]", 2, &t), "not an object");
}

int
main(void)
{
	test_renew_and_min();
	test_expire();
	test_full();
	test_json();
	return ut_finish("test_lease");
}
