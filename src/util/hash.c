/*-------------------------------------------------------------------------
 *
 * hash.c
 *	  MurmurHash3_x86_32 and Elasticsearch-compatible document routing.
 *
 * Routing must agree bit for bit with Elasticsearch so that an index's
 * documents land on the same shards as they would there: the routing value
 * is hashed as Java hashes a String (its UTF-16 code units, two bytes each,
 * little-endian, murmur3 with seed 0), and the shard is
 * floorMod(hash, routing_num_shards) / routing_factor.
 *
 * The UTF-16 conversion is streamed straight into the murmur3 block mixing,
 * so routing never allocates.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "util/hash.h"

#define MURMUR_C1	0xcc9e2d51U
#define MURMUR_C2	0x1b873593U

static inline uint32
rotl32(uint32 x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* Mix one 4-byte block into the running hash. */
static inline uint32
murmur_block(uint32 h, uint32 k)
{
	k *= MURMUR_C1;
	k = rotl32(k, 15);
	k *= MURMUR_C2;
	h ^= k;
	h = rotl32(h, 13);
	return h * 5 + 0xe6546b64U;
}

/* Mix the 1..3 trailing bytes (already assembled little-endian) into h. */
static inline uint32
murmur_tail(uint32 h, uint32 k)
{
	k *= MURMUR_C1;
	k = rotl32(k, 15);
	k *= MURMUR_C2;
	return h ^ k;
}

static inline uint32
murmur_fmix(uint32 h, uint32 len)
{
	h ^= len;
	h ^= h >> 16;
	h *= 0x85ebca6bU;
	h ^= h >> 13;
	h *= 0xc2b2ae35U;
	h ^= h >> 16;
	return h;
}

/* MurmurHash3_x86_32; blocks are read little-endian whatever the host is. */
uint32
se_murmur3_32(const void *data, size_t len, uint32 seed)
{
	const uint8 *p = (const uint8 *) data;
	size_t		nblocks = len / 4;
	size_t		i;
	uint32		h = seed;
	uint32		k = 0;

	for (i = 0; i < nblocks; i++, p += 4)
		h = murmur_block(h, (uint32) p[0] | ((uint32) p[1] << 8) |
						 ((uint32) p[2] << 16) | ((uint32) p[3] << 24));

	switch (len & 3)
	{
		case 3:
			k ^= (uint32) p[2] << 16;
			/* FALLTHROUGH */
		case 2:
			k ^= (uint32) p[1] << 8;
			/* FALLTHROUGH */
		case 1:
			k ^= (uint32) p[0];
			h = murmur_tail(h, k);
	}

	/* the reference takes an int length; longer inputs wrap the same way */
	return murmur_fmix(h, (uint32) len);
}

/*
 * Decode one code point from s[0..avail) (avail >= 1).  Returns the number
 * of bytes consumed; malformed input yields U+FFFD for each maximal ill-formed
 * subpart, which is what Java's UTF-8 decoder produces for such bytes.
 */
static int
decode_utf8(const uint8 *s, size_t avail, uint32 *cp)
{
	uint8		c = s[0];
	int			need;
	uint8		lo = 0x80,
				hi = 0xBF;
	uint32		v;
	int			i;

	if (c < 0x80)
	{
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
	{
		need = 1;
		v = c & 0x1F;
	}
	else if (c >= 0xE0 && c <= 0xEF)
	{
		need = 2;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;			/* overlong */
		else if (c == 0xED)
			hi = 0x9F;			/* surrogates */
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		need = 3;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;			/* overlong */
		else if (c == 0xF4)
			hi = 0x8F;			/* above U+10FFFF */
	}
	else
	{
		*cp = 0xFFFD;
		return 1;
	}

	for (i = 1; i <= need; i++)
	{
		uint8		b;

		if ((size_t) i >= avail)
		{
			*cp = 0xFFFD;
			return i;
		}
		b = s[i];
		if (b < lo || b > hi)
		{
			*cp = 0xFFFD;
			return i;
		}
		lo = 0x80;
		hi = 0xBF;
		v = (v << 6) | (b & 0x3F);
	}
	*cp = v;
	return need + 1;
}

/*
 * Murmur3 of the string's UTF-16LE form, fed one code unit at a time: two
 * consecutive units make one 4-byte block, an odd last unit is the 2-byte tail.
 */
int32
se_routing_hash(const char *utf8, int len)
{
	const uint8 *s = (const uint8 *) utf8;
	size_t		pos = 0;
	size_t		n = (len > 0 && utf8 != NULL) ? (size_t) len : 0;
	uint32		h = 0;
	uint32		units = 0;
	uint32		pending = 0;
	bool		have_pending = false;

	while (pos < n)
	{
		uint32		cp;
		uint32		u[2];
		int			nu;
		int			j;

		pos += decode_utf8(s + pos, n - pos, &cp);
		if (cp >= 0x10000)
		{
			cp -= 0x10000;
			u[0] = 0xD800 + (cp >> 10);
			u[1] = 0xDC00 + (cp & 0x3FF);
			nu = 2;
		}
		else
		{
			u[0] = cp;
			nu = 1;
		}
		for (j = 0; j < nu; j++)
		{
			units++;
			if (have_pending)
			{
				h = murmur_block(h, pending | (u[j] << 16));
				have_pending = false;
			}
			else
			{
				pending = u[j];
				have_pending = true;
			}
		}
	}
	if (have_pending)
		h = murmur_tail(h, pending);

	return (int32) murmur_fmix(h, units * 2);
}

/*
 * numShards * 2^max(1, 10 - ceil(log2(numShards))), as
 * MetadataCreateIndexService.calculateNumRoutingShards for 7.0+ indices:
 * lets an index be split up to ~1024 shards.  Values below 1 are treated
 * as 1; the result is capped at INT_MAX rather than overflowing.
 */
int
se_routing_num_shards(int num_shards)
{
	int			log2_shards = 0;
	int			splits;
	int64		result;

	if (num_shards < 1)
		num_shards = 1;
	while (log2_shards < 31 && ((int64) 1 << log2_shards) < num_shards)
		log2_shards++;
	splits = 10 - log2_shards;
	if (splits < 1)
		splits = 1;
	result = (int64) num_shards << splits;
	return result > PG_INT32_MAX ? PG_INT32_MAX : (int) result;
}

/* Java's Math.floorMod for a positive divisor. */
static inline int
floor_mod(int32 x, int m)
{
	int			r = (int) (x % m);

	return r < 0 ? r + m : r;
}

/*
 * floorMod(hash, routing_num_shards) / routing_factor.  Settings ES would
 * refuse (routing shards not a multiple of shards) are handled by clamping,
 * so the result is always a valid shard id in [0, num_shards).
 */
static int
hash_to_shard(int32 hash, int num_shards, int routing_num_shards)
{
	int			factor;
	int			shard;

	if (num_shards < 1)
		return 0;
	if (routing_num_shards < 1)
		routing_num_shards = se_routing_num_shards(num_shards);
	if (routing_num_shards < num_shards)
		routing_num_shards = num_shards;
	factor = routing_num_shards / num_shards;
	shard = floor_mod(hash, routing_num_shards) / factor;
	return shard >= num_shards ? num_shards - 1 : shard;
}

int
se_routing_shard(const char *routing, int len, int num_shards,
				 int routing_num_shards)
{
	return hash_to_shard(se_routing_hash(routing, len), num_shards,
						 routing_num_shards);
}

/*
 * Java adds the offset with int overflow wrapping, so do the addition in
 * unsigned arithmetic.
 */
int
se_routing_shard_partitioned(const char *id, int idlen,
							 const char *routing, int routinglen,
							 int num_shards, int routing_num_shards,
							 int partition_size)
{
	int32		hash = se_routing_hash(routing, routinglen);
	int			offset;

	if (partition_size < 1)
		partition_size = 1;
	offset = floor_mod(se_routing_hash(id, idlen), partition_size);
	hash = (int32) ((uint32) hash + (uint32) offset);
	return hash_to_shard(hash, num_shards, routing_num_shards);
}
