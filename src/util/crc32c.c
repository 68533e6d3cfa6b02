/*-------------------------------------------------------------------------
 *
 * crc32c.c
 *	  Combining CRC32C values (pure): zlib 1.2.12's crc32_combine method
 *	  for the reflected Castagnoli polynomial.
 *
 * A CRC is the message as a polynomial over GF(2), times x^32, modulo P.
 * Appending len_b bytes multiplies A's part by x^(8 len_b) (mod P); the
 * pre- and post-conditioning (~0) cancel out as in zlib, so the finished
 * values combine directly.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "port/pg_crc32c.h"

#include "util/crc32c.h"

#define CRC32C_POLY		0x82f63b78	/* reflected 0x1edc6f41 */

/* a(x) b(x) modulo P, reflected (bit 31 is x^0) */
static uint32
multmodp(uint32 a, uint32 b)
{
	uint32		m = (uint32) 1 << 31;
	uint32		p = 0;

	for (;;)
	{
		if (a & m)
		{
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1;
	}
	return p;
}

/* x^(n 2^k) modulo P */
static uint32
x2nmodp(uint64 n, unsigned k)
{
	static uint32 x2n[32];
	static bool ready = false;
	uint32		p = (uint32) 1 << 31;	/* x^0 */

	if (!ready)
	{
		int			i;

		/* x2n[i] = x^(2^i) */
		x2n[0] = (uint32) 1 << 30;	/* x^1 */
		for (i = 1; i < 32; i++)
			x2n[i] = multmodp(x2n[i - 1], x2n[i - 1]);
		ready = true;
	}
	while (n)
	{
		if (n & 1)
			p = multmodp(x2n[k & 31], p);
		n >>= 1;
		k++;
	}
	return p;
}

uint32
se_crc32c_combine(uint32 crc_a, uint32 crc_b, uint64 len_b)
{
	/* bytes: x^(8 len_b) = x^(len_b 2^3) */
	return multmodp(x2nmodp(len_b, 3), crc_a) ^ crc_b;
}

uint32
se_crc32c(const void *data, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}
