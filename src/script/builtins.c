/*-------------------------------------------------------------------------
 *
 * builtins.c
 *	  Methods of List, Map, String, numbers and Map.Entry, static calls
 *	  (Math, Integer, String, Objects, Collections) and constructors.
 *
 * Method names are resolved to MethodId at compile time; arity and the
 * receiver's runtime type pick the behaviour here, as Painless's dynamic
 * dispatch (name/arity) does for def receivers.  List.remove(x) is
 * List.remove(int), by index, for every receiver: Painless resolves
 * remove/1 on a List to the index form, so a non-integer argument is a
 * class_cast_exception (use removeIf or indexOf to remove by value).
 *
 * Operations that scan or copy charge the run's statement budget in
 * proportion (one unit per 16 elements, per 64 string bytes), so a
 * hostile loop of contains() calls on a large list stays bounded.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdlib.h>

#include "mb/pg_wchar.h"
#include "script/script_int.h"
#include "util/json.h"

static const struct
{
	const char *name;
	MethodId	id;
}			method_names[] = {
	{"add", M_ADD}, {"addAll", M_ADDALL}, {"remove", M_REMOVE},
	{"removeAll", M_REMOVEALL}, {"retainAll", M_RETAINALL},
	{"removeIf", M_REMOVEIF}, {"contains", M_CONTAINS},
	{"containsAll", M_CONTAINSALL}, {"size", M_SIZE}, {"isEmpty", M_ISEMPTY},
	{"indexOf", M_INDEXOF}, {"lastIndexOf", M_LASTINDEXOF}, {"get", M_GET},
	{"set", M_SET}, {"clear", M_CLEAR}, {"sort", M_SORT},
	{"forEach", M_FOREACH}, {"join", M_JOIN}, {"subList", M_SUBLIST},
	{"containsKey", M_CONTAINSKEY}, {"containsValue", M_CONTAINSVALUE},
	{"put", M_PUT}, {"putAll", M_PUTALL}, {"putIfAbsent", M_PUTIFABSENT},
	{"getOrDefault", M_GETORDEFAULT}, {"keySet", M_KEYSET},
	{"values", M_VALUES}, {"entrySet", M_ENTRYSET}, {"getKey", M_GETKEY},
	{"getValue", M_GETVALUE}, {"setValue", M_SETVALUE},
	{"length", M_LENGTH}, {"startsWith", M_STARTSWITH},
	{"endsWith", M_ENDSWITH}, {"toLowerCase", M_TOLOWERCASE},
	{"toUpperCase", M_TOUPPERCASE}, {"trim", M_TRIM},
	{"substring", M_SUBSTRING}, {"replace", M_REPLACE}, {"equals", M_EQUALS},
	{"equalsIgnoreCase", M_EQUALSIGNORECASE}, {"compareTo", M_COMPARETO},
	{"charAt", M_CHARAT}, {"splitOnToken", M_SPLITONTOKEN}, {"split", M_SPLIT},
	{"concat", M_CONCAT}, {"toString", M_TOSTRING}, {"intValue", M_INTVALUE},
	{"longValue", M_LONGVALUE}, {"doubleValue", M_DOUBLEVALUE},
	{"floatValue", M_FLOATVALUE}, {"hashCode", M_HASHCODE},
	{"getLength", M_GETLENGTH},
};

MethodId
sc_method_id(const char *name, int len)
{
	int			k;

	for (k = 0; k < lengthof(method_names); k++)
		if (strlen(method_names[k].name) == (size_t) len &&
			memcmp(method_names[k].name, name, len) == 0)
			return method_names[k].id;
	return M_UNKNOWN;
}

/* ---------------------------------------------------------------------
 * Argument helpers
 * ---------------------------------------------------------------------
 */

static bool
no_method(Run *r, const Node *n, const SVal *recv)
{
	return sc_error(r, n->pos, "illegal_argument_exception",
					"dynamic method [%s, %s/%d] not found", sc_type_name(recv),
					n->name, n->nargs);
}

static bool
arg_cast_error(Run *r, int pos, const SVal *v, const char *to)
{
	if (v->kind == V_NULL)
		return sc_error(r, pos, "null_pointer_exception", "cannot cast null to [%s]", to);
	return sc_error(r, pos, "class_cast_exception", "cannot cast [%s] to [%s]",
					sc_type_name(v), to);
}

static bool
arg_int(Run *r, int pos, const SVal *v, int *out)
{
	if (v->kind == V_INT)
	{
		*out = v->u.i;
		return true;
	}
	if (v->kind == V_LONG && v->u.l >= PG_INT32_MIN && v->u.l <= PG_INT32_MAX)
	{
		*out = (int) v->u.l;
		return true;
	}
	return arg_cast_error(r, pos, v, "int");
}

static bool
arg_string(Run *r, int pos, const SVal *v)
{
	if (v->kind == V_STRING)
		return true;
	return arg_cast_error(r, pos, v, "java.lang.String");
}

static const Node *
arg_lambda(Run *r, const Node *n, int k, int nparams)
{
	const Node *a = n->args[k];

	if (a->kind != E_LAMBDA)
	{
		sc_error(r, a->pos, "illegal_argument_exception",
				 "method [%s] expects a lambda as argument %d", n->name, k + 1);
		return NULL;
	}
	if (a->nslots != nparams)
	{
		sc_error(r, a->pos, "illegal_argument_exception",
				 "lambda for [%s] must take %d parameter%s, not %d", n->name,
				 nparams, nparams == 1 ? "" : "s", a->nslots);
		return NULL;
	}
	return a;
}

static bool
writable(Run *r, int pos, const SVal *recv)
{
	if (!recv->ro)
		return true;
	return sc_error(r, pos, "unsupported_operation_exception",
					"params are read-only; copy the value first, e.g. new ArrayList(params.x)");
}

static inline bool
charge_n(Run *r, int pos, int64 n)
{
	return sc_charge(r, pos, n / 16);
}

static bool
lambda_bool(Run *r, const Node *lam, SVal *args, int nargs, bool *out)
{
	SVal		v;

	if (!sc_charge(r, lam->pos, 1) || !sc_call_lambda(r, lam, args, nargs, &v))
		return false;
	if (v.kind != V_BOOL)
		return arg_cast_error(r, lam->pos, &v, "boolean");
	*out = v.u.b;
	return true;
}

/*
 * The node to put in a container for an element taken from another one:
 * shared, except that containers reached through params are copied.
 */
SeJson *
sc_move_node(Run *r, SeJson *item, bool ro, int pos)
{
	if (ro && (item->type == SE_JSON_ARRAY || item->type == SE_JSON_OBJECT))
		return sc_json_copy(r, item, 0, pos);
	return item;
}

/* ---------------------------------------------------------------------
 * Collection snapshots
 * ---------------------------------------------------------------------
 */

bool
sc_seq_open(Run *r, int pos, const SVal *coll, SeqSnap *s)
{
	memset(s, 0, sizeof(SeqSnap));
	s->kind = coll->kind;
	s->ro = coll->ro;
	switch (coll->kind)
	{
		case V_LIST:
			s->count = coll->u.c->u.a.count;
			if (!charge_n(r, pos, s->count) ||
				(s->items = sc_alloc(r, pos, sizeof(SeJson *) * ((int64) s->count + 1))) == NULL)
				return false;
			if (s->count > 0)
				memcpy(s->items, coll->u.c->u.a.items, sizeof(SeJson *) * s->count);
			return true;
		case V_KEYSET:
		case V_ENTRYSET:
			s->map = coll->u.c;
			s->count = coll->u.c->u.o.count;
			if (!charge_n(r, pos, s->count) ||
				(s->members = sc_alloc(r, pos, sizeof(SeJsonMember) * ((int64) s->count + 1))) == NULL ||
				(coll->kind == V_ENTRYSET &&
				 (s->entries = sc_alloc(r, pos, sizeof(SEntry) * ((int64) s->count + 1))) == NULL))
				return false;
			if (s->count > 0)
				memcpy(s->members, coll->u.c->u.o.members, sizeof(SeJsonMember) * s->count);
			return true;
		case V_NULL:
			return sc_error(r, pos, "null_pointer_exception", "collection is null");
		default:
			return sc_error(r, pos, "class_cast_exception", "cannot cast [%s] to [java.util.Collection]",
							sc_type_name(coll));
	}
}

void
sc_seq_get(const SeqSnap *s, int i, SVal *out)
{
	switch (s->kind)
	{
		case V_LIST:
			sc_val_from_json(out, s->items[i], s->ro);
			break;
		case V_KEYSET:
			sc_val_string(out, s->members[i].key, s->members[i].keylen);
			break;
		default:
			{
				/* the same entry every time, as Java's map entries */
				SEntry	   *e = &s->entries[i];

				if (e->map == NULL)
				{
					e->map = s->map;
					e->ro = s->ro;
					e->key = s->members[i].key;
					e->keylen = s->members[i].keylen;
					sc_val_from_json(&e->value, s->members[i].value, s->ro);
				}
				memset(out, 0, sizeof(SVal));
				out->kind = V_ENTRY;
				out->ro = s->ro;
				out->u.e = e;
			}
			break;
	}
}

/* The node to store for element i of a snapshot. */
static SeJson *
seq_node(Run *r, const SeqSnap *s, int i, int pos)
{
	SVal		v;

	if (s->kind == V_LIST)
		return sc_move_node(r, s->items[i], s->ro, pos);
	sc_seq_get(s, i, &v);
	return sc_val_to_json(r, &v, pos);
}

/* Does s contain v (Java equals)? */
static bool
seq_contains(Run *r, int pos, const SeqSnap *s, const SVal *v, bool *found)
{
	int			k;

	*found = false;
	for (k = 0; k < s->count; k++)
	{
		SVal		e;

		sc_seq_get(s, k, &e);
		if (!sc_equals(r, &e, v, true, 0, pos, found))
			return false;
		if (*found)
			return true;
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Sorting: a stable merge sort whose comparator may fail
 * ---------------------------------------------------------------------
 */

typedef struct SortCtx
{
	Run		   *r;
	int			pos;
	const Node *lam;
	bool		ro;
	bool		failed;
} SortCtx;

static int
natural_compare(Run *r, int pos, const SVal *a, const SVal *b, bool *ok)
{
	*ok = true;
	if (SV_IS_NUM(a->kind) && SV_IS_NUM(b->kind))
	{
		if (sc_is_integral(a) && sc_is_integral(b))
		{
			int64		x = sc_as_long(a),
						y = sc_as_long(b);

			return (x > y) - (x < y);
		}
		else
		{
			double		x = sc_as_double(a),
						y = sc_as_double(b);

			/* Double.compare: NaN above everything, -0.0 below 0.0 */
			if (isnan(x) || isnan(y))
				return isnan(x) - isnan(y);
			if (x == y)
				return signbit(y) - signbit(x) > 0 ? 1 : signbit(y) - signbit(x) < 0 ? -1 : 0;
			return x < y ? -1 : 1;
		}
	}
	if (a->kind == V_STRING && b->kind == V_STRING)
	{
		int			c;

		if (!sc_charge(r, pos, Min(a->len, b->len) / 64))
		{
			*ok = false;
			return 0;
		}
		c = memcmp(a->u.s, b->u.s, Min(a->len, b->len));

		if (c != 0)
			return c < 0 ? -1 : 1;
		return (a->len > b->len) - (a->len < b->len);
	}
	if (a->kind == V_BOOL && b->kind == V_BOOL)
		return (int) a->u.b - (int) b->u.b;
	*ok = false;
	if (a->kind == V_NULL || b->kind == V_NULL)
		sc_error(r, pos, "null_pointer_exception", "cannot compare null");
	else
		sc_error(r, pos, "class_cast_exception", "cannot compare [%s] with [%s]",
				 sc_type_name(a), sc_type_name(b));
	return 0;
}

static int
sort_compare(SortCtx *sc, SeJson *x, SeJson *y)
{
	SVal		a,
				b;
	bool		ok;
	int			c;

	if (sc->failed)
		return 0;
	sc_val_from_json(&a, x, sc->ro);
	sc_val_from_json(&b, y, sc->ro);
	if (sc->lam != NULL)
	{
		SVal		args[2];
		SVal		v;

		args[0] = a;
		args[1] = b;
		if (!sc_charge(sc->r, sc->lam->pos, 1) ||
			!sc_call_lambda(sc->r, sc->lam, args, 2, &v))
		{
			sc->failed = true;
			return 0;
		}
		if (!sc_is_integral(&v))
		{
			arg_cast_error(sc->r, sc->lam->pos, &v, "int");
			sc->failed = true;
			return 0;
		}
		return sc_as_long(&v) < 0 ? -1 : sc_as_long(&v) > 0 ? 1 : 0;
	}
	c = natural_compare(sc->r, sc->pos, &a, &b, &ok);
	if (!ok)
		sc->failed = true;
	return c;
}

static bool
sort_items(Run *r, int pos, SeJson **items, int n, const Node *lam, bool ro)
{
	SortCtx		sc;
	SeJson	  **tmp;
	int			width;

	if (n < 2)
		return true;
	sc.r = r;
	sc.pos = pos;
	sc.lam = lam;
	sc.ro = ro;
	sc.failed = false;
	if (!sc_charge(r, pos, (int64) n * 8 / 16) ||
		(tmp = sc_alloc(r, pos, sizeof(SeJson *) * (int64) n)) == NULL)
		return false;
	for (width = 1; width < n && !sc.failed; width *= 2)
	{
		int			lo;

		for (lo = 0; lo < n && !sc.failed; lo += 2 * width)
		{
			int			mid = Min(lo + width, n);
			int			hi = Min(lo + 2 * width, n);
			int			i = lo,
						j = mid,
						k = lo;

			while (i < mid && j < hi)
			{
				if (sort_compare(&sc, items[j], items[i]) < 0)
					tmp[k++] = items[j++];
				else
					tmp[k++] = items[i++];
				if (sc.failed)
					break;
			}
			if (sc.failed)
				break;
			while (i < mid)
				tmp[k++] = items[i++];
			while (j < hi)
				tmp[k++] = items[j++];
			memcpy(items + lo, tmp + lo, sizeof(SeJson *) * (hi - lo));
		}
	}
	sc_free(r, tmp, sizeof(SeJson *) * (int64) n);
	return !sc.failed;
}

/* ---------------------------------------------------------------------
 * List
 * ---------------------------------------------------------------------
 */

static bool
index_error(Run *r, int pos, int64 i, int count)
{
	return sc_error(r, pos, "index_out_of_bounds_exception",
					"Index %lld out of bounds for length %d", (long long) i, count);
}

static bool
list_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	SeJson	   *c = recv->u.c;
	int			na = n->nargs;
	int			pos = n->pos;
	int			count = c->u.a.count;
	int			i,
				k;
	SeJson	   *j;

	switch ((MethodId) n->op)
	{
		case M_ADD:
			if (na == 1)
			{
				if (!writable(r, pos, recv) || (j = sc_val_to_json(r, &args[0], pos)) == NULL ||
					!sc_array_insert(r, c, c->u.a.count, j, pos))
					return false;
				sc_val_bool(out, true);
				return true;
			}
			if (na == 2)
			{
				if (!writable(r, pos, recv) || !arg_int(r, pos, &args[0], &i))
					return false;
				if (i < 0 || i > count)
					return index_error(r, pos, i, count);
				if (!charge_n(r, pos, count - i) ||
					(j = sc_val_to_json(r, &args[1], pos)) == NULL ||
					!sc_array_insert(r, c, i, j, pos))
					return false;
				sc_val_null(out);
				return true;
			}
			break;
		case M_ADDALL:
			if (na == 1)
			{
				SeqSnap		s;

				if (!writable(r, pos, recv) || !sc_seq_open(r, pos, &args[0], &s))
					return false;
				for (k = 0; k < s.count; k++)
				{
					if ((j = seq_node(r, &s, k, pos)) == NULL ||
						!sc_array_insert(r, c, c->u.a.count, j, pos))
						return false;
				}
				sc_val_bool(out, s.count > 0);
				return true;
			}
			break;
		case M_REMOVE:
			if (na == 1)
			{
				if (!writable(r, pos, recv))
					return false;
				if (!sc_is_integral(&args[0]))
				{
					if (args[0].kind == V_NULL)
						return sc_error(r, pos, "null_pointer_exception",
										"List.remove takes an index, got null");
					return sc_error(r, pos, "class_cast_exception",
									"cannot cast [%s] to [int]: List.remove takes an index; use removeIf or indexOf to remove by value",
									sc_type_name(&args[0]));
				}
				if (!arg_int(r, pos, &args[0], &i))
					return false;
				if (i < 0 || i >= count)
					return index_error(r, pos, sc_as_long(&args[0]), count);
				if (!charge_n(r, pos, count - i))
					return false;
				sc_val_from_json(out, c->u.a.items[i], false);
				sc_array_delete(c, i);
				return true;
			}
			break;
		case M_REMOVEALL:
		case M_RETAINALL:
			if (na == 1)
			{
				SeqSnap		s;
				int			w = 0;
				bool		retain = n->op == M_RETAINALL;

				if (!writable(r, pos, recv) || !sc_seq_open(r, pos, &args[0], &s) ||
					!charge_n(r, pos, (int64) count * (1 + s.count / 16)))
					return false;
				for (k = 0; k < c->u.a.count; k++)
				{
					SVal		e;
					bool		found;

					sc_val_from_json(&e, c->u.a.items[k], false);
					if (!seq_contains(r, pos, &s, &e, &found))
						return false;
					if (found == retain)
						c->u.a.items[w++] = c->u.a.items[k];
				}
				sc_val_bool(out, w != c->u.a.count);
				c->u.a.count = w;
				return true;
			}
			break;
		case M_REMOVEIF:
			if (na == 1)
			{
				const Node *lam = arg_lambda(r, n, 0, 1);
				SeJson	  **snap;
				bool	   *drop;
				int			w = 0;
				bool		any = false;

				if (lam == NULL || !writable(r, pos, recv) ||
					(snap = sc_alloc(r, pos, sizeof(SeJson *) * ((int64) count + 1))) == NULL ||
					(drop = sc_alloc(r, pos, sizeof(bool) * ((int64) count + 1))) == NULL)
					return false;
				if (count > 0)
					memcpy(snap, c->u.a.items, sizeof(SeJson *) * count);
				for (k = 0; k < count; k++)
				{
					SVal		e;

					sc_val_from_json(&e, snap[k], false);
					if (!lambda_bool(r, lam, &e, 1, &drop[k]))
						return false;
					any |= drop[k];
				}
				if (c->u.a.count != count)
					return sc_error(r, pos, "concurrent_modification_exception",
									"list modified during removeIf");
				for (k = 0; k < count; k++)
					if (!drop[k])
						c->u.a.items[w++] = snap[k];
				c->u.a.count = w;
				sc_val_bool(out, any);
				return true;
			}
			break;
		case M_CONTAINS:
		case M_INDEXOF:
		case M_LASTINDEXOF:
			if (na == 1)
			{
				int			found = -1;

				if (!charge_n(r, pos, count))
					return false;
				for (k = 0; k < count; k++)
				{
					int			at = n->op == M_LASTINDEXOF ? count - 1 - k : k;
					SVal		e;
					bool		eq;

					sc_val_from_json(&e, c->u.a.items[at], false);
					if (!sc_equals(r, &e, &args[0], true, 0, pos, &eq))
						return false;
					if (eq)
					{
						found = at;
						break;
					}
				}
				if (n->op == M_CONTAINS)
					sc_val_bool(out, found >= 0);
				else
					sc_val_int(out, found);
				return true;
			}
			break;
		case M_CONTAINSALL:
			if (na == 1)
			{
				SeqSnap		s;
				SeqSnap		self;
				bool		all = true;

				if (!sc_seq_open(r, pos, &args[0], &s) || !sc_seq_open(r, pos, recv, &self) ||
					!charge_n(r, pos, (int64) count * (1 + s.count / 16)))
					return false;
				for (k = 0; k < s.count && all; k++)
				{
					SVal		e;

					sc_seq_get(&s, k, &e);
					if (!seq_contains(r, pos, &self, &e, &all))
						return false;
				}
				sc_val_bool(out, all);
				return true;
			}
			break;
		case M_SIZE:
		case M_GETLENGTH:
			if (na == 0)
			{
				sc_val_int(out, count);
				return true;
			}
			break;
		case M_ISEMPTY:
			if (na == 0)
			{
				sc_val_bool(out, count == 0);
				return true;
			}
			break;
		case M_GET:
			if (na == 1)
			{
				if (!arg_int(r, pos, &args[0], &i))
					return false;
				if (i < 0 || i >= count)
					return index_error(r, pos, i, count);
				sc_val_from_json(out, c->u.a.items[i], recv->ro);
				return true;
			}
			break;
		case M_SET:
			if (na == 2)
			{
				if (!writable(r, pos, recv) || !arg_int(r, pos, &args[0], &i))
					return false;
				if (i < 0 || i >= count)
					return index_error(r, pos, i, count);
				if ((j = sc_val_to_json(r, &args[1], pos)) == NULL)
					return false;
				sc_val_from_json(out, c->u.a.items[i], false);
				c->u.a.items[i] = j;
				return true;
			}
			break;
		case M_CLEAR:
			if (na == 0)
			{
				if (!writable(r, pos, recv))
					return false;
				c->u.a.count = 0;
				sc_val_null(out);
				return true;
			}
			break;
		case M_SORT:
			if (na == 1)
			{
				const Node *lam = NULL;

				if (!writable(r, pos, recv))
					return false;
				if (n->args[0]->kind == E_LAMBDA)
				{
					if ((lam = arg_lambda(r, n, 0, 2)) == NULL)
						return false;
				}
				else if (args[0].kind != V_NULL)
					return sc_error(r, pos, "illegal_argument_exception",
									"sort takes null (natural order) or a comparator lambda");
				{
					SeJson	  **items;

					if ((items = sc_alloc(r, pos, sizeof(SeJson *) * ((int64) count + 1))) == NULL)
						return false;
					if (count > 0)
						memcpy(items, c->u.a.items, sizeof(SeJson *) * count);
					if (!sort_items(r, pos, items, count, lam, false))
						return false;
					if (c->u.a.count != count)
						return sc_error(r, pos, "concurrent_modification_exception",
										"list modified during sort");
					if (count > 0)
						memcpy(c->u.a.items, items, sizeof(SeJson *) * count);
				}
				sc_val_null(out);
				return true;
			}
			break;
		case M_FOREACH:
			if (na == 1)
			{
				const Node *lam = arg_lambda(r, n, 0, 1);
				SVal		ignored;

				if (lam == NULL)
					return false;
				for (k = 0; k < c->u.a.count; k++)
				{
					SVal		e;

					sc_val_from_json(&e, c->u.a.items[k], recv->ro);
					if (!sc_charge(r, lam->pos, 1) || !sc_call_lambda(r, lam, &e, 1, &ignored))
						return false;
				}
				sc_val_null(out);
				return true;
			}
			break;
		case M_JOIN:
			if (na == 1)
			{
				StringInfoData b;

				if (!arg_string(r, pos, &args[0]) || !charge_n(r, pos, count) ||
					!sc_buf_init(r, pos, &b, 0))
					return false;
				for (k = 0; k < count; k++)
				{
					SVal		e;

					if (k > 0 && !sc_buf_append(r, pos, &b, args[0].u.s, args[0].len))
						return false;
					sc_val_from_json(&e, c->u.a.items[k], false);
					if (!sc_to_string(r, &e, &b, 0, pos))
						return false;
				}
				return sc_make_string(r, pos, &b, out);
			}
			break;
		case M_SUBLIST:
			if (na == 2)
			{
				int			from,
							to;
				SeJson	   *nl;

				if (!arg_int(r, pos, &args[0], &from) || !arg_int(r, pos, &args[1], &to))
					return false;
				if (from < 0 || to > count || from > to)
					return sc_error(r, pos, "index_out_of_bounds_exception",
									"fromIndex: %d, toIndex: %d, size: %d", from, to, count);
				if (!charge_n(r, pos, to - from) || (nl = sc_new_array(r, pos, to - from)) == NULL)
					return false;
				for (k = from; k < to; k++)
				{
					if ((j = sc_move_node(r, c->u.a.items[k], recv->ro, pos)) == NULL)
						return false;
					nl->u.a.items[nl->u.a.count++] = j;
				}
				sc_val_container(out, nl, false);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

/* ---------------------------------------------------------------------
 * Map, keySet, entrySet, Entry
 * ---------------------------------------------------------------------
 */

static bool
map_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	SeJson	   *c = recv->u.c;
	int			na = n->nargs;
	int			pos = n->pos;
	const char *key;
	int			keylen;
	int			k;
	SeJson	   *j;

	switch ((MethodId) n->op)
	{
		case M_GET:
		case M_CONTAINSKEY:
		case M_GETORDEFAULT:
			if ((na == 1 && n->op != M_GETORDEFAULT) || (na == 2 && n->op == M_GETORDEFAULT))
			{
				if (!sc_key_of(r, &args[0], &key, &keylen, pos) ||
					!sc_charge(r, pos, c->u.o.count / 32))
					return false;
				k = sc_map_find(c, key, keylen);
				if (n->op == M_CONTAINSKEY)
					sc_val_bool(out, k >= 0);
				else if (k >= 0)
					sc_val_from_json(out, c->u.o.members[k].value, recv->ro);
				else if (n->op == M_GETORDEFAULT)
					*out = args[1];
				else
					sc_val_null(out);
				return true;
			}
			break;
		case M_CONTAINSVALUE:
			if (na == 1)
			{
				bool		eq = false;

				if (!charge_n(r, pos, c->u.o.count))
					return false;
				for (k = 0; k < c->u.o.count && !eq; k++)
				{
					SVal		e;

					sc_val_from_json(&e, c->u.o.members[k].value, false);
					if (!sc_equals(r, &e, &args[0], true, 0, pos, &eq))
						return false;
				}
				sc_val_bool(out, eq);
				return true;
			}
			break;
		case M_PUT:
		case M_PUTIFABSENT:
			if (na == 2)
			{
				if (!writable(r, pos, recv) || !sc_key_of(r, &args[0], &key, &keylen, pos) ||
					!sc_charge(r, pos, c->u.o.count / 32))
					return false;
				k = sc_map_find(c, key, keylen);
				if (k >= 0)
				{
					sc_val_from_json(out, c->u.o.members[k].value, false);
					if (n->op == M_PUTIFABSENT && out->kind != V_NULL)
						return true;
				}
				else
					sc_val_null(out);
				if ((j = sc_val_to_json(r, &args[1], pos)) == NULL)
					return false;
				return sc_map_put(r, c, key, keylen, j, pos);
			}
			break;
		case M_PUTALL:
			if (na == 1)
			{
				SeJson	   *src;
				SeJsonMember *snap;
				int			cnt;

				if (!writable(r, pos, recv))
					return false;
				if (args[0].kind != V_MAP)
					return arg_cast_error(r, pos, &args[0], "java.util.Map");
				src = args[0].u.c;
				cnt = src->u.o.count;
				if (!charge_n(r, pos, (int64) cnt * (1 + c->u.o.count / 32)) ||
					(snap = sc_alloc(r, pos, sizeof(SeJsonMember) * ((int64) cnt + 1))) == NULL)
					return false;
				if (cnt > 0)
					memcpy(snap, src->u.o.members, sizeof(SeJsonMember) * cnt);
				for (k = 0; k < cnt; k++)
				{
					if ((j = sc_move_node(r, snap[k].value, args[0].ro, pos)) == NULL ||
						!sc_map_put(r, c, snap[k].key, snap[k].keylen, j, pos))
						return false;
				}
				sc_val_null(out);
				return true;
			}
			break;
		case M_REMOVE:
			if (na == 1)
			{
				SeJson	   *old;

				if (!writable(r, pos, recv) || !sc_key_of(r, &args[0], &key, &keylen, pos) ||
					!charge_n(r, pos, c->u.o.count))
					return false;
				if (sc_map_remove(c, key, keylen, &old))
					sc_val_from_json(out, old, false);
				else
					sc_val_null(out);
				return true;
			}
			break;
		case M_SIZE:
			if (na == 0)
			{
				sc_val_int(out, c->u.o.count);
				return true;
			}
			break;
		case M_ISEMPTY:
			if (na == 0)
			{
				sc_val_bool(out, c->u.o.count == 0);
				return true;
			}
			break;
		case M_CLEAR:
			if (na == 0)
			{
				if (!writable(r, pos, recv))
					return false;
				c->u.o.count = 0;
				sc_val_null(out);
				return true;
			}
			break;
		case M_KEYSET:
		case M_ENTRYSET:
			if (na == 0)
			{
				*out = *recv;
				out->kind = n->op == M_KEYSET ? V_KEYSET : V_ENTRYSET;
				return true;
			}
			break;
		case M_VALUES:
			if (na == 0)
			{
				SeJson	   *nl;

				if (!charge_n(r, pos, c->u.o.count) ||
					(nl = sc_new_array(r, pos, c->u.o.count)) == NULL)
					return false;
				for (k = 0; k < c->u.o.count; k++)
				{
					if ((j = sc_move_node(r, c->u.o.members[k].value, recv->ro, pos)) == NULL)
						return false;
					nl->u.a.items[nl->u.a.count++] = j;
				}
				sc_val_container(out, nl, false);
				return true;
			}
			break;
		case M_FOREACH:
			if (na == 1)
			{
				const Node *lam = arg_lambda(r, n, 0, 2);
				SeqSnap		s;
				SVal		es;
				SVal		ignored;

				if (lam == NULL)
					return false;
				es = *recv;
				es.kind = V_ENTRYSET;
				if (!sc_seq_open(r, pos, &es, &s))
					return false;
				for (k = 0; k < s.count; k++)
				{
					SVal		kv[2];

					sc_val_string(&kv[0], s.members[k].key, s.members[k].keylen);
					sc_val_from_json(&kv[1], s.members[k].value, recv->ro);
					if (!sc_charge(r, lam->pos, 1) || !sc_call_lambda(r, lam, kv, 2, &ignored))
						return false;
				}
				sc_val_null(out);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

/* keySet() and entrySet() views. */
static bool
view_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	SeJson	   *c = recv->u.c;
	int			na = n->nargs;
	int			pos = n->pos;
	bool		keys = recv->kind == V_KEYSET;
	int			k;

	switch ((MethodId) n->op)
	{
		case M_SIZE:
			if (na == 0)
			{
				sc_val_int(out, c->u.o.count);
				return true;
			}
			break;
		case M_ISEMPTY:
			if (na == 0)
			{
				sc_val_bool(out, c->u.o.count == 0);
				return true;
			}
			break;
		case M_CONTAINS:
			if (na == 1)
			{
				SeqSnap		s;
				bool		found;

				if (keys && args[0].kind == V_STRING)
				{
					sc_val_bool(out, sc_map_find(c, args[0].u.s, args[0].len) >= 0);
					return charge_n(r, pos, c->u.o.count);
				}
				if (!sc_seq_open(r, pos, recv, &s) || !seq_contains(r, pos, &s, &args[0], &found))
					return false;
				sc_val_bool(out, found);
				return true;
			}
			break;
		case M_REMOVE:
			if (na == 1 && keys)
			{
				SeJson	   *old;

				if (!writable(r, pos, recv) || !charge_n(r, pos, c->u.o.count))
					return false;
				if (args[0].kind != V_STRING)
				{
					sc_val_bool(out, false);
					return true;
				}
				sc_val_bool(out, sc_map_remove(c, args[0].u.s, args[0].len, &old));
				return true;
			}
			break;
		case M_REMOVEIF:
			if (na == 1)
			{
				const Node *lam = arg_lambda(r, n, 0, 1);
				SeqSnap		s;
				bool		any = false;

				if (lam == NULL || !writable(r, pos, recv) || !sc_seq_open(r, pos, recv, &s))
					return false;
				for (k = 0; k < s.count; k++)
				{
					SVal		e;
					bool		drop;
					SeJson	   *old;

					sc_seq_get(&s, k, &e);
					if (!lambda_bool(r, lam, &e, 1, &drop))
						return false;
					if (drop)
					{
						any = true;
						if (!charge_n(r, pos, c->u.o.count))
							return false;
						sc_map_remove(c, s.members[k].key, s.members[k].keylen, &old);
					}
				}
				sc_val_bool(out, any);
				return true;
			}
			break;
		case M_FOREACH:
			if (na == 1)
			{
				const Node *lam = arg_lambda(r, n, 0, 1);
				SeqSnap		s;
				SVal		ignored;

				if (lam == NULL || !sc_seq_open(r, pos, recv, &s))
					return false;
				for (k = 0; k < s.count; k++)
				{
					SVal		e;

					sc_seq_get(&s, k, &e);
					if (!sc_charge(r, lam->pos, 1) || !sc_call_lambda(r, lam, &e, 1, &ignored))
						return false;
				}
				sc_val_null(out);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

static bool
entry_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	SEntry	   *e = recv->u.e;

	switch ((MethodId) n->op)
	{
		case M_GETKEY:
			if (n->nargs == 0)
			{
				sc_val_string(out, e->key, e->keylen);
				return true;
			}
			break;
		case M_GETVALUE:
			if (n->nargs == 0)
			{
				*out = e->value;
				return true;
			}
			break;
		case M_SETVALUE:
			if (n->nargs == 1)
			{
				SeJson	   *j;

				if (!writable(r, n->pos, recv))
					return false;
				if ((j = sc_val_to_json(r, &args[0], n->pos)) == NULL ||
					!sc_map_put(r, e->map, e->key, e->keylen, j, n->pos))
					return false;
				*out = e->value;
				sc_val_from_json(&e->value, j, false);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

/* ---------------------------------------------------------------------
 * String
 * ---------------------------------------------------------------------
 */

#define SEARCH_FAILED (-2)		/* str_search's table was over the memory budget */

/*
 * Byte offset of the first (or, with last, the last) occurrence of needle
 * in hay at or after byte from, -1 if none, or SEARCH_FAILED.  Short
 * needles use memchr plus memcmp; long ones Knuth-Morris-Pratt, so a
 * hostile pair of strings cannot make a search quadratic.
 */
static int
str_search(Run *r, int pos, const char *hay, int haylen, const char *needle, int nlen,
		   int from, bool last)
{
	int			found = -1;
	int		   *fail;
	int			i,
				k;

	if (from < 0)
		from = 0;
	if (nlen == 0)
		return last ? haylen : (from <= haylen ? from : -1);
	if (nlen <= 16)
	{
		i = from;
		while (i + nlen <= haylen)
		{
			const char *c = memchr(hay + i, needle[0], haylen - nlen + 1 - i);

			if (c == NULL)
				break;
			i = c - hay;
			if (memcmp(hay + i, needle, nlen) == 0)
			{
				if (!last)
					return i;
				found = i;
			}
			i++;
		}
		return found;
	}
	if ((fail = sc_alloc(r, pos, sizeof(int) * (int64) nlen)) == NULL)
		return SEARCH_FAILED;
	for (i = 1, k = 0; i < nlen; i++)
	{
		while (k > 0 && needle[i] != needle[k])
			k = fail[k - 1];
		if (needle[i] == needle[k])
			k++;
		fail[i] = k;
	}
	for (i = from, k = 0; i < haylen; i++)
	{
		while (k > 0 && hay[i] != needle[k])
			k = fail[k - 1];
		if (hay[i] == needle[k])
			k++;
		if (k == nlen)
		{
			found = i - nlen + 1;
			if (!last)
				break;
			k = fail[k - 1];
		}
	}
	sc_free(r, fail, sizeof(int) * (int64) nlen);
	return found;
}

static inline int
str_find(Run *r, int pos, const char *hay, int haylen, const char *needle, int nlen, int from)
{
	return str_search(r, pos, hay, haylen, needle, nlen, from, false);
}

/* Decode one UTF-8 character at s[i] (input is valid UTF-8). */
static uint32
utf8_decode(const char *s, int len, int i, int *size)
{
	unsigned char b = (unsigned char) s[i];

	if (b < 0x80 || i + 1 >= len)
	{
		*size = 1;
		return b;
	}
	if (b < 0xE0)
	{
		*size = 2;
		return ((b & 0x1F) << 6) | (s[i + 1] & 0x3F);
	}
	if (b < 0xF0 || i + 3 >= len)
	{
		if (i + 2 >= len)
		{
			*size = 1;
			return b;
		}
		*size = 3;
		return ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
	}
	*size = 4;
	return ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) |
		((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/*
 * Simple case mapping: ASCII, Latin-1, Latin Extended-A pairs, Greek and
 * Cyrillic basic blocks.  Other characters are left alone.
 */
static uint32
case_map(uint32 c, bool upper)
{
	if (c < 0x80)
	{
		if (upper && c >= 'a' && c <= 'z')
			return c - 32;
		if (!upper && c >= 'A' && c <= 'Z')
			return c + 32;
		return c;
	}
	if (upper)
	{
		if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
			(c >= 0x430 && c <= 0x44F))
			return c - 32;
		if (c == 0xFF)
			return 0x178;
		if (c >= 0x450 && c <= 0x45F)
			return c - 80;
		if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
			c != 0x17F)
		{
			bool		pair_odd = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);

			if (pair_odd ? (c % 2 == 0) : (c % 2 == 1))
				return c - 1;
		}
		if (c == 0x3C2)
			return 0x3A3;
		return c;
	}
	if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
		(c >= 0x410 && c <= 0x42F))
		return c + 32;
	if (c == 0x178)
		return 0xFF;
	if (c >= 0x400 && c <= 0x40F)
		return c + 80;
	if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
		c != 0x17F)
	{
		bool		pair_odd = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);

		if (pair_odd ? (c % 2 == 1) : (c % 2 == 0))
			return c + 1;
	}
	return c;
}

static bool
string_case(Run *r, int pos, const SVal *s, bool upper, SVal *out)
{
	StringInfoData b;
	int			i = 0;

	if (!sc_charge(r, pos, s->len / 64) || !sc_buf_init(r, pos, &b, s->len))
		return false;
	while (i < s->len)
	{
		int			size;
		uint32		cp = utf8_decode(s->u.s, s->len, i, &size);
		unsigned char enc[4];

		if (size == 1 && cp >= 0x80)
		{
			if (!sc_buf_append(r, pos, &b, s->u.s + i, 1))
				return false;
		}
		else
		{
			unicode_to_utf8(case_map(cp, upper), enc);
			if (!sc_buf_append(r, pos, &b, (char *) enc, pg_utf_mblen(enc)))
				return false;
		}
		i += size;
	}
	return sc_make_string(r, pos, &b, out);
}

static bool
equals_ignore_case(const SVal *a, const SVal *b)
{
	int			i = 0,
				j = 0;

	while (i < a->len && j < b->len)
	{
		int			sa,
					sb;
		uint32		ca = utf8_decode(a->u.s, a->len, i, &sa);
		uint32		cb = utf8_decode(b->u.s, b->len, j, &sb);

		if (ca != cb && case_map(ca, true) != case_map(cb, true) &&
			case_map(ca, false) != case_map(cb, false))
			return false;
		i += sa;
		j += sb;
	}
	return i == a->len && j == b->len;
}

static bool
substring_error(Run *r, int pos, int begin, int end, int length)
{
	return sc_error(r, pos, "string_index_out_of_bounds_exception",
					"begin %d, end %d, length %d", begin, end, length);
}

/* A new string value for bytes s[0..len) (copied, NUL-terminated). */
static bool
new_string(Run *r, int pos, const char *s, int len, SVal *out)
{
	StringInfoData b;

	return sc_buf_init(r, pos, &b, len) && sc_buf_append(r, pos, &b, s, len) &&
		sc_make_string(r, pos, &b, out);
}

/*
 * Split s on the literal tok into a list: at most limit pieces when limit
 * > 0; strip_trailing drops trailing empty pieces (String.split with limit
 * 0).  As both Java methods, a string without tok (or an empty one) gives
 * a one-element list holding the string.
 */
static bool
split_string(Run *r, int pos, const SVal *s, const char *tok, int toklen, int limit,
			 bool strip_trailing, SVal *out)
{
	SeJson	   *list;
	SVal		piece;
	SeJson	   *j;
	int			i = 0;
	int			at = -1;

	if (!sc_charge(r, pos, s->len / 16) || (list = sc_new_array(r, pos, 4)) == NULL)
		return false;
	if (toklen > 0 && s->len > 0 &&
		(at = str_find(r, pos, s->u.s, s->len, tok, toklen, 0)) == SEARCH_FAILED)
		return false;
	if (at < 0)
	{
		if ((j = sc_val_to_json(r, s, pos)) == NULL ||
			!sc_array_insert(r, list, 0, j, pos))
			return false;
		sc_val_container(out, list, false);
		return true;
	}
	for (;;)
	{
		int			end;

		at = (limit > 0 && list->u.a.count == limit - 1) ? -1 :
			str_find(r, pos, s->u.s, s->len, tok, toklen, i);
		if (at == SEARCH_FAILED)
			return false;
		end = at < 0 ? s->len : at;
		if (!new_string(r, pos, s->u.s + i, end - i, &piece) ||
			(j = sc_val_to_json(r, &piece, pos)) == NULL ||
			!sc_array_insert(r, list, list->u.a.count, j, pos))
			return false;
		if (at < 0)
			break;
		i = at + toklen;
	}
	if (strip_trailing)
		while (list->u.a.count > 0 &&
			   list->u.a.items[list->u.a.count - 1]->u.s.len == 0)
			list->u.a.count--;
	sc_val_container(out, list, false);
	return true;
}

static bool
string_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	const char *s = recv->u.s;
	int			len = recv->len;
	int			na = n->nargs;
	int			pos = n->pos;
	int64		work = len;
	int			k;

	/* every string method is at most linear in its strings: charge that */
	for (k = 0; k < na; k++)
		if (args[k].kind == V_STRING)
			work += args[k].len;
	if (!sc_charge(r, pos, work / 64))
		return false;
	switch ((MethodId) n->op)
	{
		case M_LENGTH:
			if (na == 0)
			{
				sc_val_int(out, se_utf16_length(s, len));
				return true;
			}
			break;
		case M_ISEMPTY:
			if (na == 0)
			{
				sc_val_bool(out, len == 0);
				return true;
			}
			break;
		case M_CONTAINS:
			if (na == 1)
			{
				int			at;

				if (!arg_string(r, pos, &args[0]) || !sc_charge(r, pos, len / 64) ||
					(at = str_find(r, pos, s, len, args[0].u.s, args[0].len, 0)) == SEARCH_FAILED)
					return false;
				sc_val_bool(out, at >= 0);
				return true;
			}
			break;
		case M_STARTSWITH:
			if (na == 1 || na == 2)
			{
				int			off = 0;

				if (!arg_string(r, pos, &args[0]))
					return false;
				if (na == 2)
				{
					int			u;

					if (!arg_int(r, pos, &args[1], &u))
						return false;
					if (u < 0 || u > se_utf16_length(s, len))
					{
						sc_val_bool(out, false);
						return true;
					}
					off = sc_utf16_to_byte(s, len, u);
				}
				sc_val_bool(out, len - off >= args[0].len &&
							memcmp(s + off, args[0].u.s, args[0].len) == 0);
				return true;
			}
			break;
		case M_ENDSWITH:
			if (na == 1)
			{
				if (!arg_string(r, pos, &args[0]))
					return false;
				sc_val_bool(out, len >= args[0].len &&
							memcmp(s + len - args[0].len, args[0].u.s, args[0].len) == 0);
				return true;
			}
			break;
		case M_TOLOWERCASE:
		case M_TOUPPERCASE:
			if (na == 0)
				return string_case(r, pos, recv, n->op == M_TOUPPERCASE, out);
			break;
		case M_TRIM:
			if (na == 0)
			{
				int			b = 0,
							e = len;

				while (b < e && (unsigned char) s[b] <= ' ')
					b++;
				while (e > b && (unsigned char) s[e - 1] <= ' ')
					e--;
				if (b == 0 && e == len)
				{
					*out = *recv;
					return true;
				}
				return new_string(r, pos, s + b, e - b, out);
			}
			break;
		case M_SUBSTRING:
			if (na == 1 || na == 2)
			{
				int			ulen = se_utf16_length(s, len);
				int			begin,
							end = ulen;

				if (!arg_int(r, pos, &args[0], &begin) ||
					(na == 2 && !arg_int(r, pos, &args[1], &end)))
					return false;
				if (begin < 0 || end > ulen || begin > end)
					return substring_error(r, pos, begin, end, ulen);
				{
					int			bb = sc_utf16_to_byte(s, len, begin);
					int			eb = sc_utf16_to_byte(s, len, end);

					return new_string(r, pos, s + bb, eb - bb, out);
				}
			}
			break;
		case M_INDEXOF:
		case M_LASTINDEXOF:
			if (na == 1 || (na == 2 && n->op == M_INDEXOF))
			{
				int			from = 0;
				int			at;

				if (!arg_string(r, pos, &args[0]) || !sc_charge(r, pos, len / 64))
					return false;
				if (na == 2)
				{
					int			u;

					if (!arg_int(r, pos, &args[1], &u))
						return false;
					if (u < 0)
						u = 0;
					from = sc_utf16_to_byte(s, len, u);
					if (u > se_utf16_length(s, len))
					{
						sc_val_int(out, -1);
						return true;
					}
				}
				at = str_search(r, pos, s, len, args[0].u.s, args[0].len, from,
								n->op == M_LASTINDEXOF);
				if (at == SEARCH_FAILED)
					return false;
				sc_val_int(out, at < 0 ? -1 : sc_byte_to_utf16(s, len, at));
				return true;
			}
			break;
		case M_REPLACE:
			if (na == 2)
			{
				StringInfoData b;
				const SVal *from = &args[0];
				const SVal *to = &args[1];
				int			i = 0;

				if (!arg_string(r, pos, from) || !arg_string(r, pos, to) ||
					!sc_charge(r, pos, len / 64) || !sc_buf_init(r, pos, &b, len))
					return false;
				if (from->len == 0)
				{
					/* Java inserts the replacement around every character */
					if (!sc_buf_append(r, pos, &b, to->u.s, to->len))
						return false;
					while (i < len)
					{
						int			size;

						(void) utf8_decode(s, len, i, &size);
						if (!sc_buf_append(r, pos, &b, s + i, size) ||
							!sc_buf_append(r, pos, &b, to->u.s, to->len))
							return false;
						i += size;
					}
					return sc_make_string(r, pos, &b, out);
				}
				for (;;)
				{
					int			at = str_find(r, pos, s, len, from->u.s, from->len, i);

					if (at == SEARCH_FAILED)
						return false;
					if (at < 0)
						break;
					if (!sc_buf_append(r, pos, &b, s + i, at - i) ||
						!sc_buf_append(r, pos, &b, to->u.s, to->len))
						return false;
					i = at + from->len;
				}
				return sc_buf_append(r, pos, &b, s + i, len - i) &&
					sc_make_string(r, pos, &b, out);
			}
			break;
		case M_EQUALSIGNORECASE:
			if (na == 1)
			{
				sc_val_bool(out, args[0].kind == V_STRING && equals_ignore_case(recv, &args[0]));
				return true;
			}
			break;
		case M_COMPARETO:
			if (na == 1)
			{
				int			i = 0,
							j = 0;

				if (!arg_string(r, pos, &args[0]))
					return false;
				/* Java: difference of the first differing chars, else of lengths */
				while (i < len && j < args[0].len)
				{
					int			sa,
								sb;
					uint32		ca = utf8_decode(s, len, i, &sa);
					uint32		cb = utf8_decode(args[0].u.s, args[0].len, j, &sb);

					if (ca != cb)
					{
						sc_val_int(out, (int32) ca - (int32) cb);
						return true;
					}
					i += sa;
					j += sb;
				}
				sc_val_int(out, se_utf16_length(s, len) - se_utf16_length(args[0].u.s, args[0].len));
				return true;
			}
			break;
		case M_CHARAT:
			if (na == 1)
			{
				int			u,
							b,
							size;
				int			ulen = se_utf16_length(s, len);

				if (!arg_int(r, pos, &args[0], &u))
					return false;
				if (u < 0 || u >= ulen)
					return sc_error(r, pos, "string_index_out_of_bounds_exception",
									"index %d, length %d", u, ulen);
				b = sc_utf16_to_byte(s, len, u);
				(void) utf8_decode(s, len, b, &size);
				return new_string(r, pos, s + b, size, out);
			}
			break;
		case M_SPLITONTOKEN:
		case M_SPLIT:
			if (na == 1 || na == 2)
			{
				int			limit = 0;
				const char *tok;
				int			toklen;

				if (!arg_string(r, pos, &args[0]) ||
					(na == 2 && !arg_int(r, pos, &args[1], &limit)))
					return false;
				tok = args[0].u.s;
				toklen = args[0].len;
				if (n->op == M_SPLITONTOKEN)
					return split_string(r, pos, recv, tok, toklen, limit > 0 ? limit : -1, false, out);
				/* String.split takes a regex: only literal separators are supported */
				if (toklen == 2 && tok[0] == '\\' && !((tok[1] >= '0' && tok[1] <= '9') ||
														 (tok[1] >= 'a' && tok[1] <= 'z') ||
														 (tok[1] >= 'A' && tok[1] <= 'Z')))
				{
					tok++;
					toklen--;
				}
				else if (toklen == 0 || strpbrk(tok, ".$|()[]{}^?*+\\") != NULL)
					return sc_error(r, pos, "illegal_argument_exception",
									"split with a regular expression is not supported; use splitOnToken");
				return split_string(r, pos, recv, tok, toklen, limit, limit == 0, out);
			}
			break;
		case M_CONCAT:
			if (na == 1)
			{
				StringInfoData b;

				return arg_string(r, pos, &args[0]) &&
					sc_buf_init(r, pos, &b, (int64) len + args[0].len) &&
					sc_buf_append(r, pos, &b, s, len) &&
					sc_buf_append(r, pos, &b, args[0].u.s, args[0].len) &&
					sc_make_string(r, pos, &b, out);
			}
			break;
		case M_HASHCODE:
			if (na == 0)
			{
				uint32		h = 0;
				int			i = 0;

				while (i < len)
				{
					int			size;
					uint32		cp = utf8_decode(s, len, i, &size);

					if (cp >= 0x10000)
					{
						h = h * 31 + (0xD800 + ((cp - 0x10000) >> 10));
						h = h * 31 + (0xDC00 + ((cp - 0x10000) & 0x3FF));
					}
					else
						h = h * 31 + cp;
					i += size;
				}
				sc_val_int(out, (int32) h);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

/* ---------------------------------------------------------------------
 * Numbers and booleans
 * ---------------------------------------------------------------------
 */

static bool
number_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	if (n->nargs == 0)
	{
		switch ((MethodId) n->op)
		{
			case M_INTVALUE:
				if (recv->kind == V_LONG)
					sc_val_int(out, (int32) (uint32) (uint64) recv->u.l);
				else if (recv->kind == V_INT)
					sc_val_int(out, recv->u.i);
				else
					sc_val_int(out, sc_d2i(sc_as_double(recv)));
				return true;
			case M_LONGVALUE:
				sc_val_long(out, sc_as_long(recv));
				return true;
			case M_DOUBLEVALUE:
				sc_val_double(out, sc_as_double(recv));
				return true;
			case M_FLOATVALUE:
				sc_val_float(out, sc_d2f(sc_as_double(recv)));
				return true;
			default:
				break;
		}
	}
	if (n->nargs == 1 && n->op == M_COMPARETO)
	{
		bool		ok;
		int			c;

		if (!SV_IS_NUM(args[0].kind))
			return arg_cast_error(r, n->pos, &args[0], sc_type_name(recv));
		c = natural_compare(r, n->pos, recv, &args[0], &ok);
		if (!ok)
			return false;
		sc_val_int(out, c);
		return true;
	}
	return no_method(r, n, recv);
}

bool
sc_call_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	/* methods every object has */
	if (n->op == M_TOSTRING && n->nargs == 0)
	{
		StringInfoData b;

		if (recv->kind == V_STRING)
		{
			*out = *recv;
			return true;
		}
		return sc_buf_init(r, n->pos, &b, 0) && sc_to_string(r, recv, &b, 0, n->pos) &&
			sc_make_string(r, n->pos, &b, out);
	}
	if (n->op == M_EQUALS && n->nargs == 1)
	{
		bool		eq;

		if (!sc_equals(r, recv, &args[0], true, 0, n->pos, &eq))
			return false;
		sc_val_bool(out, eq);
		return true;
	}
	switch ((VKind) recv->kind)
	{
		case V_DOCVALS:
		case V_DATE:
			return sc_doc_method(r, n, recv, args, out);
		case V_LIST:
			return list_method(r, n, recv, args, out);
		case V_MAP:
			return map_method(r, n, recv, args, out);
		case V_KEYSET:
		case V_ENTRYSET:
			return view_method(r, n, recv, args, out);
		case V_ENTRY:
			return entry_method(r, n, recv, args, out);
		case V_STRING:
			return string_method(r, n, recv, args, out);
		case V_INT:
		case V_LONG:
		case V_FLOAT:
		case V_DOUBLE:
			return number_method(r, n, recv, args, out);
		case V_BOOL:
			if (n->op == M_COMPARETO && n->nargs == 1)
			{
				if (args[0].kind != V_BOOL)
					return arg_cast_error(r, n->pos, &args[0], "java.lang.Boolean");
				sc_val_int(out, (int) recv->u.b - (int) args[0].u.b);
				return true;
			}
			break;
		case V_CTX:
			if ((n->op == M_GET || n->op == M_CONTAINSKEY) && n->nargs == 1)
			{
				if (!arg_string(r, n->pos, &args[0]))
					return false;
				if (n->op == M_CONTAINSKEY)
				{
					SVal		ignored;

					sc_val_bool(out, sc_ctx_lookup(r, args[0].u.s, args[0].len, &ignored));
					return true;
				}
				(void) sc_ctx_lookup(r, args[0].u.s, args[0].len, out);
				return true;
			}
			break;
		default:
			break;
	}
	return no_method(r, n, recv);
}

/* ---------------------------------------------------------------------
 * Static calls
 * ---------------------------------------------------------------------
 */

static bool
number_format_error(Run *r, int pos, const SVal *s)
{
	if (s->kind == V_NULL)
		return sc_error(r, pos, "number_format_exception", "Cannot parse null string: null");
	return sc_error(r, pos, "number_format_exception", "For input string: \"%s\"",
					s->kind == V_STRING ? sc_abbrev(s->u.s, s->len) : "");
}

/* Java Long.parseLong syntax: [+-]digits. */
static bool
parse_integer(Run *r, int pos, const SVal *s, int64 min, int64 max, int64 *out)
{
	const char *p;
	int			i = 0;
	bool		neg = false;
	uint64		v = 0;
	uint64		limit;

	if (s->kind != V_STRING)
		return number_format_error(r, pos, s);
	if (!sc_charge(r, pos, s->len / 64))
		return false;
	p = s->u.s;
	if (s->len > 0 && (p[0] == '-' || p[0] == '+'))
	{
		neg = p[0] == '-';
		i = 1;
	}
	if (i >= s->len)
		return number_format_error(r, pos, s);
	limit = neg ? (uint64) (-(min + 1)) + 1 : (uint64) max;
	for (; i < s->len; i++)
	{
		if (p[i] < '0' || p[i] > '9')
			return number_format_error(r, pos, s);
		if (v > (limit - (uint64) (p[i] - '0')) / 10)
			return number_format_error(r, pos, s);
		v = v * 10 + (p[i] - '0');
	}
	if (v > limit)
		return number_format_error(r, pos, s);
	*out = neg ? (v == (uint64) PG_INT64_MAX + 1 ? PG_INT64_MIN : -(int64) v) : (int64) v;
	return true;
}

/* Java Double.parseDouble: trimmed decimal, NaN, Infinity, d/f suffix. */
static bool
parse_double(Run *r, int pos, const SVal *s, double *out)
{
	const char *p;
	int			b = 0,
				e;
	int			i;
	bool		digits = false;
	char	   *copy;

	if (s->kind != V_STRING)
		return number_format_error(r, pos, s);
	if (!sc_charge(r, pos, s->len / 64))
		return false;
	p = s->u.s;
	e = s->len;
	while (b < e && (unsigned char) p[b] <= ' ')
		b++;
	while (e > b && (unsigned char) p[e - 1] <= ' ')
		e--;
	i = b;
	if (i < e && (p[i] == '+' || p[i] == '-'))
		i++;
	if (e - i == 3 && memcmp(p + i, "NaN", 3) == 0)
	{
		*out = NAN;
		return true;
	}
	if (e - i == 8 && memcmp(p + i, "Infinity", 8) == 0)
	{
		*out = p[b] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (e > i && (p[e - 1] == 'd' || p[e - 1] == 'D' || p[e - 1] == 'f' || p[e - 1] == 'F'))
		e--;
	for (; i < e && p[i] >= '0' && p[i] <= '9'; i++)
		digits = true;
	if (i < e && p[i] == '.')
		for (i++; i < e && p[i] >= '0' && p[i] <= '9'; i++)
			digits = true;
	if (!digits)
		return number_format_error(r, pos, s);
	if (i < e && (p[i] == 'e' || p[i] == 'E'))
	{
		bool		ed = false;

		i++;
		if (i < e && (p[i] == '+' || p[i] == '-'))
			i++;
		for (; i < e && p[i] >= '0' && p[i] <= '9'; i++)
			ed = true;
		if (!ed)
			return number_format_error(r, pos, s);
	}
	if (i != e)
		return number_format_error(r, pos, s);
	if ((copy = sc_alloc(r, pos, e - b + 1)) == NULL)
		return false;
	memcpy(copy, p + b, e - b);
	*out = strtod(copy, NULL);
	sc_free(r, copy, e - b + 1);
	return true;
}

static bool
need_number(Run *r, int pos, const SVal *v)
{
	if (SV_IS_NUM(v->kind))
		return true;
	return arg_cast_error(r, pos, v, "java.lang.Number");
}

/* Java Math.round(double): floor(x + 0.5) computed without the rounding slip. */
static int64
java_round(double x)
{
	double		f;

	if (isnan(x))
		return 0;
	f = floor(x);
	if (x - f >= 0.5)
		f += 1;
	return sc_d2l(f);
}

static bool
math_minmax(const SVal *a, const SVal *b, bool is_max, SVal *out)
{
	VKind		k = (VKind) Max(a->kind, b->kind);

	if (k == V_INT)
		sc_val_int(out, is_max ? Max(a->u.i, b->u.i) : Min(a->u.i, b->u.i));
	else if (k == V_LONG)
	{
		int64		x = sc_as_long(a),
					y = sc_as_long(b);

		sc_val_long(out, is_max ? Max(x, y) : Min(x, y));
	}
	else
	{
		double		x = sc_as_double(a),
					y = sc_as_double(b);
		double		res;

		if (isnan(x) || isnan(y))
			res = NAN;
		else if (x == y)
			res = (signbit(x) != signbit(y)) ? (is_max ? 0.0 : -0.0) : x;
		else
			res = is_max ? (x > y ? x : y) : (x < y ? x : y);
		if (k == V_FLOAT)
			sc_val_float(out, (float) res);
		else
			sc_val_double(out, res);
	}
	return true;
}

bool
sc_call_static(Run *r, const Node *n, SVal *args, SVal *out)
{
	int			pos = n->pos;
	SVal	   *a = &args[0];

	switch ((StaticId) n->op)
	{
		case ST_MATH_ABS:
			if (!need_number(r, pos, a))
				return false;
			switch (a->kind)
			{
				case V_INT:
					sc_val_int(out, a->u.i < 0 ? (int32) (0u - (uint32) a->u.i) : a->u.i);
					break;
				case V_LONG:
					sc_val_long(out, a->u.l < 0 ? (int64) (0 - (uint64) a->u.l) : a->u.l);
					break;
				case V_FLOAT:
					sc_val_float(out, fabsf(a->u.f));
					break;
				default:
					sc_val_double(out, fabs(a->u.d));
					break;
			}
			return true;
		case ST_MATH_MAX:
		case ST_MATH_MIN:
			if (!need_number(r, pos, &args[0]) || !need_number(r, pos, &args[1]))
				return false;
			return math_minmax(&args[0], &args[1], n->op == ST_MATH_MAX, out);
		case ST_MATH_FLOOR:
		case ST_MATH_CEIL:
		case ST_MATH_SQRT:
		case ST_MATH_LOG:
		case ST_MATH_LOG10:
		case ST_MATH_EXP:
		case ST_MATH_CBRT:
			{
				double		x;

				if (!need_number(r, pos, a))
					return false;
				x = sc_as_double(a);
				switch (n->op)
				{
					case ST_MATH_FLOOR:
						x = floor(x);
						break;
					case ST_MATH_CEIL:
						x = ceil(x);
						break;
					case ST_MATH_SQRT:
						x = sqrt(x);
						break;
					case ST_MATH_LOG:
						x = log(x);
						break;
					case ST_MATH_LOG10:
						x = log10(x);
						break;
					case ST_MATH_EXP:
						x = exp(x);
						break;
					default:
						x = cbrt(x);
						break;
				}
				sc_val_double(out, x);
				return true;
			}
		case ST_MATH_SIGNUM:
			{
				double		x;

				if (!need_number(r, pos, a))
					return false;
				x = sc_as_double(a);
				x = isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x;
				if (a->kind == V_FLOAT)
					sc_val_float(out, (float) x);
				else
					sc_val_double(out, x);
				return true;
			}
		case ST_MATH_POW:
			if (!need_number(r, pos, &args[0]) || !need_number(r, pos, &args[1]))
				return false;
			sc_val_double(out, pow(sc_as_double(&args[0]), sc_as_double(&args[1])));
			return true;
		case ST_MATH_ROUND:
			if (!need_number(r, pos, a))
				return false;
			if (a->kind == V_INT)
				sc_val_int(out, a->u.i);
			else if (a->kind == V_LONG)
				sc_val_long(out, a->u.l);
			else if (a->kind == V_FLOAT)
			{
				int64		l = java_round(a->u.f);

				sc_val_int(out, l > PG_INT32_MAX ? PG_INT32_MAX : l < PG_INT32_MIN ? PG_INT32_MIN : (int32) l);
			}
			else
				sc_val_long(out, java_round(a->u.d));
			return true;
		case ST_PARSE_INT:
		case ST_VALUEOF_INT:
			{
				int64		v;

				if (n->op == ST_VALUEOF_INT && SV_IS_NUM(a->kind))
				{
					*out = *a;
					return sc_coerce(r, pos, DT_INT, out, true);
				}
				if (!parse_integer(r, pos, a, PG_INT32_MIN, PG_INT32_MAX, &v))
					return false;
				sc_val_int(out, (int32) v);
				return true;
			}
		case ST_PARSE_LONG:
		case ST_VALUEOF_LONG:
			{
				int64		v;

				if (n->op == ST_VALUEOF_LONG && SV_IS_NUM(a->kind))
				{
					*out = *a;
					return sc_coerce(r, pos, DT_LONG, out, true);
				}
				if (!parse_integer(r, pos, a, PG_INT64_MIN, PG_INT64_MAX, &v))
					return false;
				sc_val_long(out, v);
				return true;
			}
		case ST_PARSE_DOUBLE:
		case ST_VALUEOF_DOUBLE:
		case ST_PARSE_FLOAT:
		case ST_VALUEOF_FLOAT:
			{
				double		d = 0;
				bool		isfloat = n->op == ST_PARSE_FLOAT || n->op == ST_VALUEOF_FLOAT;

				if (SV_IS_NUM(a->kind) && (n->op == ST_VALUEOF_DOUBLE || n->op == ST_VALUEOF_FLOAT))
					d = sc_as_double(a);
				else if (!parse_double(r, pos, a, &d))
					return false;
				if (isfloat)
					sc_val_float(out, sc_d2f(d));
				else
					sc_val_double(out, d);
				return true;
			}
		case ST_PARSE_BOOLEAN:
		case ST_VALUEOF_BOOLEAN:
			if (a->kind == V_BOOL)
			{
				*out = *a;
				return true;
			}
			sc_val_bool(out, a->kind == V_STRING && a->len == 4 &&
						pg_strncasecmp(a->u.s, "true", 4) == 0);
			return true;
		case ST_STRING_VALUEOF:
		case ST_TOSTRING:
			{
				StringInfoData b;

				if (a->kind == V_STRING)
				{
					*out = *a;
					return true;
				}
				return sc_buf_init(r, pos, &b, 0) && sc_to_string(r, a, &b, 0, pos) &&
					sc_make_string(r, pos, &b, out);
			}
		case ST_STRING_JOIN:
			{
				SeqSnap		s;
				StringInfoData b;
				int			k;

				if (!arg_string(r, pos, &args[0]) || !sc_seq_open(r, pos, &args[1], &s) ||
					!sc_buf_init(r, pos, &b, 0))
					return false;
				for (k = 0; k < s.count; k++)
				{
					SVal		e;

					if (k > 0 && !sc_buf_append(r, pos, &b, args[0].u.s, args[0].len))
						return false;
					sc_seq_get(&s, k, &e);
					if (!sc_to_string(r, &e, &b, 0, pos))
						return false;
				}
				return sc_make_string(r, pos, &b, out);
			}
		case ST_OBJECTS_EQUALS:
			{
				bool		eq;

				if (!sc_equals(r, &args[0], &args[1], true, 0, pos, &eq))
					return false;
				sc_val_bool(out, eq);
				return true;
			}
		case ST_OBJECTS_ISNULL:
			sc_val_bool(out, a->kind == V_NULL);
			return true;
		case ST_OBJECTS_NONNULL:
			sc_val_bool(out, a->kind != V_NULL);
			return true;
		case ST_COLLECTIONS_SORT:
		case ST_COLLECTIONS_REVERSE:
			{
				SeJson	   *c;
				int			k;

				if (a->kind != V_LIST)
					return arg_cast_error(r, pos, a, "java.util.List");
				if (!writable(r, pos, a))
					return false;
				c = a->u.c;
				if (n->op == ST_COLLECTIONS_SORT)
				{
					SeJson	  **items;
					int			count = c->u.a.count;

					if ((items = sc_alloc(r, pos, sizeof(SeJson *) * ((int64) count + 1))) == NULL)
						return false;
					if (count > 0)
						memcpy(items, c->u.a.items, sizeof(SeJson *) * count);
					if (!sort_items(r, pos, items, count, NULL, false))
						return false;
					if (count > 0)
						memcpy(c->u.a.items, items, sizeof(SeJson *) * count);
				}
				else
				{
					if (!charge_n(r, pos, c->u.a.count))
						return false;
					for (k = 0; k < c->u.a.count / 2; k++)
					{
						SeJson	   *t = c->u.a.items[k];

						c->u.a.items[k] = c->u.a.items[c->u.a.count - 1 - k];
						c->u.a.items[c->u.a.count - 1 - k] = t;
					}
				}
				sc_val_null(out);
				return true;
			}
	}
	return sc_error(r, pos, "illegal_argument_exception", "unknown static call [%s]", n->name);
}

/* new ArrayList(), new ArrayList(collection), new HashMap(), new HashMap(map). */
bool
sc_new_instance(Run *r, const Node *n, SVal *args, SVal *out)
{
	int			pos = n->pos;
	int			k;

	if (n->type == DT_LIST)
	{
		SeJson	   *list;

		if (n->nargs == 1 && args[0].kind != V_INT)
		{
			SeqSnap		s;

			if (!sc_seq_open(r, pos, &args[0], &s) || (list = sc_new_array(r, pos, s.count)) == NULL)
				return false;
			for (k = 0; k < s.count; k++)
			{
				SeJson	   *j = seq_node(r, &s, k, pos);

				if (j == NULL)
					return false;
				list->u.a.items[list->u.a.count++] = j;
			}
		}
		else if ((list = sc_new_array(r, pos, 0)) == NULL)
			return false;
		sc_val_container(out, list, false);
		return true;
	}
	else
	{
		SeJson	   *map;

		if (n->nargs == 1 && args[0].kind != V_INT)
		{
			SeJson	   *src;

			if (args[0].kind != V_MAP)
				return arg_cast_error(r, pos, &args[0], "java.util.Map");
			src = args[0].u.c;
			if (!charge_n(r, pos, src->u.o.count) ||
				(map = sc_new_object(r, pos, src->u.o.count)) == NULL)
				return false;
			/* keys of a map are distinct: copy members without lookups */
			for (k = 0; k < src->u.o.count; k++)
			{
				SeJson	   *j = sc_move_node(r, src->u.o.members[k].value, args[0].ro, pos);

				if (j == NULL)
					return false;
				map->u.o.members[k] = src->u.o.members[k];
				map->u.o.members[k].value = j;
			}
			map->u.o.count = src->u.o.count;
		}
		else if ((map = sc_new_object(r, pos, 0)) == NULL)
			return false;
		sc_val_container(out, map, false);
		return true;
	}
}
