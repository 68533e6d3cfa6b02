/* SOURCES: src/util/crc32c.c */
/*-------------------------------------------------------------------------
 *
 * test_crc32c.c
 *	  Unit tests for se_crc32c_combine: the combined CRC of any split of a
 *	  buffer equals PostgreSQL's CRC32C of the whole.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdlib.h>
#include <string.h>

#include "util/crc32c.h"
#include "unit_test.h"

int
main(void)
{
	size_t		len = 3 * 1024 * 1024 + 17;
	char	   *buf = malloc(len);
	uint32		whole;
	size_t		cuts[] = {0, 1, 7, 4096, 1024 * 1024, len - 16, len - 1, len};
	size_t		i;
	uint32		acc;
	size_t		off;

	srand(42);
	for (i = 0; i < len; i++)
		buf[i] = (char) (rand() & 0xff);
	whole = se_crc32c(buf, len);

	/* the standard check value of CRC-32C */
	UT_CHECK(se_crc32c("123456789", 9) == 0xe3069283, "%s", "crc");
	UT_CHECK(se_crc32c("", 0) == 0, "%s", "crc");
	UT_CHECK(se_crc32c_combine(se_crc32c("1234", 4), se_crc32c("56789", 5), 5) == 0xe3069283, "%s", "crc");
	/* nothing on either side */
	UT_CHECK(se_crc32c_combine(0, whole, len) == whole, "%s", "crc");
	UT_CHECK(se_crc32c_combine(whole, 0, 0) == whole, "%s", "crc");

	/* every two-way split */
	for (i = 0; i < lengthof(cuts); i++)
		UT_CHECK(se_crc32c_combine(se_crc32c(buf, cuts[i]), se_crc32c(buf + cuts[i], len - cuts[i]),
								len - cuts[i]) == whole, "%s", "crc");

	/* 1 MB pieces folded in order, as a recovery's rows are */
	acc = 0;
	for (off = 0; off < len; off += 1024 * 1024)
	{
		size_t		n = len - off < 1024 * 1024 ? len - off : 1024 * 1024;

		acc = se_crc32c_combine(acc, se_crc32c(buf + off, n), n);
	}
	UT_CHECK(acc == whole, "%s", "crc");

	/* a change anywhere shows */
	buf[len / 2] ^= 1;
	UT_CHECK(se_crc32c_combine(se_crc32c(buf, len / 3), se_crc32c(buf + len / 3, len - len / 3),
							len - len / 3) != whole, "%s", "crc");
	free(buf);
	return ut_finish("test_crc32c");
}
