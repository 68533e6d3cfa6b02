/*-------------------------------------------------------------------------
 *
 * jsonb_encode.c
 *	  Our JSON DOM written straight into jsonb's on-disk format.
 *
 * Every SQL function returns its ES body as jsonb, and a page of a scroll
 * or a large search is mostly the hits' _source: going DOM -> JsonbValue
 * tree -> JsonbValueToJsonb copied every byte three times and allocated a
 * node per value, and was most of a whole-corpus scroll's time.  This
 * writes the same bytes jsonb_util.c's convertJsonbValue writes (the format
 * is PostgreSQL's stable on-disk one: containers with a count header, a
 * JEntry per child -- an end offset every JB_OFFSET_STRIDE'th, lengths
 * otherwise -- numerics and containers padded to 4 bytes, object keys in
 * length-then-bytes order, of equal keys the last one) in one pass over
 * the DOM into one buffer.  The result is byte for byte what jsonb_in
 * would make of the same text, so jsonb equality, hashing and the
 * pg_regress outputs do not change.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "api/api.h"

/*
 * numeric's short format (numeric.c keeps these private; they are on-disk
 * format, unchanged since 9.1): a uint16 header of sign, display scale and
 * weight, then base-10000 digits, most significant first.
 */
#define NUMERIC_SHORT			0x8000
#define NUMERIC_SHORT_SIGN_MASK	0x2000
#define NUMERIC_SHORT_WEIGHT_MASK	0x003F
#define NBASE					10000

/*
 * jsonb cannot hold U+0000, and writes refuse it (the write workers parse
 * documents with reject_nul), but a document an older build stored may
 * have one: such a string reads with U+FFFD (the Unicode replacement
 * character) in its place, so that the one document cannot make every
 * response that returns it fail.
 */
#define SE_NUL_REPLACEMENT "\xEF\xBF\xBD"

typedef struct KeyRef
{
	const char *key;
	int			len;
	int			order;			/* document order */
} KeyRef;

static bool encode_value(StringInfo b, const SeJson *j, uint32 *header);

/* Pad to a 4-byte boundary from the start of the varlena; the pad count. */
static int
pad_to_int(StringInfo b)
{
	int			pad = INTALIGN(b->len) - b->len;

	if (pad > 0)
	{
		enlargeStringInfo(b, pad);
		memset(b->data + b->len, 0, pad);
		b->len += pad;
	}
	return pad;
}

/* Room for n bytes at the end; their offset (the buffer may move). */
static int
reserve(StringInfo b, int n)
{
	int			off;

	enlargeStringInfo(b, n);
	off = b->len;
	b->len += n;
	return off;
}

static void
encode_string(StringInfo b, const char *s, int len, uint32 *header)
{
	if (memchr(s, '\0', len) != NULL)
		s = se_nuls_replaced(s, len, SE_NUL_REPLACEMENT, &len);
	appendBinaryStringInfoNT(b, s, len);
	*header = JENTRY_ISSTRING | len;
}

/*
 * |v| < 10^18 as int64_to_numeric makes it: leading and trailing zero
 * digits stripped, zero with no digits and weight 0, display scale 0.
 */
static void
encode_int(StringInfo b, int64 v, uint32 *header)
{
	uint64		u = v < 0 ? -(uint64) v : (uint64) v;
	int16		digits[5];		/* least significant first */
	int			nd = 0;
	int			lo = 0;
	int			ndigits;
	int			size;
	int			pad;
	int			off;
	uint16		nh;
	int			i;

	while (u > 0)
	{
		digits[nd++] = (int16) (u % NBASE);
		u /= NBASE;
	}
	while (lo < nd && digits[lo] == 0)
		lo++;
	ndigits = nd - lo;
	nh = NUMERIC_SHORT;
	if (ndigits > 0)
	{
		if (v < 0)
			nh |= NUMERIC_SHORT_SIGN_MASK;
		nh |= (uint16) ((nd - 1) & NUMERIC_SHORT_WEIGHT_MASK);
	}
	size = VARHDRSZ + sizeof(uint16) + ndigits * sizeof(int16);
	pad = pad_to_int(b);
	off = reserve(b, size);
	SET_VARSIZE(b->data + off, size);
	memcpy(b->data + off + VARHDRSZ, &nh, sizeof(uint16));
	for (i = 0; i < ndigits; i++)
		memcpy(b->data + off + VARHDRSZ + sizeof(uint16) + i * sizeof(int16),
			   &digits[nd - 1 - i], sizeof(int16));
	*header = JENTRY_ISNUMERIC | (pad + size);
}

static void
encode_number(StringInfo b, const SeJson *j, uint32 *header)
{
	const char *t = j->u.n.text;
	int			n = j->u.n.len;
	int			k = (n > 0 && t[0] == '-') ? 1 : 0;
	bool		plain = n - k >= 1 && n - k <= 18;
	int			i;
	Numeric		num;
	int			size;
	int			pad;

	/* the rule jsonb_value_from_dom follows: plain integers skip numeric_in */
	for (i = k; plain && i < n; i++)
		plain = (t[i] >= '0' && t[i] <= '9');
	if (plain && j->u.n.is_int)
	{
		encode_int(b, j->u.n.i, header);
		return;
	}
	num = DatumGetNumeric(DirectFunctionCall3(numeric_in,
											  CStringGetDatum(pnstrdup(t, n)),
											  ObjectIdGetDatum(InvalidOid),
											  Int32GetDatum(-1)));
	size = VARSIZE_ANY(num);
	pad = pad_to_int(b);
	appendBinaryStringInfoNT(b, (const char *) num, size);
	*header = JENTRY_ISNUMERIC | (pad + size);
	pfree(num);
}

/* Child i's JEntry: its length, or every stride'th the end offset so far. */
static bool
child_entry(StringInfo b, int entries, int i, uint32 meta, int *totallen)
{
	*totallen += JBE_OFFLENFLD(meta);
	if (*totallen > JENTRY_OFFLENMASK)
		return false;			/* the old path raises jsonb's error */
	if (i % JB_OFFSET_STRIDE == 0)
		meta = (meta & JENTRY_TYPEMASK) | *totallen | JENTRY_HAS_OFF;
	memcpy(b->data + entries + i * sizeof(uint32), &meta, sizeof(uint32));
	return true;
}

static bool
encode_array(StringInfo b, const SeJson *const *items, int n, bool raw_scalar,
			 uint32 *header)
{
	int			base = b->len;
	uint32		head = (uint32) n | JB_FARRAY | (raw_scalar ? JB_FSCALAR : 0);
	int			entries;
	int			totallen = 0;
	int			i;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (n > JB_CMASK)
		return false;
	pad_to_int(b);
	appendBinaryStringInfoNT(b, (const char *) &head, sizeof(uint32));
	entries = reserve(b, n * sizeof(uint32));
	for (i = 0; i < n; i++)
	{
		uint32		meta;

		if (!encode_value(b, items[i], &meta) ||
			!child_entry(b, entries, i, meta, &totallen))
			return false;
	}
	totallen = b->len - base;
	if (totallen > JENTRY_OFFLENMASK)
		return false;
	*header = JENTRY_ISCONTAINER | totallen;
	return true;
}

static int
key_cmp(const KeyRef *x, const KeyRef *y)
{
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->key, y->key, x->len);
}

/* qsort order: jsonb's key order, equal keys in document order */
static int
keyref_cmp(const void *a, const void *b)
{
	int			c = key_cmp(a, b);

	if (c != 0)
		return c;
	return ((const KeyRef *) a)->order < ((const KeyRef *) b)->order ? -1 : 1;
}

static bool
encode_object(StringInfo b, const SeJson *j, uint32 *header)
{
	int			n = j->u.o.count;
	int			base = b->len;
	KeyRef		small[16];
	KeyRef	   *keys = n <= lengthof(small) ? small : palloc(sizeof(KeyRef) * n);
	uint32		head;
	int			entries;
	int			totallen = 0;
	int			out;
	int			i;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	for (i = 0; i < n; i++)
	{
		const SeJsonMember *m = &j->u.o.members[i];

		keys[i].key = m->key;
		keys[i].len = m->keylen;
		keys[i].order = i;
		if (memchr(m->key, '\0', m->keylen) != NULL)
			keys[i].key = se_nuls_replaced(m->key, m->keylen, SE_NUL_REPLACEMENT,
										   &keys[i].len);
	}
	/* small objects (most of them) by insertion: stable, no call per compare */
	if (n <= lengthof(small))
	{
		for (i = 1; i < n; i++)
		{
			KeyRef		k = keys[i];
			int			p = i;

			while (p > 0 && key_cmp(&keys[p - 1], &k) > 0)
			{
				keys[p] = keys[p - 1];
				p--;
			}
			keys[p] = k;
		}
	}
	else
		pg_qsort(keys, n, sizeof(KeyRef), keyref_cmp);
	/* of equal keys jsonb keeps the last one written */
	out = 0;
	for (i = 0; i < n; i++)
	{
		if (i + 1 < n && key_cmp(&keys[i], &keys[i + 1]) == 0)
			continue;
		keys[out++] = keys[i];
	}
	n = out;
	if (n > JB_CMASK)
		return false;

	pad_to_int(b);
	head = (uint32) n | JB_FOBJECT;
	appendBinaryStringInfoNT(b, (const char *) &head, sizeof(uint32));
	entries = reserve(b, 2 * n * sizeof(uint32));
	for (i = 0; i < n; i++)
	{
		uint32		meta;

		encode_string(b, keys[i].key, keys[i].len, &meta);
		if (!child_entry(b, entries, i, meta, &totallen))
			return false;
	}
	for (i = 0; i < n; i++)
	{
		uint32		meta;

		if (!encode_value(b, j->u.o.members[keys[i].order].value, &meta) ||
			!child_entry(b, entries, n + i, meta, &totallen))
			return false;
	}
	totallen = b->len - base;
	if (totallen > JENTRY_OFFLENMASK)
		return false;
	*header = JENTRY_ISCONTAINER | totallen;
	if (keys != small)
		pfree(keys);
	return true;
}

static bool
encode_value(StringInfo b, const SeJson *j, uint32 *header)
{
	switch (j->type)
	{
		case SE_JSON_NULL:
			*header = JENTRY_ISNULL;
			return true;
		case SE_JSON_FALSE:
			*header = JENTRY_ISBOOL_FALSE;
			return true;
		case SE_JSON_TRUE:
			*header = JENTRY_ISBOOL_TRUE;
			return true;
		case SE_JSON_NUMBER:
			encode_number(b, j, header);
			return true;
		case SE_JSON_STRING:
			if (j->u.s.len > JENTRY_OFFLENMASK)
				return false;
			encode_string(b, j->u.s.str, j->u.s.len, header);
			return true;
		case SE_JSON_ARRAY:
			return encode_array(b, (const SeJson *const *) j->u.a.items,
								j->u.a.count, false, header);
		case SE_JSON_OBJECT:
			return encode_object(b, j, header);
	}
	return false;
}

/*
 * The DOM j as a jsonb datum allocated in the current memory context (a
 * scalar as jsonb's one-element raw-scalar array), or NULL where only
 * jsonb's own path can answer (a container past jsonb's size limits: it
 * raises the error).  size_hint: the JSON text's length, to size the
 * buffer once.
 */
Jsonb *
se_jsonb_encode(const SeJson *j, size_t size_hint)
{
	StringInfoData b;
	uint32		header;
	bool		ok;

	initStringInfo(&b);
	if (size_hint > 0 && size_hint < MaxAllocSize / 2)
		enlargeStringInfo(&b, size_hint + size_hint / 8 + 64);
	(void) reserve(&b, VARHDRSZ);
	if (j->type == SE_JSON_OBJECT || j->type == SE_JSON_ARRAY)
		ok = encode_value(&b, j, &header);
	else
		ok = encode_array(&b, &j, 1, true, &header);
	if (!ok)
	{
		pfree(b.data);
		return NULL;
	}
	SET_VARSIZE(b.data, b.len);
	return (Jsonb *) b.data;
}
