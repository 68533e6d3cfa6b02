/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  Retention lease bookkeeping (see lease.h).  Pure: the primary's slot
 *	  holds the set (retention.c), this only says what a renewal, an
 *	  expiry and the minimum are.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "replication/lease.h"
#include "util/json.h"

void
se_lease_id(const char *node, char *id, size_t size)
{
	snprintf(id, size, SE_LEASE_PREFIX "%s", node);
}

const SeRetentionLease *
se_lease_find(const SeLeaseSet *s, const char *id)
{
	int			i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->leases[i].id, id) == 0)
			return &s->leases[i];
	return NULL;
}

bool
se_lease_renew(SeLeaseSet *s, const char *id, int64 retaining_seq_no, int64 now_ms)
{
	SeRetentionLease *l = (SeRetentionLease *) se_lease_find(s, id);

	if (l == NULL)
	{
		if (s->n == SE_MAX_LEASES || strlen(id) >= SE_LEASE_ID_LEN)
			return false;
		l = &s->leases[s->n++];
		strlcpy(l->id, id, sizeof(l->id));
		l->retaining_seq_no = retaining_seq_no;
		l->timestamp_ms = now_ms;
		s->version++;
		return true;
	}
	l->timestamp_ms = Max(l->timestamp_ms, now_ms);
	/* ES: a lease's retaining seq_no never goes backwards */
	if (retaining_seq_no > l->retaining_seq_no)
	{
		l->retaining_seq_no = retaining_seq_no;
		s->version++;
		return true;
	}
	return false;
}

bool
se_lease_remove(SeLeaseSet *s, const char *id)
{
	int			i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->leases[i].id, id) == 0)
		{
			s->leases[i] = s->leases[--s->n];
			s->version++;
			return true;
		}
	return false;
}

int
se_lease_expire(SeLeaseSet *s, const char *const *keep, int nkeep, bool may_return,
				int64 now_ms, int64 period_ms)
{
	int			i = 0;
	int			gone = 0;

	while (i < s->n)
	{
		const SeRetentionLease *l = &s->leases[i];
		bool		kept = false;
		int			k;

		for (k = 0; k < nkeep && !kept; k++)
			kept = strcmp(keep[k], l->id) == 0;
		if (!kept && (!may_return || now_ms - l->timestamp_ms > period_ms))
		{
			s->leases[i] = s->leases[--s->n];
			gone++;
			continue;
		}
		i++;
	}
	s->version += gone;
	return gone;
}

int64
se_lease_min(const SeLeaseSet *s)
{
	int64		m = -1;
	int			i;

	for (i = 0; i < s->n; i++)
		if (m < 0 || s->leases[i].retaining_seq_no < m)
			m = s->leases[i].retaining_seq_no;
	return m;
}

void
se_lease_encode(const SeLeaseSet *s, StringInfo out)
{
	int			i;

	appendStringInfo(out, "{\"primary_term\":" INT64_FORMAT ",\"version\":" INT64_FORMAT
					 ",\"leases\":[", s->primary_term, s->version);
	for (i = 0; i < s->n; i++)
	{
		const SeRetentionLease *l = &s->leases[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"id\":");
		se_json_write_string(out, l->id, strlen(l->id));
		appendStringInfo(out, ",\"retaining_seq_no\":" INT64_FORMAT ",\"timestamp\":" INT64_FORMAT
						 ",\"source\":\"" SE_LEASE_SOURCE "\"}",
						 l->retaining_seq_no, l->timestamp_ms);
	}
	appendStringInfoString(out, "]}");
}

bool
se_lease_decode(const char *json, size_t len, SeLeaseSet *s)
{
	SeJsonParseOptions opts = {0};
	SeError		err;
	SeJson	   *root;
	SeJson	   *arr;
	SeJson	   *term;
	SeJson	   *version;
	int			i;

	memset(s, 0, sizeof(*s));
	se_error_init(&err);
	root = se_json_parse(json, len, &opts, &err);
	arr = root && root->type == SE_JSON_OBJECT ? se_json_get(root, "leases") : NULL;
	if (arr == NULL || arr->type != SE_JSON_ARRAY)
		return false;
	term = se_json_get(root, "primary_term");
	version = se_json_get(root, "version");
	if (term && term->type == SE_JSON_NUMBER)
		s->primary_term = term->u.n.i;
	if (version && version->type == SE_JSON_NUMBER)
		s->version = version->u.n.i;
	for (i = 0; i < arr->u.a.count && s->n < SE_MAX_LEASES; i++)
	{
		SeJson	   *o = arr->u.a.items[i];
		SeJson	   *id = o->type == SE_JSON_OBJECT ? se_json_get(o, "id") : NULL;
		SeJson	   *seq = id ? se_json_get(o, "retaining_seq_no") : NULL;
		SeJson	   *ts = seq ? se_json_get(o, "timestamp") : NULL;
		SeRetentionLease *l;

		if (ts == NULL || id->type != SE_JSON_STRING || seq->type != SE_JSON_NUMBER ||
			ts->type != SE_JSON_NUMBER || id->u.s.len >= SE_LEASE_ID_LEN)
			return false;
		l = &s->leases[s->n++];
		memcpy(l->id, id->u.s.str, id->u.s.len);
		l->id[id->u.s.len] = '\0';
		l->retaining_seq_no = seq->u.n.i;
		l->timestamp_ms = ts->u.n.i;
	}
	return true;
}

bool
se_lease_set_newer(const SeLeaseSet *a, const SeLeaseSet *b)
{
	if (a->primary_term != b->primary_term)
		return a->primary_term > b->primary_term;
	return a->version > b->version;
}
