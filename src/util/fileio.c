/*-------------------------------------------------------------------------
 *
 * fileio.c
 *	  Durable file I/O: atomic replace, plain writes, whole-file reads,
 *	  directory helpers and read-only mmap.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "storage/fd.h"

#include "util/fileio.h"

static void
write_all(int fd, const char *path, const char *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, data, Min(len, (size_t) 64 * 1024 * 1024));

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", path)));
		}
		data += n;
		len -= n;
	}
}

void
se_file_write_plain(const char *path, const char *data, size_t len, bool sync)
{
	int			fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);

	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));

	/*
	 * A failed write (a full disk) leaves neither its descriptor -- the
	 * workers have no transaction whose end would close it -- nor a
	 * partial file.
	 */
	PG_TRY();
	{
		write_all(fd, path, data, len);
		if (sync && pg_fsync(fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", path)));
	}
	PG_CATCH();
	{
		(void) CloseTransientFile(fd);
		(void) unlink(path);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
}

void
se_file_write_durable(const char *path, const char *data, size_t len)
{
	char	   *tmp = psprintf("%s.tmp", path);

	se_file_write_plain(tmp, data, len, true);
	/* durable_rename fsyncs the file and its directory */
	(void) durable_rename(tmp, path, ERROR);
	pfree(tmp);
}

char *
se_file_read_all(const char *path, size_t *len, bool missing_ok)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	struct stat st;
	char	   *buf;
	size_t		done = 0;

	if (fd < 0)
	{
		if (missing_ok && errno == ENOENT)
			return NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	buf = palloc_extended(st.st_size + 1, MCXT_ALLOC_HUGE);
	while (done < (size_t) st.st_size)
	{
		ssize_t		n = read(fd, buf + done, st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path)));
		done += n;
	}
	buf[done] = '\0';
	CloseTransientFile(fd);
	*len = done;
	return buf;
}

/*
 * Create a directory and its missing parents.  pg_mkdir_p stops with
 * EEXIST, before creating the levels below, when another process creates
 * a parent between its stat and its mkdir (the owners of two shards of a
 * new index create both shard directories at once): so try again until
 * the whole path is a directory.  Each try gets at least one level further.
 */
void
se_mkdir_p(const char *path)
{
	int			tries;

	for (tries = 0;; tries++)
	{
		char	   *p = pstrdup(path);	/* pg_mkdir_p truncates it on failure */
		int			rc = pg_mkdir_p(p, pg_dir_create_mode);
		int			save_errno = errno;
		struct stat st;

		pfree(p);
		if (rc == 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
			return;
		if (save_errno != EEXIST || tries >= 16)
		{
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create directory \"%s\": %m", path)));
		}
	}
}

/*
 * fsync a file or directory.  One that cannot be opened (a shard deleted
 * under its owner: ENOENT) is an ERROR, where fsync_fname would PANIC; a
 * failed fsync of an open one is still a PANIC, as PostgreSQL's own
 * (data_sync_retry).
 */
static void
fsync_path(const char *path, bool isdir)
{
	int			fd = OpenTransientFile(path, (isdir ? O_RDONLY : O_RDWR) | PG_BINARY);

	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open \"%s\" to fsync it: %m", path)));
	/* some systems refuse to fsync a directory: nothing to do then */
	if (pg_fsync(fd) != 0 && !(isdir && (errno == EBADF || errno == EINVAL)))
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync \"%s\": %m", path)));
	CloseTransientFile(fd);
}

void
se_fsync_dir(const char *path)
{
	fsync_path(path, true);
}

void
se_fsync_file(const char *path)
{
	fsync_path(path, false);
}

void
se_remove_tree(const char *path)
{
	DIR		   *dir = AllocateDir(path);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = ReadDir(dir, path)) != NULL)
	{
		char	   *child;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		child = psprintf("%s/%s", path, de->d_name);
		if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
			se_remove_tree(child);
		else
			(void) unlink(child);
		pfree(child);
	}
	FreeDir(dir);
	(void) rmdir(path);
}

bool
se_file_map(const char *path, SeMappedFile *mf)
{
	int			fd = open(path, O_RDONLY | PG_BINARY);
	struct stat st;
	void	   *p;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0)
	{
		close(fd);
		return false;
	}
	if (st.st_size == 0)
	{
		close(fd);
		mf->data = (const uint8 *) "";
		mf->len = 0;
		return true;
	}
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	mf->data = p;
	mf->len = st.st_size;
	return true;
}

void
se_file_unmap(SeMappedFile *mf)
{
	if (mf->len > 0)
		munmap((void *) mf->data, mf->len);
	mf->data = NULL;
	mf->len = 0;
}
