/*-------------------------------------------------------------------------
 *
 * crc32c.h
 *	  CRC32C of a buffer, and combining CRC32C values (pure).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CRC32C_H
#define SE_CRC32C_H

#include "util/se_common.h"

/*
 * The CRC32C (PostgreSQL's pg_crc32c, finished) of A followed by B, from
 * the CRC32C of A, that of B and B's length -- zlib's crc32_combine for
 * the Castagnoli polynomial.  What lets pieces of one file be checked as
 * they arrive, in any order, and the whole file's checksum be had without
 * reading its bytes a second time.  The CRC32C of nothing is 0, so
 * combining from 0 yields the second CRC.
 */
/* the CRC32C of data[0..len), finished (pg_crc32c's INIT, COMP, FIN) */
extern uint32 se_crc32c(const void *data, size_t len);

extern uint32 se_crc32c_combine(uint32 crc_a, uint32 crc_b, uint64 len_b);

#endif							/* SE_CRC32C_H */
