/*-------------------------------------------------------------------------
 *
 * node_process.c
 *	  The _nodes/stats sections about the server itself -- process, jvm,
 *	  breakers and os.cpu.percent -- in Elasticsearch's shapes, filled
 *	  with what a PostgreSQL server has.
 *
 * ES describes one JVM process; this node is the postmaster and its
 * children.  So "process" sums them all (open file descriptors, CPU time
 * -- the postmaster's reaped children included --, virtual memory), read
 * from /proc.  "jvm" maps the JVM's figures onto PostgreSQL's own: the
 * heap is the shared buffer pool (used = buffers holding a page), non-heap
 * the rest of the main shared memory, the old-generation collector the
 * checkpointer (checkpoints and their write + sync time), threads the
 * server's processes; PostgreSQL has no young generation, so its pools
 * and collector are 0.  "breakers" has ES's in_flight_requests breaker,
 * which the HTTP workers enforce (search_engine.http_max_in_flight_bytes).
 * CPU percentages are over the time since this process last answered
 * (the exporter scrapes through one long-lived HTTP worker), at the first
 * call since the server (process) or the machine (os) started.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/postmaster.h"
#include "storage/buf_internals.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "http/http.h"
#include "node/node.h"
#include "util/units.h"

typedef struct ProcSample
{
	int			nprocs;
	int64		open_fds;
	int64		cpu_ms;			/* user + system, children reaped included */
	int64		virtual_bytes;
	int64		resident_bytes; /* summed: shared pages count once per process */
} ProcSample;

/* utime, stime, cutime, cstime, ppid, vsize, rss of /proc/<pid>/stat */
static bool
read_stat(const char *pid, int *ppid, int64 *ticks, int64 *child_ticks, int64 *vsize,
		  int64 *rss)
{
	char		path[64];
	char		buf[1024];
	FILE	   *f;
	char	   *p;
	size_t		n;
	unsigned long ut,
				st,
				vs;
	long		cut,
				cst,
				rs;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces: fields start after its ')' */
	if ((p = strrchr(buf, ')')) == NULL ||
		sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld %*d %*d %*d %*d %*u %lu %ld",
			   ppid, &ut, &st, &cut, &cst, &vs, &rs) != 7)
		return false;
	*ticks = (int64) ut + st;
	*child_ticks = (int64) cut + cst;
	*vsize = (int64) vs;
	*rss = (int64) rs * sysconf(_SC_PAGESIZE);
	return true;
}

static int64
count_fds(const char *pid)
{
	char		path[64];
	DIR		   *d;
	struct dirent *de;
	int64		n = 0;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The postmaster and its children, summed. */
static void
sample_server(ProcSample *s)
{
	DIR		   *d;
	struct dirent *de;
	long		hz = sysconf(_SC_CLK_TCK);

	memset(s, 0, sizeof(*s));
	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		int			ppid;
		int64		ticks,
					child,
					vsize,
					rss;
		int			pid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid = atoi(de->d_name);
		if (!read_stat(de->d_name, &ppid, &ticks, &child, &vsize, &rss) ||
			(pid != PostmasterPid && ppid != PostmasterPid))
			continue;
		s->nprocs++;
		s->open_fds += count_fds(de->d_name);
		s->virtual_bytes += vsize;
		s->resident_bytes += rss;
		/* children that exited count in the postmaster's cutime/cstime */
		s->cpu_ms += (ticks + (pid == PostmasterPid ? child : 0)) * 1000 / Max(hz, 1);
	}
	closedir(d);
}

static int64
now_ms(void)
{
	return (int64) (GetCurrentTimestamp() / 1000);
}

/* "process": the server's processes as ES's one process */
void
se_node_process_json(StringInfo out)
{
	static int64 last_cpu = -1;
	static int64 last_at = 0;
	ProcSample	s;
	struct rlimit rl;
	/* both in ms since PostgreSQL's epoch */
	int64		at = now_ms();
	int64		since = last_cpu < 0 ? (int64) (PgStartTime / 1000) : last_at;
	int64		used;
	long		ncpu = Max(sysconf(_SC_NPROCESSORS_ONLN), 1);
	int			percent;

	sample_server(&s);
	used = s.cpu_ms - Max(last_cpu, 0);
	percent = at > since ? (int) Min(100, Max(0, used * 100 / ((at - since) * ncpu))) : 0;
	last_cpu = s.cpu_ms;
	last_at = at;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = 0;
	appendStringInfo(out, "{\"timestamp\":" INT64_FORMAT ",\"open_file_descriptors\":" INT64_FORMAT
					 ",\"max_file_descriptors\":" INT64_FORMAT
					 ",\"cpu\":{\"percent\":%d,\"total_in_millis\":" INT64_FORMAT "}"
					 ",\"mem\":{\"resident_in_bytes\":" INT64_FORMAT
					 ",\"total_virtual_in_bytes\":" INT64_FORMAT "}}",
					 se_now_millis(), s.open_fds, (int64) rl.rlim_cur, percent, s.cpu_ms,
					 s.resident_bytes, s.virtual_bytes);
}

/* os.cpu.percent: the machine's busy share since the last call (/proc/stat) */
int
se_os_cpu_percent(void)
{
	static int64 last_busy = 0,
				last_total = 0;
	FILE	   *f = fopen("/proc/stat", "r");
	unsigned long long v[8] = {0};
	int64		busy,
				total;
	int			percent;

	if (f == NULL)
		return -1;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
	{
		fclose(f);
		return -1;
	}
	fclose(f);
	total = (int64) (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
	busy = total - (int64) (v[3] + v[4]);	/* idle and iowait are not busy */
	percent = total > last_total ?
		(int) ((busy - last_busy) * 100 / (total - last_total)) : 0;
	last_busy = busy;
	last_total = total;
	return percent;
}

/* "jvm": PostgreSQL's memory and checkpointer in the JVM's places */
void
se_node_jvm_json(StringInfo out)
{
	int64		heap = (int64) NBuffers * BLCKSZ;
	int64		used = 0;
	const char *shm = GetConfigOption("shared_memory_size", true, false);
	int64		shared = shm ? (int64) atol(shm) * 1024 * 1024 : heap;
	int64		non_heap = Max(shared - heap, 0);
	PgStat_CheckpointerStats *cp = pgstat_fetch_stat_checkpointer();
	ProcSample	s;
	int			i;

	for (i = 0; i < NBuffers; i++)
		if (pg_atomic_read_u32(&GetBufferDescriptor(i)->state) & BM_VALID)
			used += BLCKSZ;
	sample_server(&s);
	appendStringInfo(out, "{\"timestamp\":" INT64_FORMAT ",\"uptime_in_millis\":" INT64_FORMAT
					 ",\"mem\":{\"heap_used_in_bytes\":" INT64_FORMAT ",\"heap_used_percent\":%d"
					 ",\"heap_committed_in_bytes\":" INT64_FORMAT ",\"heap_max_in_bytes\":" INT64_FORMAT
					 ",\"non_heap_used_in_bytes\":" INT64_FORMAT ",\"non_heap_committed_in_bytes\":" INT64_FORMAT
					 ",\"pools\":{\"young\":{\"used_in_bytes\":0,\"max_in_bytes\":0,\"peak_used_in_bytes\":0,\"peak_max_in_bytes\":0}"
					 ",\"survivor\":{\"used_in_bytes\":0,\"max_in_bytes\":0,\"peak_used_in_bytes\":0,\"peak_max_in_bytes\":0}"
					 ",\"old\":{\"used_in_bytes\":" INT64_FORMAT ",\"max_in_bytes\":" INT64_FORMAT
					 ",\"peak_used_in_bytes\":" INT64_FORMAT ",\"peak_max_in_bytes\":" INT64_FORMAT "}}}"
					 ",\"threads\":{\"count\":%d,\"peak_count\":%d}"
					 ",\"gc\":{\"collectors\":{\"young\":{\"collection_count\":0,\"collection_time_in_millis\":0}"
					 ",\"old\":{\"collection_count\":" INT64_FORMAT ",\"collection_time_in_millis\":" INT64_FORMAT "}}}}",
					 se_now_millis(),
					 (int64) (TimestampDifferenceMilliseconds(PgStartTime, GetCurrentTimestamp())),
					 used, heap > 0 ? (int) (used * 100 / heap) : 0, heap, heap, non_heap, non_heap,
					 used, heap, used, heap, s.nprocs, s.nprocs,
					 (int64) (cp->timed_checkpoints + cp->requested_checkpoints),
					 (int64) (cp->checkpoint_write_time + cp->checkpoint_sync_time));
}

/* "breakers": ES's in_flight_requests, as the HTTP workers hold bodies */
void
se_node_breakers_json(StringInfo out)
{
	int64		limit = (int64) se_http_max_in_flight_bytes * 1024 * Max(se_http_workers, 1);
	int64		held = (int64) pg_atomic_read_u64(&SeShmem->http_held_bytes);
	StringInfoData l,
				e;

	initStringInfo(&l);
	initStringInfo(&e);
	se_format_byte_size(limit, &l);
	se_format_byte_size(held, &e);
	appendStringInfo(out, "{\"in_flight_requests\":{\"limit_size_in_bytes\":" INT64_FORMAT
					 ",\"limit_size\":\"%s\",\"estimated_size_in_bytes\":" INT64_FORMAT
					 ",\"estimated_size\":\"%s\",\"overhead\":1.0,\"tripped\":" UINT64_FORMAT "}}",
					 limit, l.data, held, e.data,
					 pg_atomic_read_u64(&SeShmem->http_breaker_trips));
}
