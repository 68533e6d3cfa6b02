/*-------------------------------------------------------------------------
 *
 * fileio.h
 *	  Durable file I/O for the server side (not pure: uses fd.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_FILEIO_H
#define SE_FILEIO_H

#include "postgres.h"

/* Write data to path atomically: temp file, fsync, rename, fsync dir. */
extern void se_file_write_durable(const char *path, const char *data, size_t len);
/* Write data to path without fsync (refresh-time segments). */
extern void se_file_write_plain(const char *path, const char *data, size_t len, bool sync);
/* Read a whole file; returns NULL if it does not exist (missing_ok). */
extern char *se_file_read_all(const char *path, size_t *len, bool missing_ok);
/* mkdir -p; ERROR on failure. */
extern void se_mkdir_p(const char *path);
/* rm -rf of a directory tree we own. */
extern void se_remove_tree(const char *path);
/* fsync; a missing path is an ERROR, not fsync_fname's PANIC */
extern void se_fsync_dir(const char *path);
extern void se_fsync_file(const char *path);

/* A read-only mapping of a whole file. */
typedef struct SeMappedFile
{
	const uint8 *data;
	size_t		len;
} SeMappedFile;
extern bool se_file_map(const char *path, SeMappedFile *mf);
extern void se_file_unmap(SeMappedFile *mf);

#endif
