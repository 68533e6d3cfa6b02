/*-------------------------------------------------------------------------
 *
 * values.c
 *	  Runtime values of the script interpreter: constructors, conversion to
 *	  and from JSON nodes, Java-style printing and equality, and growable
 *	  containers on top of the SeJson DOM.
 *
 * A parsed DOM's arrays are carved from an arena and must never be
 * repalloc'd, and SeJson has no capacity field.  The run therefore keeps a
 * side table (node -> array it allocated, capacity): a container grows in
 * place when its current array is one the run allocated with room to
 * spare, and is copied into a fresh doubled array otherwise.  Removing
 * shifts elements down in place, which is fine for either kind of array.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdlib.h>

#include "common/shortest_dec.h"
#include "script/script_int.h"
#include "util/json.h"

/* ---------------------------------------------------------------------
 * Constructors
 * ---------------------------------------------------------------------
 */

void
sc_val_null(SVal *v)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_NULL;
}

void
sc_val_bool(SVal *v, bool b)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_BOOL;
	v->u.b = b;
}

void
sc_val_int(SVal *v, int32 i)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_INT;
	v->u.i = i;
}

void
sc_val_long(SVal *v, int64 l)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_LONG;
	v->u.l = l;
}

void
sc_val_double(SVal *v, double d)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_DOUBLE;
	v->u.d = d;
}

void
sc_val_float(SVal *v, float f)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_FLOAT;
	v->u.f = f;
}

void
sc_val_string(SVal *v, const char *s, int len)
{
	memset(v, 0, sizeof(SVal));
	v->kind = V_STRING;
	v->u.s = s;
	v->len = len;
}

void
sc_val_container(SVal *v, SeJson *c, bool ro)
{
	memset(v, 0, sizeof(SVal));
	v->kind = c->type == SE_JSON_ARRAY ? V_LIST : V_MAP;
	v->u.c = c;
	v->ro = ro;
}

/* The value of a DOM node; numbers take Jackson's types (int, long, double). */
void
sc_val_from_json(SVal *v, SeJson *j, bool ro)
{
	switch (j->type)
	{
		case SE_JSON_NULL:
			sc_val_null(v);
			break;
		case SE_JSON_TRUE:
		case SE_JSON_FALSE:
			sc_val_bool(v, j->type == SE_JSON_TRUE);
			break;
		case SE_JSON_NUMBER:
			if (j->u.n.is_int && j->u.n.i >= PG_INT32_MIN && j->u.n.i <= PG_INT32_MAX)
				sc_val_int(v, (int32) j->u.n.i);
			else if (j->u.n.is_int)
				sc_val_long(v, j->u.n.i);
			else
				sc_val_double(v, j->u.n.d);
			break;
		case SE_JSON_STRING:
			sc_val_string(v, j->u.s.str, j->u.s.len);
			break;
		case SE_JSON_ARRAY:
		case SE_JSON_OBJECT:
			sc_val_container(v, j, ro);
			return;
	}
	v->node = j;
}

/* ---------------------------------------------------------------------
 * Java number printing
 * ---------------------------------------------------------------------
 */

/*
 * Double.toString / Float.toString into dst (at least SC_JAVA_DOUBLE_LEN
 * bytes, NUL-terminated); returns the length.  The shortest digits that
 * read back come from Ryu (libpgcommon); the layout is Java's: plain
 * notation with at least one fractional digit for 1e-3 <= |d| < 1e7,
 * otherwise d.dddEn.
 */
int
sc_format_java_double(char *dst, double d, bool is_float)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	char		digits[DOUBLE_SHORTEST_DECIMAL_LEN];
	int			nd = 0;
	int			exp10 = 0;		/* value = 0.d1d2d3... * 10^exp10 */
	bool		seen_point = false;
	int			intdigits = 0;
	const char *p;
	char	   *o = dst;
	int			k;

	if (isnan(d))
		return sprintf(dst, "NaN");
	if (isinf(d))
		return sprintf(dst, "%s", d > 0 ? "Infinity" : "-Infinity");
	if (d == 0)
		return sprintf(dst, "%s", signbit(d) ? "-0.0" : "0.0");
	if (is_float)
		float_to_shortest_decimal_buf((float) d, buf);
	else
		double_to_shortest_decimal_buf(d, buf);

	p = buf;
	if (*p == '-')
	{
		*o++ = '-';
		p++;
	}
	/* collect significant digits and the position of the decimal point */
	for (; *p && *p != 'e' && *p != 'E'; p++)
	{
		if (*p == '.')
		{
			seen_point = true;
			continue;
		}
		if (!seen_point)
			intdigits++;
		if (nd == 0 && *p == '0')
		{
			/* leading zero: before the point it is nothing, after it shifts */
			if (seen_point)
				exp10--;
			else
				intdigits--;
			continue;
		}
		if (nd < (int) sizeof(digits))
			digits[nd++] = *p;
	}
	exp10 += intdigits;
	if (*p == 'e' || *p == 'E')
		exp10 += atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (nd == 0)
		return sprintf(dst, "0.0");
	if (nd == 1)
	{
		char		two[32];

		/*
		 * Java prints at least two significant digits and takes the
		 * two-digit decimal closest to the value (4.9E-324, not 5.0E-324);
		 * C's correctly rounded %.1e is that decimal.
		 */
		snprintf(two, sizeof(two), "%.1e", is_float ? fabs((double) (float) d) : fabs(d));
		digits[0] = two[0];
		digits[1] = two[2];
		nd = (two[2] == '0') ? 1 : 2;
		exp10 = atoi(two + 4) + 1;
	}

	/* scientific exponent: value = d1.d2d3... * 10^(exp10-1) */
	if (exp10 - 1 >= -3 && exp10 - 1 < 7)
	{
		if (exp10 <= 0)
		{
			*o++ = '0';
			*o++ = '.';
			for (k = 0; k < -exp10; k++)
				*o++ = '0';
			memcpy(o, digits, nd);
			o += nd;
		}
		else
		{
			for (k = 0; k < exp10; k++)
				*o++ = k < nd ? digits[k] : '0';
			*o++ = '.';
			if (nd > exp10)
			{
				memcpy(o, digits + exp10, nd - exp10);
				o += nd - exp10;
			}
			else
				*o++ = '0';
		}
		*o = '\0';
	}
	else
	{
		*o++ = digits[0];
		*o++ = '.';
		if (nd > 1)
		{
			memcpy(o, digits + 1, nd - 1);
			o += nd - 1;
		}
		else
			*o++ = '0';
		o += sprintf(o, "E%d", exp10 - 1);
	}
	return (int) (o - dst);
}

void
sc_append_java_double(StringInfo out, double d, bool is_float)
{
	char		buf[SC_JAVA_DOUBLE_LEN];
	int			n = sc_format_java_double(buf, d, is_float);

	appendBinaryStringInfo(out, buf, n);
}

/* ---------------------------------------------------------------------
 * Containers
 * ---------------------------------------------------------------------
 */

static GrowEnt *
grow_lookup(Run *r, SeJson *node, bool create, int pos)
{
	uint32		h;
	int			k;

	if (r->growcap == 0 || (create && r->growcount * 2 >= r->growcap))
	{
		int			newcap = r->growcap ? r->growcap * 2 : 8;
		GrowEnt    *ng = (GrowEnt *) sc_alloc(r, pos, sizeof(GrowEnt) * newcap);

		if (ng == NULL)
			return NULL;
		for (k = 0; k < r->growcap; k++)
		{
			if (r->grow[k].node != NULL)
			{
				uint32		hh = (uint32) (((uintptr_t) r->grow[k].node >> 4) * 2654435761u);
				int			j = hh & (newcap - 1);

				while (ng[j].node != NULL)
					j = (j + 1) & (newcap - 1);
				ng[j] = r->grow[k];
			}
		}
		r->grow = ng;
		r->growcap = newcap;
	}
	h = (uint32) (((uintptr_t) node >> 4) * 2654435761u);
	k = h & (r->growcap - 1);
	while (r->grow[k].node != NULL)
	{
		if (r->grow[k].node == node)
			return &r->grow[k];
		k = (k + 1) & (r->growcap - 1);
	}
	if (!create)
		return NULL;
	r->grow[k].node = node;
	r->growcount++;
	return &r->grow[k];
}

/* Make room for count+extra elements in container c. */
static bool
reserve(Run *r, SeJson *c, int extra, int pos)
{
	bool		is_array = c->type == SE_JSON_ARRAY;
	int			count = is_array ? c->u.a.count : c->u.o.count;
	void	   *arr = is_array ? (void *) c->u.a.items : (void *) c->u.o.members;
	size_t		elem = is_array ? sizeof(SeJson *) : sizeof(SeJsonMember);
	GrowEnt    *g = grow_lookup(r, c, false, pos);
	int			newcap;
	void	   *na;

	if (g != NULL && g->arr == arr && arr != NULL && g->cap >= count + extra)
		return true;
	if ((int64) count + extra > 64 * 1024 * 1024)
		return sc_error(r, pos, "illegal_argument_exception", "collection too large");
	newcap = Max(4, Max(count * 2, count + extra));
	if ((na = sc_alloc(r, pos, (int64) newcap * elem)) == NULL ||
		(g = grow_lookup(r, c, true, pos)) == NULL)
		return false;
	if (count > 0)
		memcpy(na, arr, count * elem);
	if (is_array)
		c->u.a.items = (SeJson **) na;
	else
		c->u.o.members = (SeJsonMember *) na;
	g->arr = na;
	g->cap = newcap;
	return true;
}

static SeJson *
new_container(Run *r, int pos, SeJsonType type, int cap)
{
	SeJson	   *c = (SeJson *) sc_alloc(r, pos, sizeof(SeJson));

	if (c == NULL)
		return NULL;
	c->type = type;
	if (cap > 0 && !reserve(r, c, cap, pos))
		return NULL;
	return c;
}

SeJson *
sc_new_array(Run *r, int pos, int cap)
{
	return new_container(r, pos, SE_JSON_ARRAY, cap);
}

SeJson *
sc_new_object(Run *r, int pos, int cap)
{
	return new_container(r, pos, SE_JSON_OBJECT, cap);
}

/* Insert item at index at (0..count). */
bool
sc_array_insert(Run *r, SeJson *arr, int at, SeJson *item, int pos)
{
	if (!reserve(r, arr, 1, pos))
		return false;
	if (at < arr->u.a.count)
		memmove(&arr->u.a.items[at + 1], &arr->u.a.items[at],
				sizeof(SeJson *) * (arr->u.a.count - at));
	arr->u.a.items[at] = item;
	arr->u.a.count++;
	return true;
}

void
sc_array_delete(SeJson *arr, int at)
{
	if (at < arr->u.a.count - 1)
		memmove(&arr->u.a.items[at], &arr->u.a.items[at + 1],
				sizeof(SeJson *) * (arr->u.a.count - at - 1));
	arr->u.a.count--;
}

/* Index of key in map (the last one, as se_json_get), or -1. */
int
sc_map_find(const SeJson *map, const char *key, int keylen)
{
	int			k;

	for (k = map->u.o.count - 1; k >= 0; k--)
	{
		const SeJsonMember *m = &map->u.o.members[k];

		if (m->keylen == keylen && memcmp(m->key, key, keylen) == 0)
			return k;
	}
	return -1;
}

/* Put key -> value; key must be NUL-terminated and outlive the map. */
bool
sc_map_put(Run *r, SeJson *map, const char *key, int keylen, SeJson *value, int pos)
{
	int			k;
	SeJsonMember *m;

	/* the lookup scans the members */
	if (map->u.o.count > 64 && !sc_charge(r, pos, map->u.o.count / 32))
		return false;
	k = sc_map_find(map, key, keylen);
	if (k >= 0)
	{
		map->u.o.members[k].value = value;
		return true;
	}
	if (!reserve(r, map, 1, pos))
		return false;
	m = &map->u.o.members[map->u.o.count++];
	m->key = key;
	m->keylen = keylen;
	m->value = value;
	return true;
}

/* Remove every member named key; *old gets the value that was visible. */
bool
sc_map_remove(SeJson *map, const char *key, int keylen, SeJson **old)
{
	int			k;
	int			w = 0;
	bool		found = false;

	*old = NULL;
	for (k = 0; k < map->u.o.count; k++)
	{
		SeJsonMember *m = &map->u.o.members[k];

		if (m->keylen == keylen && memcmp(m->key, key, keylen) == 0)
		{
			*old = m->value;
			found = true;
			continue;
		}
		if (w != k)
			map->u.o.members[w] = *m;
		w++;
	}
	map->u.o.count = w;
	return found;
}

/* Deep copy of a DOM value (params into a document); NULL if too deep. */
SeJson *
sc_json_copy(Run *r, const SeJson *j, int depth, int pos)
{
	SeJson	   *c;
	int			k;

	if (depth > SC_MAX_WALK_DEPTH)
	{
		if (r->script != NULL)
			sc_error(r, pos, "illegal_argument_exception", "value is nested too deeply to copy");
		return NULL;
	}
	if (j->type == SE_JSON_ARRAY)
	{
		if (!sc_charge(r, pos, 1 + j->u.a.count / 16))
			return NULL;
		c = sc_new_array(r, pos, j->u.a.count);
		if (c == NULL)
			return NULL;
		for (k = 0; k < j->u.a.count; k++)
		{
			SeJson	   *item = sc_json_copy(r, j->u.a.items[k], depth + 1, pos);

			if (item == NULL)
				return NULL;
			c->u.a.items[k] = item;
		}
		c->u.a.count = j->u.a.count;
		return c;
	}
	if (j->type == SE_JSON_OBJECT)
	{
		if (!sc_charge(r, pos, 1 + j->u.o.count / 16))
			return NULL;
		c = sc_new_object(r, pos, j->u.o.count);
		if (c == NULL)
			return NULL;
		for (k = 0; k < j->u.o.count; k++)
		{
			SeJson	   *item = sc_json_copy(r, j->u.o.members[k].value, depth + 1, pos);

			if (item == NULL)
				return NULL;
			c->u.o.members[k].key = j->u.o.members[k].key;
			c->u.o.members[k].keylen = j->u.o.members[k].keylen;
			c->u.o.members[k].value = item;
		}
		c->u.o.count = j->u.o.count;
		return c;
	}
	/* scalars are immutable: share them */
	return (SeJson *) j;
}

/*
 * The DOM node to store for value v.  Scalars reuse the node they were
 * read from (or a literal's); read-only containers are deep-copied; map
 * entries become one-member objects.
 */
SeJson *
sc_val_to_json(Run *r, const SVal *v, int pos)
{
	SeJson	   *j;

	if (v->node != NULL)
		return v->node;
	/* a scalar's node, and its number text (se_json_make_* allocate both) */
	if (v->kind <= V_STRING &&
		(!sc_alloc_ok(r, pos, sizeof(SeJson)) || !sc_alloc_ok(r, pos, SC_JAVA_DOUBLE_LEN)))
		return NULL;
	switch ((VKind) v->kind)
	{
		case V_NULL:
			return se_json_make_null();
		case V_BOOL:
			return se_json_make_bool(v->u.b);
		case V_INT:
			return se_json_make_number_int(v->u.i);
		case V_LONG:
			return se_json_make_number_int(v->u.l);
		case V_FLOAT:
		case V_DOUBLE:
			{
				double		d = v->kind == V_FLOAT ? (double) v->u.f : v->u.d;
				char		buf[SC_JAVA_DOUBLE_LEN];
				int			n;

				/* Jackson writes non-finite doubles as strings */
				if (isnan(d) || isinf(d))
					return se_json_make_string(isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity", -1);
				j = (SeJson *) palloc0(sizeof(SeJson));
				n = sc_format_java_double(buf, d, v->kind == V_FLOAT);
				j->type = SE_JSON_NUMBER;
				j->u.n.text = pnstrdup(buf, n);
				j->u.n.len = n;
				j->u.n.d = d;
				return j;
			}
		case V_STRING:
			j = (SeJson *) palloc0(sizeof(SeJson));
			j->type = SE_JSON_STRING;
			j->u.s.str = v->u.s;
			j->u.s.len = v->len;
			return j;
		case V_LIST:
		case V_MAP:
			if (v->ro)
				return sc_json_copy(r, v->u.c, 0, pos);
			return v->u.c;
		case V_ENTRY:
			{
				SeJson	   *val = sc_val_to_json(r, &v->u.e->value, pos);

				if (val == NULL)
					return NULL;
				j = sc_new_object(r, pos, 1);
				if (j == NULL)
					return NULL;
				j->u.o.members[0].key = v->u.e->key;
				j->u.o.members[0].keylen = v->u.e->keylen;
				j->u.o.members[0].value = val;
				j->u.o.count = 1;
				return j;
			}
		case V_CTX:
			sc_error(r, pos, "illegal_argument_exception", "cannot store ctx in a document");
			return NULL;
		case V_DOCVALS:
			sc_error(r, pos, "illegal_argument_exception", "cannot store doc values in a collection");
			return NULL;
		case V_DATE:
			{
				char		buf[SC_JAVA_DOUBLE_LEN];

				if (!sc_alloc_ok(r, pos, sizeof(SeJson) + SC_JAVA_DOUBLE_LEN))
					return NULL;
				return se_json_make_string(buf, sc_date_format(v->u.l, buf));
			}
		case V_KEYSET:
		case V_ENTRYSET:
			{
				/* a set view is stored as a list of its elements */
				SeqSnap		s;
				int			k;

				if (!sc_seq_open(r, pos, v, &s) || (j = sc_new_array(r, pos, s.count)) == NULL)
					return NULL;
				for (k = 0; k < s.count; k++)
				{
					SVal		e;
					SeJson	   *item;

					sc_seq_get(&s, k, &e);
					if ((item = sc_val_to_json(r, &e, pos)) == NULL)
						return NULL;
					j->u.a.items[j->u.a.count++] = item;
				}
				return j;
			}
	}
	return NULL;
}

/* ---------------------------------------------------------------------
 * Type names, numbers
 * ---------------------------------------------------------------------
 */

const char *
sc_type_name(const SVal *v)
{
	switch ((VKind) v->kind)
	{
		case V_NULL:
			return "null";
		case V_BOOL:
			return "java.lang.Boolean";
		case V_INT:
			return "java.lang.Integer";
		case V_LONG:
			return "java.lang.Long";
		case V_FLOAT:
			return "java.lang.Float";
		case V_DOUBLE:
			return "java.lang.Double";
		case V_STRING:
			return "java.lang.String";
		case V_LIST:
			return "java.util.ArrayList";
		case V_MAP:
			return "java.util.HashMap";
		case V_ENTRY:
			return "java.util.Map$Entry";
		case V_CTX:
			return "java.util.Map";
		case V_KEYSET:
			return "java.util.HashMap$KeySet";
		case V_ENTRYSET:
			return "java.util.HashMap$EntrySet";
		case V_DOCVALS:
			return "org.elasticsearch.index.fielddata.ScriptDocValues";
		case V_DATE:
			return "java.time.ZonedDateTime";
	}
	return "?";
}

const char *
sc_dtype_name(int t)
{
	switch ((DType) t)
	{
		case DT_DEF:
			return "def";
		case DT_INT:
			return "int";
		case DT_LONG:
			return "long";
		case DT_FLOAT:
			return "float";
		case DT_DOUBLE:
			return "double";
		case DT_BOOLEAN:
			return "boolean";
		case DT_STRING:
			return "java.lang.String";
		case DT_LIST:
			return "java.util.List";
		case DT_MAP:
			return "java.util.Map";
		case DT_INTEGER_BOX:
			return "java.lang.Integer";
		case DT_LONG_BOX:
			return "java.lang.Long";
		case DT_FLOAT_BOX:
			return "java.lang.Float";
		case DT_DOUBLE_BOX:
			return "java.lang.Double";
		case DT_BOOLEAN_BOX:
			return "java.lang.Boolean";
		case DT_NUMBER:
			return "java.lang.Number";
	}
	return "?";
}

bool
sc_is_integral(const SVal *v)
{
	return v->kind == V_INT || v->kind == V_LONG;
}

int64
sc_as_long(const SVal *v)
{
	switch (v->kind)
	{
		case V_INT:
			return v->u.i;
		case V_LONG:
			return v->u.l;
		case V_FLOAT:
			return sc_d2l(v->u.f);
		case V_DOUBLE:
			return sc_d2l(v->u.d);
		default:
			return 0;
	}
}

double
sc_as_double(const SVal *v)
{
	switch (v->kind)
	{
		case V_INT:
			return v->u.i;
		case V_LONG:
			return (double) v->u.l;
		case V_FLOAT:
			return v->u.f;
		case V_DOUBLE:
			return v->u.d;
		default:
			return 0;
	}
}

/* Java's (int) cast of a double: truncation, saturation, NaN -> 0. */
int32
sc_d2i(double d)
{
	if (isnan(d))
		return 0;
	if (d >= 2147483647.0)
		return PG_INT32_MAX;
	if (d <= -2147483648.0)
		return PG_INT32_MIN;
	return (int32) d;
}

/* (float) d without leaving float's range: too large becomes infinite. */
float
sc_d2f(double d)
{
	/* halfway between FLT_MAX and 2^128: from here on, round-to-nearest gives infinity */
	if (!isnan(d) && fabs(d) >= 3.4028235677973366e38)
		return d > 0 ? INFINITY : -INFINITY;
	return (float) d;
}

int64
sc_d2l(double d)
{
	if (isnan(d))
		return 0;
	if (d >= 9223372036854775807.0)
		return PG_INT64_MAX;
	if (d <= -9223372036854775808.0)
		return PG_INT64_MIN;
	return (int64) d;
}

/* ---------------------------------------------------------------------
 * Strings
 * ---------------------------------------------------------------------
 */

/*
 * Byte offset of UTF-16 index idx (0..length); an index inside a surrogate
 * pair maps to the start of that character.  Returns len past the end.
 */
int
sc_utf16_to_byte(const char *s, int len, int idx)
{
	int			u = 0;
	int			k = 0;

	while (k < len)
	{
		unsigned char b = (unsigned char) s[k];
		int			w = (b >= 0xF0) ? 2 : 1;
		int			step = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;

		if (u + w > idx)
			return k;
		u += w;
		k += step;
	}
	return len;
}

int
sc_byte_to_utf16(const char *s, int len, int off)
{
	return se_utf16_length(s, Min(off, len));
}

/*
 * s (NUL-terminated) for an error message: its first 100 characters and
 * "..." when longer, since reasons travel in responses and task files.
 */
const char *
sc_abbrev(const char *s, int len)
{
	int			shown = len > 100 ? sc_utf16_to_byte(s, len, 100) : len;

	return shown < len ? psprintf("%.*s...", shown, s) : s;
}

/*
 * Strings are built in a StringInfo whose buffer comes from the run's
 * memory budget: every append asks for room first, so neither the string
 * limit nor the budget is passed, even for a moment.
 */

/* Start building a string; hint is the expected length. */
bool
sc_buf_init(Run *r, int pos, StringInfo buf, int64 hint)
{
	int			cap = (int) Min(Max(hint + 1, 32), SC_MAX_STRING + 1);

	buf->data = (char *) sc_alloc(r, pos, cap);
	if (buf->data == NULL)
		return false;
	buf->len = 0;
	buf->maxlen = cap;
	buf->cursor = 0;
	return true;
}

/* Make room for more bytes: an error past the string limit or the budget. */
bool
sc_buf_reserve(Run *r, int pos, StringInfo buf, int64 more)
{
	int64		need = buf->len + more;
	int64		cap;
	char	   *data;

	if (need > SC_MAX_STRING)
		return sc_error(r, pos, "illegal_argument_exception",
						"string of %lld bytes exceeds the limit of %d bytes",
						(long long) need, (int) SC_MAX_STRING);
	if (need < buf->maxlen)
		return true;
	cap = Min(Max(need + 1, (int64) buf->maxlen * 2), SC_MAX_STRING + 1);
	if ((data = (char *) sc_alloc(r, pos, cap)) == NULL)
		return false;
	memcpy(data, buf->data, buf->len + 1);
	sc_free(r, buf->data, buf->maxlen);
	buf->data = data;
	buf->maxlen = (int) cap;
	return true;
}

bool
sc_buf_append(Run *r, int pos, StringInfo buf, const char *s, int64 len)
{
	if (!sc_buf_reserve(r, pos, buf, len))
		return false;
	memcpy(buf->data + buf->len, s, len);
	buf->len += (int) len;
	buf->data[buf->len] = '\0';
	return true;
}

/* Finish a string built with sc_buf_* as a value. */
bool
sc_make_string(Run *r, int pos, StringInfo buf, SVal *out)
{
	if (!sc_charge(r, pos, buf->len / 64))
		return false;
	/* keep only what the string needs of a buffer that doubled */
	if (buf->maxlen > buf->len + 64)
	{
		char	   *exact = (char *) sc_alloc(r, pos, buf->len + 1);

		if (exact == NULL)
			return false;
		memcpy(exact, buf->data, buf->len + 1);
		sc_free(r, buf->data, buf->maxlen);
		buf->data = exact;
		buf->maxlen = buf->len + 1;
	}
	sc_val_string(out, buf->data, buf->len);
	return true;
}

/*
 * The map key for a value: strings as they are, anything else as its
 * string form (JSON keys are strings).
 */
bool
sc_key_of(Run *r, const SVal *k, const char **key, int *keylen, int pos)
{
	StringInfoData b;
	SVal		s;

	if (k->kind == V_STRING)
	{
		*key = k->u.s;
		*keylen = k->len;
		/* lookups compare the key: long keys cost their length */
		return k->len <= 64 || sc_charge(r, pos, k->len / 64);
	}
	if (k->kind == V_NULL)
		return sc_error(r, pos, "null_pointer_exception", "map key is null");
	if (!sc_buf_init(r, pos, &b, 0) || !sc_to_string(r, k, &b, 0, pos) ||
		!sc_make_string(r, pos, &b, &s))
		return false;
	*key = s.u.s;
	*keylen = s.len;
	return true;
}

/*
 * Append v as String.valueOf(v) would print it: lists "[a, b]", maps
 * "{k=v}".  out is a buffer from sc_buf_init.  Bounded in depth and
 * charged to the run's budgets.
 */
bool
sc_to_string(Run *r, const SVal *v, StringInfo out, int depth, int pos)
{
	char		num[SC_JAVA_DOUBLE_LEN];
	int			k;

#define PUT(s_, len_) \
	do { if (!sc_buf_append(r, pos, out, (s_), (len_))) return false; } while (0)
#define PUTS(lit_) PUT(lit_, sizeof(lit_) - 1)

	if (depth > SC_MAX_WALK_DEPTH)
		return sc_error(r, pos, "illegal_argument_exception", "value is nested too deeply to print");
	switch ((VKind) v->kind)
	{
		case V_NULL:
			PUTS("null");
			break;
		case V_BOOL:
			if (v->u.b)
				PUTS("true");
			else
				PUTS("false");
			break;
		case V_INT:
			PUT(num, snprintf(num, sizeof(num), "%d", v->u.i));
			break;
		case V_LONG:
			PUT(num, snprintf(num, sizeof(num), INT64_FORMAT, v->u.l));
			break;
		case V_FLOAT:
			PUT(num, sc_format_java_double(num, v->u.f, true));
			break;
		case V_DOUBLE:
			PUT(num, sc_format_java_double(num, v->u.d, false));
			break;
		case V_STRING:
			PUT(v->u.s, v->len);
			break;
		case V_LIST:
			if (!sc_charge(r, pos, 1 + v->u.c->u.a.count / 16))
				return false;
			PUTS("[");
			for (k = 0; k < v->u.c->u.a.count; k++)
			{
				SVal		item;

				if (k > 0)
					PUTS(", ");
				sc_val_from_json(&item, v->u.c->u.a.items[k], v->ro);
				if (item.kind == V_LIST && item.u.c == v->u.c)
					PUTS("(this Collection)");
				else if (!sc_to_string(r, &item, out, depth + 1, pos))
					return false;
			}
			PUTS("]");
			break;
		case V_MAP:
			if (!sc_charge(r, pos, 1 + v->u.c->u.o.count / 16))
				return false;
			PUTS("{");
			for (k = 0; k < v->u.c->u.o.count; k++)
			{
				SVal		item;
				SeJsonMember *m = &v->u.c->u.o.members[k];

				if (k > 0)
					PUTS(", ");
				PUT(m->key, m->keylen);
				PUTS("=");
				sc_val_from_json(&item, m->value, v->ro);
				if (item.kind == V_MAP && item.u.c == v->u.c)
					PUTS("(this Map)");
				else if (!sc_to_string(r, &item, out, depth + 1, pos))
					return false;
			}
			PUTS("}");
			break;
		case V_ENTRY:
			PUT(v->u.e->key, v->u.e->keylen);
			PUTS("=");
			return sc_to_string(r, &v->u.e->value, out, depth + 1, pos);
		case V_CTX:
			PUTS("{ctx}");
			break;
		case V_KEYSET:
		case V_ENTRYSET:
			{
				SeqSnap		s;

				if (!sc_seq_open(r, pos, v, &s))
					return false;
				PUTS("[");
				for (k = 0; k < s.count; k++)
				{
					SVal		e;

					if (k > 0)
						PUTS(", ");
					sc_seq_get(&s, k, &e);
					if (!sc_to_string(r, &e, out, depth + 1, pos))
						return false;
				}
				PUTS("]");
			}
			break;
		case V_DOCVALS:
			PUTS("[doc values]");
			break;
		case V_DATE:
			PUT(num, sc_date_format(v->u.l, num));
			break;
	}
#undef PUTS
#undef PUT
	return true;
}

/*
 * Equality.  strict = Java's equals (Integer 1 is not Long 1, Double
 * compares bits), used inside collections and by contains/indexOf; not
 * strict = Painless's == on def values (numbers compare after promotion).
 */
bool
sc_equals(Run *r, const SVal *a, const SVal *b, bool strict, int depth, int pos,
		  bool *result)
{
	int			k;

	*result = false;
	if (depth > SC_MAX_WALK_DEPTH)
		return sc_error(r, pos, "illegal_argument_exception", "value is nested too deeply to compare");
	if (a->kind == V_NULL || b->kind == V_NULL)
	{
		*result = a->kind == b->kind;
		return true;
	}
	if (SV_IS_NUM(a->kind) && SV_IS_NUM(b->kind))
	{
		if (strict)
		{
			if (a->kind != b->kind)
				return true;
			switch (a->kind)
			{
				case V_INT:
					*result = a->u.i == b->u.i;
					break;
				case V_LONG:
					*result = a->u.l == b->u.l;
					break;
				case V_FLOAT:
					*result = memcmp(&a->u.f, &b->u.f, sizeof(float)) == 0 ||
						(isnan(a->u.f) && isnan(b->u.f));
					break;
				default:
					*result = memcmp(&a->u.d, &b->u.d, sizeof(double)) == 0 ||
						(isnan(a->u.d) && isnan(b->u.d));
					break;
			}
			return true;
		}
		if (a->kind == V_DOUBLE || b->kind == V_DOUBLE)
			*result = sc_as_double(a) == sc_as_double(b);
		else if (a->kind == V_FLOAT || b->kind == V_FLOAT)
			*result = (float) sc_as_double(a) == (float) sc_as_double(b);
		else
			*result = sc_as_long(a) == sc_as_long(b);
		return true;
	}
	if (a->kind != b->kind)
		return true;
	switch ((VKind) a->kind)
	{
		case V_BOOL:
			*result = a->u.b == b->u.b;
			return true;
		case V_STRING:
			if (a->len != b->len)
				return true;
			if (a->len > 64 && !sc_charge(r, pos, a->len / 64))
				return false;
			*result = memcmp(a->u.s, b->u.s, a->len) == 0;
			return true;
		case V_LIST:
			{
				SeJson	   *x = a->u.c,
						   *y = b->u.c;

				if (x == y)
				{
					*result = true;
					return true;
				}
				if (x->u.a.count != y->u.a.count)
					return true;
				if (!sc_charge(r, pos, 1 + x->u.a.count / 16))
					return false;
				for (k = 0; k < x->u.a.count; k++)
				{
					SVal		ea,
								eb;
					bool		eq;

					sc_val_from_json(&ea, x->u.a.items[k], false);
					sc_val_from_json(&eb, y->u.a.items[k], false);
					if (!sc_equals(r, &ea, &eb, true, depth + 1, pos, &eq))
						return false;
					if (!eq)
						return true;
				}
				*result = true;
				return true;
			}
		case V_MAP:
			{
				SeJson	   *x = a->u.c,
						   *y = b->u.c;

				if (x == y)
				{
					*result = true;
					return true;
				}
				if (x->u.o.count != y->u.o.count)
					return true;
				if (!sc_charge(r, pos, 1 + (int64) x->u.o.count * (1 + y->u.o.count / 16) / 16))
					return false;
				for (k = 0; k < x->u.o.count; k++)
				{
					SeJsonMember *m = &x->u.o.members[k];
					int			at = sc_map_find(y, m->key, m->keylen);
					SVal		ea,
								eb;
					bool		eq;

					if (at < 0)
						return true;
					sc_val_from_json(&ea, m->value, false);
					sc_val_from_json(&eb, y->u.o.members[at].value, false);
					if (!sc_equals(r, &ea, &eb, true, depth + 1, pos, &eq))
						return false;
					if (!eq)
						return true;
				}
				*result = true;
				return true;
			}
		case V_ENTRY:
			{
				bool		eq;

				if (a->u.e->keylen != b->u.e->keylen ||
					memcmp(a->u.e->key, b->u.e->key, a->u.e->keylen) != 0)
					return true;
				if (!sc_equals(r, &a->u.e->value, &b->u.e->value, true, depth + 1, pos, &eq))
					return false;
				*result = eq;
				return true;
			}
		case V_CTX:
			*result = true;
			return true;
		case V_KEYSET:
		case V_ENTRYSET:
			*result = a->u.c == b->u.c;
			return true;
		default:
			return true;
	}
}
