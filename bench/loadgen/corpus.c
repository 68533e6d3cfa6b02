/*-------------------------------------------------------------------------
 *
 * corpus.c
 *	  The NDJSON corpus, mapped read-only and handed out in batches.
 *
 * The corpus is Elasticsearch bulk format where every item is two lines,
 * an action line (index or create) and a source line.  The file is
 * mmap'ed, so a batch is a pointer into it plus the item boundaries: the
 * first attempt of a bulk sends those bytes as they are (a binary text
 * parameter needs no terminating NUL), and a client-side retry copies only
 * the rejected items.  Clients take batches from one cursor under a mutex,
 * so each document is sent by exactly one client.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loadgen.h"

static pthread_mutex_t corpus_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Map path and count its items (line pairs). */
void
lg_corpus_open(LgCorpus *c, const char *path)
{
	int			fd = open(path, O_RDONLY);
	struct stat st;
	const char *p,
			   *end;
	long		lines = 0;

	memset(c, 0, sizeof(*c));
	c->path = path;
	if (fd < 0 || fstat(fd, &st) != 0)
		lg_die("cannot open corpus %s: %s", path, strerror(errno));
	if (st.st_size == 0)
		lg_die("corpus %s is empty", path);
	c->size = (size_t) st.st_size;
	c->data = mmap(NULL, c->size, PROT_READ, MAP_SHARED, fd, 0);
	if (c->data == MAP_FAILED)
		lg_die("cannot map corpus %s: %s", path, strerror(errno));
	close(fd);
	(void) madvise((void *) c->data, c->size, MADV_SEQUENTIAL);
	p = c->data;
	end = c->data + c->size;
	while (p < end)
	{
		const char *nl = memchr(p, '\n', end - p);

		if (nl == NULL)
		{
			lines++;
			break;
		}
		if (nl > p)				/* blank lines do not count */
			lines++;
		p = nl + 1;
	}
	if (lines % 2 != 0)
		lg_die("corpus %s has an odd number of lines (%ld): every item must be an action line and a source line",
			   path, lines);
	c->ndocs = lines / 2;
	c->limit = c->ndocs;
}

void
lg_corpus_close(LgCorpus *c)
{
	if (c->data)
		munmap((void *) c->data, c->size);
	c->data = NULL;
}

/* The end of the line starting at p (one past its newline, or the end). */
static size_t
line_end(const LgCorpus *c, size_t p)
{
	const char *nl = memchr(c->data + p, '\n', c->size - p);

	return nl ? (size_t) (nl - c->data) + 1 : c->size;
}

/*
 * Hand out the next batch of up to `batch` items; false when the corpus
 * (or the limit) is exhausted.  out->start must hold batch + 1 entries.
 */
bool
lg_corpus_next(LgCorpus *c, int batch, LgBatch *out)
{
	size_t		p;
	size_t		first;
	int			n = 0;

	pthread_mutex_lock(&corpus_mutex);
	if (c->handed >= c->limit)
	{
		pthread_mutex_unlock(&corpus_mutex);
		return false;
	}
	if (batch > c->limit - c->handed)
		batch = (int) (c->limit - c->handed);
	p = c->pos;
	if (p >= c->size && c->wrap)
		p = 0;
	while (p < c->size && c->data[p] == '\n')
		p++;
	first = p;
	out->first_doc = c->handed;
	while (n < batch)
	{
		size_t		e;

		if (p >= c->size)
		{
			if (!c->wrap || n > 0)
				break;
			p = first = 0;
		}
		out->start[n] = p - first;
		e = line_end(c, p);		/* action */
		e = line_end(c, e);		/* source */
		p = e;
		while (p < c->size && c->data[p] == '\n')
			p++;
		n++;
	}
	c->pos = p;
	c->handed += n;
	pthread_mutex_unlock(&corpus_mutex);
	if (n == 0)
		return false;
	out->base = c->data + first;
	out->n = n;
	/* the last item ends where the next would start; strip blank lines */
	{
		size_t		e = p - first;

		while (e > out->start[n - 1] && out->base[e - 1] == '\n' &&
			   e >= 2 && out->base[e - 2] == '\n')
			e--;
		out->start[n] = e;
		out->len = e;
	}
	return true;
}
