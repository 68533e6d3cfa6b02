/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  Retention leases (Elasticsearch 7.4+ ReplicationTracker): a primary
 *	  keeps, per copy, the lowest seq_no whose history it must retain so
 *	  that copy can come back by replaying operations instead of copying
 *	  files.
 *
 * A peer-recovery lease is named peer_recovery/<node> (ES names it after
 * the node id, not the allocation id: a copy that comes back is a new
 * allocation on the same node and must find its lease).  Its retaining
 * seq_no is that copy's local checkpoint + 1 as last reported; it only
 * goes up.  A lease whose copy is not assigned is not renewed and expires
 * after index.soft_deletes.retention_lease.period (12h); one whose copy
 * cannot come back (no copy of the shard on its node and no unassigned
 * copy left) goes at once.  Pure module: compiles in the unit tests.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_LEASE_H
#define SE_LEASE_H

#include "util/se_common.h"

#include "lib/stringinfo.h"

#define SE_MAX_LEASES			8
#define SE_LEASE_ID_LEN			96
#define SE_LEASE_PREFIX			"peer_recovery/"
#define SE_LEASE_SOURCE			"peer recovery"
#define SE_LEASE_DEFAULT_PERIOD_MS	(12 * 3600 * (int64) 1000)

typedef struct SeRetentionLease
{
	char		id[SE_LEASE_ID_LEN];
	int64		retaining_seq_no;
	int64		timestamp_ms;	/* last renewal, ms since the Unix epoch */
} SeRetentionLease;

typedef struct SeLeaseSet
{
	/*
	 * ES RetentionLeases: the primary term of the primary that made the
	 * set and a version bumped by every change (add, remove, a retaining
	 * seq_no moving), so a replica keeps the newest set it was sent.
	 */
	int64		primary_term;
	int64		version;
	int			n;
	SeRetentionLease leases[SE_MAX_LEASES];
} SeLeaseSet;

/* The lease id of node's copies. */
extern void se_lease_id(const char *node, char *id, size_t size);
extern const SeRetentionLease *se_lease_find(const SeLeaseSet *s, const char *id);
/*
 * Add id (retaining retaining_seq_no) or renew it: its timestamp becomes
 * now, its retaining seq_no the larger of the two.  Returns whether the
 * retaining seq_no or the set changed (what is worth persisting); false
 * too when the set is full and id is not in it.
 */
extern bool se_lease_renew(SeLeaseSet *s, const char *id, int64 retaining_seq_no, int64 now_ms);
extern bool se_lease_remove(SeLeaseSet *s, const char *id);
/*
 * Drop the leases not in keep (ids of the copies that are assigned: they
 * are renewed, never expired) that are older than period_ms, and, when
 * may_return is false (no copy could come back), every lease not in keep.
 * Returns how many went.
 */
extern int	se_lease_expire(SeLeaseSet *s, const char *const *keep, int nkeep, bool may_return,
							int64 now_ms, int64 period_ms);
/* The lowest retaining seq_no (-1: no lease). */
extern int64 se_lease_min(const SeLeaseSet *s);
/*
 * JSON: {"primary_term":..,"version":..,"leases":[{"id":..,"retaining_seq_no":..,
 * "timestamp":..,"source":..}]} (a file without the first two decodes with 0)
 */
extern void se_lease_encode(const SeLeaseSet *s, StringInfo out);
extern bool se_lease_decode(const char *json, size_t len, SeLeaseSet *s);
/* Is a newer than b (a higher term, or the same term and a higher version)? */
extern bool se_lease_set_newer(const SeLeaseSet *a, const SeLeaseSet *b);

#endif							/* SE_LEASE_H */
