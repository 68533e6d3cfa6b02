/* SOURCES: src/util/hash.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_hash.c
 *	  Unit tests for murmur3 and Elasticsearch document routing.
 *
 * The expected values are Elasticsearch's own test vectors
 * (Murmur3HashFunctionTests, MetadataCreateIndexServiceTests
 * .testCalculateNumRoutingShards, IndexRoutingTests.testBWC /
 * testPartitionedIndexBWC / testPartitionedIndexShrunk), so a pass means
 * documents route to the same shards as in Elasticsearch.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "util/hash.h"
#include "unit_test.h"

typedef struct
{
	const char *s;
	uint32		hash;
} StrHash;

typedef struct
{
	const char *s;
	int			shard;
} StrShard;

/* Murmur3HashFunctionTests (Elasticsearch 8) */
static const StrHash es_hash_vectors[] = {
	{"", 0x00000000},
	{"h", 0x3fb8ba02},
	{"he", 0xce30a49f},
	{"hel", 0x0c7cee6b},
	{"hell", 0x5a0cb7c3},
	{"hello", 0xd7c31989},
	{"hello w", 0x22ab2984},
	{"hello wo", 0xdf0ca123},
	{"hello wor", 0xe7744d61},
	{"hello worl", 0x51837ec6},
	{"hello world", 0x64b256a4},
	{"hello world!", 0xda1575e5},
	/* "Γειά σου Κόσμε" */
	{"\xce\x93\xce\xb5\xce\xb9\xce\xac \xcf\x83\xce\xbf\xcf\x85 "
	"\xce\x9a\xcf\x8c\xcf\x83\xce\xbc\xce\xb5", 0x8ded82be},
	/* "Supplementary planes too 🙂" (U+1F642, a surrogate pair) */
	{"Supplementary planes too \xf0\x9f\x99\x82", 0x8274606c},
	{"The quick brown fox jumps over the lazy dog", 0xe07db09c},
	{"The quick brown fox jumps over the lazy cog", 0x4e63d2ad},
};

/* IndexRoutingTests.testBWC: 8 shards, routing_num_shards 8 */
static const StrShard es_bwc_vectors[] = {
	{"sEERfFzPSI", 1}, {"cNRiIrjzYd", 7}, {"BgfLBXUyWT", 5},
	{"cnepjZhQnb", 3}, {"OKCmuYkeCK", 6}, {"OutXGRQUja", 5},
	{"yCdyocKWou", 1}, {"KXuNWWNgVj", 2}, {"DGJOYrpESx", 4},
	{"upLDybdTGs", 5}, {"yhZhzCPQby", 1}, {"EyCVeiCouA", 1},
	{"tFyVdQauWR", 6}, {"nyeRYDnDQr", 6}, {"hswhrppvDH", 0},
	{"BSiWvDOsNE", 5}, {"YHicpFBSaY", 1}, {"EquPtdKaBZ", 4},
	{"rSjLZHCDfT", 5}, {"qoZALVcite", 7}, {"yDCCPVBiCm", 7},
	{"ngizYtQgGK", 5}, {"FYQRIBcNqz", 0}, {"EBzEDAPODe", 2},
	{"YePigbXgKb", 1}, {"PeGJjomyik", 3}, {"cyQIvDmyYD", 7},
	{"yIEfZrYfRk", 5}, {"kblouyFUbu", 7}, {"xvIGbRiGJF", 3},
	{"KWimwsREPf", 4}, {"wsNavvIcdk", 7}, {"xkWaPcCmpT", 0},
	{"FKKTOnJMDy", 7}, {"RuLzobYixn", 2}, {"mFohLeFRvF", 4},
	{"aAMXnamRJg", 7}, {"zKBMYJDmBI", 0}, {"ElSVuJQQuw", 7},
	{"pezPtTQAAm", 7}, {"zBjjNEjAex", 2}, {"PGgHcLNPYX", 7},
	{"hOkpeQqTDF", 3}, {"chZXraUPBH", 7}, {"FAIcSmmNXq", 5},
	{"EZmDicyayC", 0}, {"GRIueBeIyL", 7}, {"qCChjGZYLp", 3},
	{"IsSZQwwnUT", 3}, {"MGlxLFyyCK", 3}, {"YmscwrKSpB", 0},
	{"czSljcjMop", 5}, {"XhfGWwNlng", 1}, {"cWpKJjlzgj", 7},
	{"eDzIfMKbvk", 1}, {"WFFWYBfnTb", 0}, {"oDdHJxGxja", 7},
	{"PDOQQqgIKE", 1}, {"bGEIEBLATe", 6}, {"xpRkJPWVpu", 2},
	{"kTwZnPEeIi", 2}, {"DifcuqSsKk", 1}, {"CEmLmljpXe", 5},
	{"cuNKtLtyJQ", 7}, {"yNjiAnxAmt", 5}, {"bVDJDCeaFm", 2},
	{"vdnUhGLFtl", 0}, {"LnqSYezXbr", 5}, {"EzHgydDCSR", 3},
	{"ZSKjhJlcpn", 1}, {"WRjUoZwtUz", 3}, {"RiBbcCdIgk", 4},
	{"yizTqyjuDn", 4}, {"QnFjcpcZUT", 4}, {"agYhXYUUpl", 7},
	{"UOjiTugjNC", 7}, {"nICGuWTdfV", 0}, {"NrnSmcnUVF", 2},
	{"ZSzFcbpDqP", 3}, {"YOhahLSzzE", 5}, {"iWswCilUaT", 1},
	{"zXAamKsRwj", 2}, {"aqGsrUPHFq", 5}, {"eDItImYWTS", 1},
	{"JAYDZMRcpW", 4}, {"lmvAaEPflK", 7}, {"IKuOwPjKCx", 5},
	{"schsINzlYB", 1}, {"OqbFNxrKrF", 2}, {"QrklDfvEJU", 6},
	{"VLxKRKdLbx", 4}, {"imoydNTZhV", 1}, {"uFZyTyOMRO", 4},
	{"nVAZVMPNNx", 3}, {"rPIdESYaAO", 5}, {"nbZWPWJsIM", 0},
	{"wRZXPSoEgd", 3}, {"nGzpgwsSBc", 4}, {"AITyyoyLLs", 4},
};

static void
test_murmur3_reference(void)
{
	/* MurmurHash3_x86_32 reference values (SMHasher verification set) */
	UT_CHECK(se_murmur3_32("", 0, 0) == 0, "empty seed 0");
	UT_CHECK(se_murmur3_32("", 0, 1) == 0x514E28B7U, "empty seed 1");
	UT_CHECK(se_murmur3_32("", 0, 0xffffffffU) == 0x81F16F39U, "empty seed ~0");
	UT_CHECK(se_murmur3_32("\0\0\0\0", 4, 0) == 0x2362F9DEU, "four zeros");
	UT_CHECK(se_murmur3_32("aaaa", 4, 0x9747b28cU) == 0x5A97808AU, "aaaa");
	UT_CHECK(se_murmur3_32("aaa", 3, 0x9747b28cU) == 0x283E0130U, "aaa");
	UT_CHECK(se_murmur3_32("aa", 2, 0x9747b28cU) == 0x5D211726U, "aa");
	UT_CHECK(se_murmur3_32("a", 1, 0x9747b28cU) == 0x7FA09EA6U, "a");
	UT_CHECK(se_murmur3_32("abcd", 4, 0x9747b28cU) == 0xF0478627U, "abcd");
	UT_CHECK(se_murmur3_32("abc", 3, 0x9747b28cU) == 0xC84A62DDU, "abc");
	UT_CHECK(se_murmur3_32("ab", 2, 0x9747b28cU) == 0x74875592U, "ab");
	UT_CHECK(se_murmur3_32("Hello, world!", 13, 0x9747b28cU) == 0x24884CBAU,
			 "hello world seeded");
	UT_CHECK(se_murmur3_32("The quick brown fox jumps over the lazy dog", 43,
						   0x9747b28cU) == 0x2FA826CDU, "fox seeded");
	UT_CHECK(se_murmur3_32("a", 1, 0) == 1009084850U, "a seed 0");
	UT_CHECK(se_murmur3_32("abcdefghi", 9, 0) == 1108608752U, "abcdefghi");
	/* unaligned input must hash like aligned input */
	{
		char		buf[64];

		memcpy(buf + 1, "The quick brown fox", 19);
		UT_CHECK(se_murmur3_32(buf + 1, 19, 7) ==
				 se_murmur3_32("The quick brown fox", 19, 7), "unaligned");
	}
}

static void
test_routing_hash_es_vectors(void)
{
	int			i;

	for (i = 0; i < lengthof(es_hash_vectors); i++)
	{
		const char *s = es_hash_vectors[i].s;
		int32		h = se_routing_hash(s, (int) strlen(s));

		UT_CHECK((uint32) h == es_hash_vectors[i].hash,
				 "routing hash of \"%s\": got 0x%08x want 0x%08x", s,
				 (uint32) h, es_hash_vectors[i].hash);
	}
}

/* The routing hash must equal murmur3 over the explicit UTF-16LE bytes. */
static void
test_routing_hash_is_utf16le(void)
{
	/* "aé€😀" = a, U+00E9, U+20AC, U+1F600 (D83D DE00) */
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	const uint8 utf16le[] = {'a', 0, 0xe9, 0, 0xac, 0x20, 0x3d, 0xd8, 0x00, 0xde};
	const uint8 odd[] = {'a', 0, 0xe9, 0, 0xac, 0x20};

	UT_CHECK((uint32) se_routing_hash(s, (int) strlen(s)) ==
			 se_murmur3_32(utf16le, sizeof(utf16le), 0), "utf16 mixed");
	UT_CHECK((uint32) se_routing_hash(s, 6) ==
			 se_murmur3_32(odd, sizeof(odd), 0), "odd unit count");
	UT_CHECK(se_routing_hash(NULL, 0) == 0, "null empty");
	UT_CHECK(se_routing_hash("abc", -1) == 0, "negative length is empty");

	/* malformed UTF-8 hashes as U+FFFD, like Java's decoder */
	UT_CHECK(se_routing_hash("\xff", 1) == se_routing_hash("\xef\xbf\xbd", 3),
			 "invalid byte -> U+FFFD");
	UT_CHECK(se_routing_hash("x\xe2\x82", 3) ==
			 se_routing_hash("x\xef\xbf\xbd", 4), "truncated -> one U+FFFD");
	UT_CHECK(se_routing_hash("\xed\xa0\x80", 3) ==
			 se_routing_hash("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9),
			 "encoded surrogate -> three U+FFFD");
	UT_CHECK(se_routing_hash("\xc0\xaf", 2) ==
			 se_routing_hash("\xef\xbf\xbd\xef\xbf\xbd", 6),
			 "overlong -> two U+FFFD");
}

static void
test_num_routing_shards(void)
{
	/* MetadataCreateIndexServiceTests.testCalculateNumRoutingShards */
	UT_CHECK(se_routing_num_shards(1) == 1024, "1 -> %d", se_routing_num_shards(1));
	UT_CHECK(se_routing_num_shards(2) == 1024, "2 -> %d", se_routing_num_shards(2));
	UT_CHECK(se_routing_num_shards(3) == 768, "3 -> %d", se_routing_num_shards(3));
	UT_CHECK(se_routing_num_shards(9) == 576, "9 -> %d", se_routing_num_shards(9));
	UT_CHECK(se_routing_num_shards(512) == 1024, "512 -> %d", se_routing_num_shards(512));
	UT_CHECK(se_routing_num_shards(1024) == 2048, "1024 -> %d", se_routing_num_shards(1024));
	UT_CHECK(se_routing_num_shards(2048) == 4096, "2048 -> %d", se_routing_num_shards(2048));
	UT_CHECK(se_routing_num_shards(5) == 640, "5 -> %d", se_routing_num_shards(5));
	UT_CHECK(se_routing_num_shards(0) == 1024, "0 treated as 1");
	UT_CHECK(se_routing_num_shards(PG_INT32_MAX) == PG_INT32_MAX, "no overflow");
}

static void
test_routing_shard_bwc(void)
{
	int			i;

	for (i = 0; i < lengthof(es_bwc_vectors); i++)
	{
		const char *s = es_bwc_vectors[i].s;
		int			shard = se_routing_shard(s, (int) strlen(s), 8, 8);

		UT_CHECK(shard == es_bwc_vectors[i].shard, "bwc %s: got %d want %d",
				 s, shard, es_bwc_vectors[i].shard);
	}
}

static void
test_routing_shard_formula(void)
{
	int			i;
	int			seen[5] = {0};

	/* default routing shards: floorMod(hash, 640) / 128 */
	for (i = 0; i < 1000; i++)
	{
		char		id[32];
		int			len = snprintf(id, sizeof(id), "doc-%d", i);
		int32		h = se_routing_hash(id, len);
		int			m = (int) (h % 640);
		int			want;
		int			got = se_routing_shard(id, len, 5, se_routing_num_shards(5));

		if (m < 0)
			m += 640;
		want = m / 128;
		UT_CHECK(got == want, "shard of %s: got %d want %d", id, got, want);
		UT_CHECK(se_routing_shard(id, len, 5, 0) == got, "rns 0 means default");
		if (got >= 0 && got < 5)
			seen[got]++;
	}
	for (i = 0; i < 5; i++)
		UT_CHECK(seen[i] > 100, "shard %d gets a fair share (%d)", i, seen[i]);

	/* a single shard index always routes to 0 */
	UT_CHECK(se_routing_shard("anything", 8, 1, 1024) == 0, "one shard");
	/* hostile settings never produce an out-of-range shard */
	for (i = 0; i < 200; i++)
	{
		char		id[32];
		int			len = snprintf(id, sizeof(id), "x%d", i);
		int			s1 = se_routing_shard(id, len, 3, 10);
		int			s2 = se_routing_shard(id, len, 7, 2);
		int			s3 = se_routing_shard(id, len, 0, 0);

		UT_CHECK(s1 >= 0 && s1 < 3, "clamped %d", s1);
		UT_CHECK(s2 >= 0 && s2 < 7, "clamped %d", s2);
		UT_CHECK(s3 == 0, "no shards %d", s3);
	}
}

static void
check_partitioned(const char *routing, const char *id, int want,
				  int shards, int rns, int psize)
{
	int			got = se_routing_shard_partitioned(id, (int) strlen(id),
												   routing, (int) strlen(routing),
												   shards, rns, psize);

	UT_CHECK(got == want, "partitioned %s/%s: got %d want %d",
			 routing, id, got, want);
}

static void
test_routing_partitioned(void)
{
	/* IndexRoutingTests.testPartitionedIndexBWC: 6 shards, partition 2 */
	check_partitioned("a", "a_0", 3, 6, 6, 2);
	check_partitioned("a", "a_1", 2, 6, 6, 2);
	check_partitioned("a", "a_2", 2, 6, 6, 2);
	check_partitioned("a", "a_3", 3, 6, 6, 2);
	check_partitioned("b", "b_0", 5, 6, 6, 2);
	check_partitioned("b", "b_1", 0, 6, 6, 2);
	check_partitioned("b", "b_2", 0, 6, 6, 2);
	check_partitioned("b", "b_3", 0, 6, 6, 2);
	check_partitioned("c", "c_0", 4, 6, 6, 2);
	check_partitioned("c", "c_1", 4, 6, 6, 2);
	check_partitioned("c", "c_2", 3, 6, 6, 2);
	check_partitioned("c", "c_3", 4, 6, 6, 2);
	check_partitioned("d", "d_0", 3, 6, 6, 2);
	check_partitioned("d", "d_1", 4, 6, 6, 2);
	check_partitioned("d", "d_2", 4, 6, 6, 2);
	check_partitioned("d", "d_3", 4, 6, 6, 2);

	/* testPartitionedIndexShrunk: 4 shards, routing shards 8, partition 3 */
	check_partitioned("a", "a_0", 1, 4, 8, 3);
	check_partitioned("a", "a_1", 2, 4, 8, 3);
	check_partitioned("a", "a_2", 2, 4, 8, 3);
	check_partitioned("a", "a_3", 2, 4, 8, 3);
	check_partitioned("a", "a_4", 1, 4, 8, 3);
	check_partitioned("a", "a_5", 2, 4, 8, 3);
	check_partitioned("b", "b_0", 0, 4, 8, 3);
	check_partitioned("b", "b_1", 0, 4, 8, 3);
	check_partitioned("b", "b_2", 0, 4, 8, 3);
	check_partitioned("b", "b_3", 0, 4, 8, 3);
	check_partitioned("b", "b_4", 3, 4, 8, 3);
	check_partitioned("b", "b_5", 3, 4, 8, 3);
	check_partitioned("c", "c_0", 1, 4, 8, 3);
	check_partitioned("c", "c_1", 1, 4, 8, 3);
	check_partitioned("c", "c_2", 0, 4, 8, 3);
	check_partitioned("c", "c_3", 0, 4, 8, 3);
	check_partitioned("c", "c_4", 0, 4, 8, 3);
	check_partitioned("c", "c_5", 1, 4, 8, 3);
	check_partitioned("d", "d_0", 2, 4, 8, 3);
	check_partitioned("d", "d_1", 2, 4, 8, 3);
	check_partitioned("d", "d_2", 3, 4, 8, 3);
	check_partitioned("d", "d_3", 3, 4, 8, 3);
	check_partitioned("d", "d_4", 3, 4, 8, 3);
	check_partitioned("d", "d_5", 3, 4, 8, 3);

	/* partition size 1 is plain routing on the routing value */
	UT_CHECK(se_routing_shard_partitioned("id1", 3, "user7", 5, 5, 640, 1) ==
			 se_routing_shard("user7", 5, 5, 640), "partition 1");
}

int
main(void)
{
	test_murmur3_reference();
	test_routing_hash_es_vectors();
	test_routing_hash_is_utf16le();
	test_num_routing_shards();
	test_routing_shard_bwc();
	test_routing_shard_formula();
	test_routing_partitioned();
	return ut_finish("test_hash");
}
