/*-------------------------------------------------------------------------
 *
 * http_stats.c
 *	  The HTTP server's figures for _nodes/stats: ES's http section
 *	  (current_open, total_opened, clients), all workers together.
 *
 * The workers write into one table in shared memory: the two counters,
 * and a slot per tracked client connection with what ES's HttpStats
 * reports of it (addresses, agent, last URI, request count and bytes,
 * times).  A slot is taken when a connection opens and kept after it
 * closes, so a closed client is still listed for a while as ES lists it
 * (http.client_stats.closed_channels.max_age, 5 minutes): a new
 * connection takes a free slot, else the one closed longest ago, else
 * none -- it is then counted but not listed (CLIENT_SLOTS open at once on
 * a node is beyond what the listing is for).  One spinlock guards the
 * table; a worker holds it only to copy a few fields, never across a
 * request.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "http/http.h"
#include "util/json.h"

#define CLIENT_SLOTS 256
/* search_engine.http_workers' maximum */
#define MAX_WORKERS 64
/* ES's http.client_stats.closed_channels.max_age */
#define CLOSED_MAX_AGE_MS (5 * 60 * 1000)

typedef struct ClientSlot
{
	int64		id;				/* 0: free */
	int			worker;			/* the worker serving it */
	int64		opened_ms;
	int64		closed_ms;		/* 0: open */
	int64		last_request_ms;
	int64		request_count;
	int64		request_size_bytes;
	char		local_address[64];
	char		remote_address[80];
	char		agent[128];
	char		opaque_id[64];
	char		last_uri[256];
} ClientSlot;

typedef struct HttpStatsTable
{
	slock_t		mutex;
	int64		current_open[MAX_WORKERS];	/* per worker: a restarted one
											 * starts from 0 */
	int64		total_opened;
	ClientSlot	slots[CLIENT_SLOTS];
} HttpStatsTable;

static HttpStatsTable *stats;

Size
se_http_stats_shmem_size(void)
{
	return MAXALIGN(sizeof(HttpStatsTable));
}

void
se_http_stats_shmem_init(void)
{
	bool		found;

	stats = ShmemInitStruct("search_engine http stats", se_http_stats_shmem_size(), &found);
	if (!found)
	{
		memset(stats, 0, se_http_stats_shmem_size());
		SpinLockInit(&stats->mutex);
	}
}

/*
 * Worker worker starts: the connections an earlier incarnation of it left
 * open (it died with them) are closed.
 */
void
se_http_stats_worker_start(int worker)
{
	int64		t = se_now_millis();
	int			i;

	worker = Min(worker, MAX_WORKERS - 1);
	SpinLockAcquire(&stats->mutex);
	stats->current_open[worker] = 0;
	for (i = 0; i < CLIENT_SLOTS; i++)
		if (stats->slots[i].id != 0 && stats->slots[i].worker == worker &&
			stats->slots[i].closed_ms == 0)
			stats->slots[i].closed_ms = t;
	SpinLockRelease(&stats->mutex);
}

/*
 * A connection opened on worker: counted, and given a slot (its index, or
 * -1 when none is free).  Its id in ES's listing is its number among the
 * connections the node opened.
 */
int
se_http_stats_open(int worker, const char *local_address, const char *remote_address)
{
	int64		t = se_now_millis();
	int			pick = -1;
	int			i;

	worker = Min(worker, MAX_WORKERS - 1);
	SpinLockAcquire(&stats->mutex);
	stats->current_open[worker]++;
	stats->total_opened++;
	for (i = 0; i < CLIENT_SLOTS; i++)
	{
		ClientSlot *s = &stats->slots[i];

		if (s->id == 0)
		{
			pick = i;
			break;
		}
		if (s->closed_ms != 0 &&
			(pick < 0 || s->closed_ms < stats->slots[pick].closed_ms))
			pick = i;
	}
	if (pick >= 0)
	{
		ClientSlot *s = &stats->slots[pick];

		memset(s, 0, sizeof(ClientSlot));
		s->id = stats->total_opened;
		s->worker = worker;
		s->opened_ms = t;
		strlcpy(s->local_address, local_address, sizeof(s->local_address));
		strlcpy(s->remote_address, remote_address, sizeof(s->remote_address));
	}
	SpinLockRelease(&stats->mutex);
	return pick;
}

/*
 * A request's headers arrived on slot's connection (-1: untracked): its
 * URI, the client's agent and X-Opaque-Id, the time.
 */
void
se_http_stats_request(int slot, const char *uri, const char *agent, const char *opaque_id)
{
	ClientSlot *s;
	int64		t;

	if (slot < 0)
		return;
	s = &stats->slots[slot];
	t = se_now_millis();
	SpinLockAcquire(&stats->mutex);
	s->last_request_ms = t;
	s->request_count++;
	strlcpy(s->last_uri, uri ? uri : "", sizeof(s->last_uri));
	if (agent)
		strlcpy(s->agent, agent, sizeof(s->agent));
	if (opaque_id)
		strlcpy(s->opaque_id, opaque_id, sizeof(s->opaque_id));
	SpinLockRelease(&stats->mutex);
}

/* A request of slot's connection ended; body_bytes came (as sent). */
void
se_http_stats_request_bytes(int slot, size_t body_bytes)
{
	if (slot < 0 || body_bytes == 0)
		return;
	SpinLockAcquire(&stats->mutex);
	stats->slots[slot].request_size_bytes += body_bytes;
	SpinLockRelease(&stats->mutex);
}

/* A connection of worker closed; slot is its slot (-1: untracked). */
void
se_http_stats_close(int worker, int slot)
{
	int64		t = se_now_millis();

	worker = Min(worker, MAX_WORKERS - 1);
	SpinLockAcquire(&stats->mutex);
	if (stats->current_open[worker] > 0)
		stats->current_open[worker]--;
	if (slot >= 0)
		stats->slots[slot].closed_ms = t;
	SpinLockRelease(&stats->mutex);
}

/*
 * ES's http section: {"current_open", "total_opened", "clients": [...]},
 * a client's fields as ES's HttpStats.ClientStats writes them (agent,
 * x_opaque_id and closed_time_millis only when known).
 */
void
se_http_stats_json(StringInfo out)
{
	HttpStatsTable *copy = palloc(sizeof(HttpStatsTable));
	int64		t = se_now_millis();
	int64		open = 0;
	bool		first = true;
	int			i;

	SpinLockAcquire(&stats->mutex);
	memcpy(copy, stats, sizeof(HttpStatsTable));
	SpinLockRelease(&stats->mutex);
	for (i = 0; i < MAX_WORKERS; i++)
		open += copy->current_open[i];
	appendStringInfo(out, "{\"current_open\":" INT64_FORMAT ",\"total_opened\":" INT64_FORMAT
					 ",\"clients\":[", open, copy->total_opened);
	for (i = 0; i < CLIENT_SLOTS; i++)
	{
		ClientSlot *s = &copy->slots[i];

		if (s->id == 0 || (s->closed_ms != 0 && t - s->closed_ms > CLOSED_MAX_AGE_MS))
			continue;
		appendStringInfo(out, "%s{\"id\":" INT64_FORMAT, first ? "" : ",", s->id);
		first = false;
		if (s->agent[0])
		{
			appendStringInfoString(out, ",\"agent\":");
			se_json_write_string(out, s->agent, -1);
		}
		appendStringInfoString(out, ",\"local_address\":");
		se_json_write_string(out, s->local_address, -1);
		appendStringInfoString(out, ",\"remote_address\":");
		se_json_write_string(out, s->remote_address, -1);
		if (s->last_uri[0])
		{
			appendStringInfoString(out, ",\"last_uri\":");
			se_json_write_string(out, s->last_uri, -1);
		}
		if (s->opaque_id[0])
		{
			appendStringInfoString(out, ",\"x_opaque_id\":");
			se_json_write_string(out, s->opaque_id, -1);
		}
		appendStringInfo(out, ",\"opened_time_millis\":" INT64_FORMAT, s->opened_ms);
		if (s->closed_ms)
			appendStringInfo(out, ",\"closed_time_millis\":" INT64_FORMAT, s->closed_ms);
		if (s->last_request_ms)
			appendStringInfo(out, ",\"last_request_time_millis\":" INT64_FORMAT,
							 s->last_request_ms);
		appendStringInfo(out, ",\"request_count\":" INT64_FORMAT ",\"request_size_bytes\":"
						 INT64_FORMAT "}", s->request_count, s->request_size_bytes);
	}
	appendStringInfoString(out, "]}");
	pfree(copy);
}
