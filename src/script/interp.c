/*-------------------------------------------------------------------------
 *
 * interp.c
 *	  Tree-walking interpreter: statements, operators, assignments and the
 *	  ctx map (se_script_run).
 *
 * Every statement executed (blocks included) costs one unit of the run's
 * statement budget, so loops cannot run away; builtins that walk
 * collections or strings charge in proportion to the work.  Recursion is
 * bounded by the AST height checked at compile time.  A run allocates only
 * its locals array up front; evaluation itself allocates only for values
 * it creates (strings, containers, JSON nodes for stored numbers), each
 * charged to the memory budget before it is made (sc_alloc).
 *
 * Numbers follow Java: binary numeric promotion int < long < float <
 * double, 32- and 64-bit wrap-around, integer division truncating, "/ by
 * zero" for integral division and remainder, Java's saturating
 * double-to-integer casts.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "port/pg_bitutils.h"
#include "script/script_int.h"

typedef enum Flow
{
	F_NORMAL,
	F_BREAK,
	F_CONTINUE,
	F_RETURN,
	F_ERROR
} Flow;

/* A place a value can be stored: local, map member, list element, ctx key. */
typedef enum RefKind
{
	R_LOCAL,
	R_MAP,
	R_LIST,
	R_CTX
} RefKind;

typedef struct Ref
{
	RefKind		kind;
	int			slot;
	SeJson	   *c;
	bool		ro;
	const char *key;
	int			keylen;
	int			index;
	CtxKey		ctxkey;
} Ref;

static Flow exec(Run *r, const Node *n);

/* ---------------------------------------------------------------------
 * Errors and budgets
 * ---------------------------------------------------------------------
 */

bool
sc_error(Run *r, int pos, const char *cause, const char *fmt,...)
{
	StringInfoData msg;
	va_list		args;

	if (se_error_is_set(r->err))
		return false;
	initStringInfo(&msg);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}
	if (r->script != NULL && pos >= 0)
	{
		int			line,
					col;

		sc_position(r->script->source, r->script->srclen, pos, &line, &col);
		se_error_set(r->err, 400, "script_exception", "runtime error at [%d:%d]: %s",
					 line, col, msg.data);
	}
	else
		se_error_set(r->err, 400, "script_exception", "runtime error: %s", msg.data);
	if (r->ctx != NULL)
	{
		r->ctx->error_cause = cause;
		r->ctx->error_offset = pos;
	}
	return false;
}

bool
sc_charge(Run *r, int pos, int64 units)
{
	r->steps -= units;
	if (r->steps < 0)
		return sc_error(r, pos, "painless_error",
						"The maximum number of statements that can be executed (%lld) has been reached.",
						(long long) (r->ctx ? r->ctx->max_statements : 0));
	return true;
}

/*
 * What an allocation of bytes really takes from the process: AllocSet
 * rounds small requests up to a power of 2 and gives larger ones a block
 * of their own, each with a header.
 */
static int64
footprint(int64 bytes)
{
	if (bytes <= SC_CHUNK_LIMIT)
		return (int64) pg_nextpower2_64(Max(bytes, 8)) + SC_CHUNK_OVERHEAD;
	return MAXALIGN(bytes) + SC_CHUNK_OVERHEAD + SC_BLOCK_OVERHEAD;
}

/* Charge an allocation of bytes to the memory budget, before it is made. */
bool
sc_alloc_ok(Run *r, int pos, int64 bytes)
{
	/* one chunk must stay below palloc's limit, whatever the budget */
	if (bytes >= SC_MAX_ALLOC)
		return sc_error(r, pos, "circuit_breaking_exception",
						"script allocation of %lld bytes is too large", (long long) bytes);
	r->mem -= footprint(bytes);
	if (r->mem < 0)
		return sc_error(r, pos, "circuit_breaking_exception",
						"script exceeded the memory limit of %lld bytes",
						(long long) (r->ctx ? r->ctx->max_memory : 0));
	return true;
}

/* Zeroed memory for the run, charged first; NULL (err set) over budget. */
void *
sc_alloc(Run *r, int pos, int64 bytes)
{
	if (!sc_alloc_ok(r, pos, bytes))
		return NULL;
	return palloc0(bytes);
}

/*
 * Free what sc_alloc gave (bytes as asked for), giving the charge back:
 * large chunks return to malloc, small ones to free lists the run reuses.
 */
void
sc_free(Run *r, void *p, int64 bytes)
{
	pfree(p);
	r->mem += footprint(bytes);
}

static bool
npe(Run *r, int pos, const char *what, const char *name)
{
	if (name != NULL)
		return sc_error(r, pos, "null_pointer_exception", "cannot %s [%s] of null", what, name);
	return sc_error(r, pos, "null_pointer_exception", "cannot %s of null", what);
}

static bool
cast_error(Run *r, int pos, const SVal *v, const char *to)
{
	if (v->kind == V_NULL)
		return sc_error(r, pos, "null_pointer_exception", "cannot cast null to [%s]", to);
	return sc_error(r, pos, "class_cast_exception", "cannot cast [%s] to [%s]",
					sc_type_name(v), to);
}

/* ---------------------------------------------------------------------
 * Conversions
 * ---------------------------------------------------------------------
 */

static bool
as_bool(Run *r, int pos, const SVal *v, bool *b)
{
	if (v->kind == V_BOOL)
	{
		*b = v->u.b;
		return true;
	}
	return cast_error(r, pos, v, "boolean");
}

/* Convert number v to numeric kind k (a Java cast). */
static void
num_convert(SVal *v, VKind k)
{
	SVal		o;

	if (v->kind == k)
		return;
	switch (k)
	{
		case V_INT:
			if (v->kind == V_LONG)
				sc_val_int(&o, (int32) (uint32) (uint64) v->u.l);
			else
				sc_val_int(&o, sc_d2i(sc_as_double(v)));
			break;
		case V_LONG:
			if (v->kind == V_INT)
				sc_val_long(&o, v->u.i);
			else
				sc_val_long(&o, sc_d2l(sc_as_double(v)));
			break;
		case V_FLOAT:
			sc_val_float(&o, sc_d2f(sc_as_double(v)));
			break;
		default:
			sc_val_double(&o, sc_as_double(v));
			break;
	}
	*v = o;
}

/*
 * Convert v for a typed local or a cast.  Numbers convert between numeric
 * types as a Java cast does (loose typing: no narrowing error); other
 * mismatches are class_cast_exception; primitives refuse null.
 */
bool
sc_coerce(Run *r, int pos, int dtype, SVal *v, bool is_cast)
{
	switch ((DType) dtype)
	{
		case DT_DEF:
			return true;
		case DT_INT:
		case DT_LONG:
		case DT_FLOAT:
		case DT_DOUBLE:
			if (!SV_IS_NUM(v->kind))
				return cast_error(r, pos, v, sc_dtype_name(dtype));
			num_convert(v, dtype == DT_INT ? V_INT : dtype == DT_LONG ? V_LONG :
						dtype == DT_FLOAT ? V_FLOAT : V_DOUBLE);
			return true;
		case DT_INTEGER_BOX:
		case DT_LONG_BOX:
		case DT_FLOAT_BOX:
		case DT_DOUBLE_BOX:
			if (v->kind == V_NULL)
				return true;
			if (!SV_IS_NUM(v->kind))
				return cast_error(r, pos, v, sc_dtype_name(dtype));
			num_convert(v, dtype == DT_INTEGER_BOX ? V_INT : dtype == DT_LONG_BOX ? V_LONG :
						dtype == DT_FLOAT_BOX ? V_FLOAT : V_DOUBLE);
			return true;
		case DT_NUMBER:
			if (v->kind == V_NULL || SV_IS_NUM(v->kind))
				return true;
			return cast_error(r, pos, v, sc_dtype_name(dtype));
		case DT_BOOLEAN:
			if (v->kind == V_BOOL)
				return true;
			return cast_error(r, pos, v, "boolean");
		case DT_BOOLEAN_BOX:
			if (v->kind == V_BOOL || v->kind == V_NULL)
				return true;
			return cast_error(r, pos, v, sc_dtype_name(dtype));
		case DT_STRING:
			if (v->kind == V_STRING || v->kind == V_NULL)
				return true;
			return cast_error(r, pos, v, sc_dtype_name(dtype));
		case DT_LIST:
			if (v->kind == V_LIST || v->kind == V_KEYSET || v->kind == V_ENTRYSET ||
				v->kind == V_NULL)
				return true;
			return cast_error(r, pos, v, sc_dtype_name(dtype));
		case DT_MAP:
			if (v->kind == V_MAP || v->kind == V_CTX || v->kind == V_NULL)
				return true;
			return cast_error(r, pos, v, sc_dtype_name(dtype));
	}
	return true;
}

static bool
instance_of(const SVal *v, int dtype)
{
	switch ((DType) dtype)
	{
		case DT_DEF:
			return v->kind != V_NULL;
		case DT_INT:
		case DT_INTEGER_BOX:
			return v->kind == V_INT;
		case DT_LONG:
		case DT_LONG_BOX:
			return v->kind == V_LONG;
		case DT_FLOAT:
		case DT_FLOAT_BOX:
			return v->kind == V_FLOAT;
		case DT_DOUBLE:
		case DT_DOUBLE_BOX:
			return v->kind == V_DOUBLE;
		case DT_BOOLEAN:
		case DT_BOOLEAN_BOX:
			return v->kind == V_BOOL;
		case DT_STRING:
			return v->kind == V_STRING;
		case DT_LIST:
			return v->kind == V_LIST || v->kind == V_KEYSET || v->kind == V_ENTRYSET;
		case DT_MAP:
			return v->kind == V_MAP || v->kind == V_CTX;
		case DT_NUMBER:
			return SV_IS_NUM(v->kind);
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Operators
 * ---------------------------------------------------------------------
 */

static const char *
op_text(int op)
{
	return sc_token_name((TokKind) op);
}

static bool
bad_operands(Run *r, int pos, int op, const SVal *a, const SVal *b)
{
	const char *cause = (a->kind == V_NULL || (b && b->kind == V_NULL))
		? "null_pointer_exception" : "class_cast_exception";

	if (b == NULL)
		return sc_error(r, pos, cause, "cannot apply [%s] operation to type [%s]",
						op_text(op), sc_type_name(a));
	return sc_error(r, pos, cause, "cannot apply [%s] operation to types [%s] and [%s]",
					op_text(op), sc_type_name(a), sc_type_name(b));
}

static inline VKind
promote(const SVal *a, const SVal *b)
{
	return (VKind) Max(a->kind, b->kind);
}

static bool
concat(Run *r, int pos, const SVal *a, const SVal *b, SVal *out)
{
	StringInfoData buf;
	int64		hint = (a->kind == V_STRING ? a->len : 0) + (b->kind == V_STRING ? b->len : 0);

	return sc_buf_init(r, pos, &buf, hint) && sc_to_string(r, a, &buf, 0, pos) &&
		sc_to_string(r, b, &buf, 0, pos) && sc_make_string(r, pos, &buf, out);
}

static bool
arith(Run *r, int pos, int op, const SVal *a, const SVal *b, SVal *out)
{
	VKind		k = promote(a, b);

	if (k == V_INT)
	{
		int32		x = a->u.i,
					y = b->u.i;

		switch (op)
		{
			case T_PLUS:
				sc_val_int(out, (int32) ((uint32) x + (uint32) y));
				return true;
			case T_MINUS:
				sc_val_int(out, (int32) ((uint32) x - (uint32) y));
				return true;
			case T_STAR:
				sc_val_int(out, (int32) ((uint32) x * (uint32) y));
				return true;
			case T_SLASH:
			case T_PERCENT:
				if (y == 0)
					return sc_error(r, pos, "arithmetic_exception", "/ by zero");
				if (y == -1)
					sc_val_int(out, op == T_SLASH ? (int32) (0u - (uint32) x) : 0);
				else
					sc_val_int(out, op == T_SLASH ? x / y : x % y);
				return true;
		}
	}
	else if (k == V_LONG)
	{
		int64		x = sc_as_long(a),
					y = sc_as_long(b);

		switch (op)
		{
			case T_PLUS:
				sc_val_long(out, (int64) ((uint64) x + (uint64) y));
				return true;
			case T_MINUS:
				sc_val_long(out, (int64) ((uint64) x - (uint64) y));
				return true;
			case T_STAR:
				sc_val_long(out, (int64) ((uint64) x * (uint64) y));
				return true;
			case T_SLASH:
			case T_PERCENT:
				if (y == 0)
					return sc_error(r, pos, "arithmetic_exception", "/ by zero");
				if (y == -1)
					sc_val_long(out, op == T_SLASH ? (int64) (0 - (uint64) x) : 0);
				else
					sc_val_long(out, op == T_SLASH ? x / y : x % y);
				return true;
		}
	}
	else if (k == V_FLOAT)
	{
		float		x = (float) sc_as_double(a),
					y = (float) sc_as_double(b);

		switch (op)
		{
			case T_PLUS:
				sc_val_float(out, x + y);
				return true;
			case T_MINUS:
				sc_val_float(out, x - y);
				return true;
			case T_STAR:
				sc_val_float(out, x * y);
				return true;
			case T_SLASH:
				sc_val_float(out, x / y);
				return true;
			case T_PERCENT:
				sc_val_float(out, fmodf(x, y));
				return true;
		}
	}
	else
	{
		double		x = sc_as_double(a),
					y = sc_as_double(b);

		switch (op)
		{
			case T_PLUS:
				sc_val_double(out, x + y);
				return true;
			case T_MINUS:
				sc_val_double(out, x - y);
				return true;
			case T_STAR:
				sc_val_double(out, x * y);
				return true;
			case T_SLASH:
				sc_val_double(out, x / y);
				return true;
			case T_PERCENT:
				sc_val_double(out, fmod(x, y));
				return true;
		}
	}
	return bad_operands(r, pos, op, a, b);
}

static bool
binop(Run *r, int pos, int op, const SVal *a, const SVal *b, SVal *out)
{
	switch (op)
	{
		case T_PLUS:
			if (a->kind == V_STRING || b->kind == V_STRING)
				return concat(r, pos, a, b, out);
			/* FALLTHROUGH */
		case T_MINUS:
		case T_STAR:
		case T_SLASH:
		case T_PERCENT:
			if (!SV_IS_NUM(a->kind) || !SV_IS_NUM(b->kind))
				return bad_operands(r, pos, op, a, b);
			return arith(r, pos, op, a, b, out);
		case T_LT:
		case T_LE:
		case T_GT:
		case T_GE:
			{
				VKind		k;
				int			c;

				if (!SV_IS_NUM(a->kind) || !SV_IS_NUM(b->kind))
					return bad_operands(r, pos, op, a, b);
				k = promote(a, b);
				if (k == V_INT || k == V_LONG)
				{
					int64		x = sc_as_long(a),
								y = sc_as_long(b);

					c = (x > y) - (x < y);
				}
				else
				{
					double		x = sc_as_double(a),
								y = sc_as_double(b);

					if (isnan(x) || isnan(y))
					{
						sc_val_bool(out, false);
						return true;
					}
					c = (x > y) - (x < y);
				}
				sc_val_bool(out, op == T_LT ? c < 0 : op == T_LE ? c <= 0 :
							op == T_GT ? c > 0 : c >= 0);
				return true;
			}
		case T_EQ:
		case T_NE:
			{
				bool		eq;

				if (!sc_equals(r, a, b, false, 0, pos, &eq))
					return false;
				sc_val_bool(out, op == T_EQ ? eq : !eq);
				return true;
			}
		case T_EQR:
		case T_NER:
			{
				bool		eq;

				if ((a->kind == V_LIST || a->kind == V_MAP) && a->kind == b->kind)
					eq = a->u.c == b->u.c;
				else if (a->kind == V_ENTRY && b->kind == V_ENTRY)
					eq = a->u.e == b->u.e;
				else if (!sc_equals(r, a, b, true, 0, pos, &eq))
					return false;
				sc_val_bool(out, op == T_EQR ? eq : !eq);
				return true;
			}
		case T_BAND:
		case T_BOR:
		case T_BXOR:
			if (a->kind == V_BOOL && b->kind == V_BOOL)
			{
				sc_val_bool(out, op == T_BAND ? (a->u.b && b->u.b) :
							op == T_BOR ? (a->u.b || b->u.b) : (a->u.b != b->u.b));
				return true;
			}
			if (!sc_is_integral(a) || !sc_is_integral(b))
				return bad_operands(r, pos, op, a, b);
			if (a->kind == V_INT && b->kind == V_INT)
				sc_val_int(out, op == T_BAND ? (a->u.i & b->u.i) :
						   op == T_BOR ? (a->u.i | b->u.i) : (a->u.i ^ b->u.i));
			else
			{
				int64		x = sc_as_long(a),
							y = sc_as_long(b);

				sc_val_long(out, op == T_BAND ? (x & y) : op == T_BOR ? (x | y) : (x ^ y));
			}
			return true;
		case T_SHL:
		case T_SHR:
		case T_USHR:
			{
				int64		s;

				if (!sc_is_integral(a) || !sc_is_integral(b))
					return bad_operands(r, pos, op, a, b);
				s = sc_as_long(b);
				if (a->kind == V_INT)
				{
					uint32		x = (uint32) a->u.i;
					int			n = (int) (s & 31);

					if (op == T_SHL)
						sc_val_int(out, (int32) (x << n));
					else if (op == T_USHR)
						sc_val_int(out, (int32) (x >> n));
					else
						sc_val_int(out, a->u.i < 0 ? (int32) ~(~x >> n) : (int32) (x >> n));
				}
				else
				{
					uint64		x = (uint64) a->u.l;
					int			n = (int) (s & 63);

					if (op == T_SHL)
						sc_val_long(out, (int64) (x << n));
					else if (op == T_USHR)
						sc_val_long(out, (int64) (x >> n));
					else
						sc_val_long(out, a->u.l < 0 ? (int64) ~(~x >> n) : (int64) (x >> n));
				}
				return true;
			}
	}
	return bad_operands(r, pos, op, a, b);
}

/* ---------------------------------------------------------------------
 * ctx
 * ---------------------------------------------------------------------
 */

static CtxKey
ctx_key_runtime(const char *s, int len)
{
	static const struct
	{
		const char *name;
		CtxKey		key;
	}			keys[] = {
		{"_source", CK_SOURCE}, {"op", CK_OP}, {"_id", CK_ID},
		{"_index", CK_INDEX}, {"_routing", CK_ROUTING},
		{"_version", CK_VERSION}, {"_seq_no", CK_SEQ_NO},
		{"_primary_term", CK_PRIMARY_TERM}, {"_now", CK_NOW},
	};
	int			k;

	for (k = 0; k < lengthof(keys); k++)
		if (strlen(keys[k].name) == (size_t) len && memcmp(keys[k].name, s, len) == 0)
			return keys[k].key;
	return CK_OTHER;
}

static void
ctx_get(Run *r, CtxKey key, SVal *out)
{
	SeScriptCtx *c = r->ctx;
	const char *s = NULL;
	int64		l = -1;

	switch (key)
	{
		case CK_SOURCE:
			sc_val_container(out, c->source, false);
			return;
		case CK_OP:
			sc_val_string(out, r->opstr, strlen(r->opstr));
			return;
		case CK_ID:
			s = c->id;
			break;
		case CK_INDEX:
			s = c->index;
			break;
		case CK_ROUTING:
			s = c->routing;
			break;
		case CK_VERSION:
			l = c->version;
			break;
		case CK_SEQ_NO:
			l = c->seq_no;
			break;
		case CK_PRIMARY_TERM:
			l = c->primary_term;
			break;
		case CK_NOW:
			l = c->now;
			break;
		case CK_OTHER:
			break;
	}
	if (s != NULL)
		sc_val_string(out, s, strlen(s));
	else if (l >= 0)
		sc_val_long(out, l);
	else
		sc_val_null(out);
}

/* ctx[key]: false (and null) for a key ctx does not have. */
bool
sc_ctx_lookup(Run *r, const char *key, int keylen, SVal *out)
{
	CtxKey		k = ctx_key_runtime(key, keylen);

	ctx_get(r, k, out);
	return k != CK_OTHER;
}

static bool
ctx_set(Run *r, CtxKey key, const char *name, const SVal *v, int pos)
{
	switch (key)
	{
		case CK_SOURCE:
			{
				SeJson	   *j;

				if (v->kind != V_MAP)
					return cast_error(r, pos, v, "java.util.Map");
				j = sc_val_to_json(r, v, pos);
				if (j == NULL)
					return false;
				r->ctx->source = j;
				return true;
			}
		case CK_OP:
			{
				/* an update may index, noop or delete; an upsert create or noop */
				static const char *const ops[] = {"index", "noop", "none", "delete", "create"};
				static const SeScriptResult res[] = {SE_SCRIPT_INDEX, SE_SCRIPT_NOOP,
				SE_SCRIPT_NOOP, SE_SCRIPT_DELETE, SE_SCRIPT_INDEX};
				const char *allowed = r->ctx->upsert ? "[noop, create]" : "[noop, index, delete]";
				int			k;

				if (v->kind != V_STRING)
				{
					if (v->kind == V_NULL)
						return sc_error(r, pos, "illegal_argument_exception",
										"Operation type [null] not allowed, only %s are allowed", allowed);
					return cast_error(r, pos, v, "java.lang.String");
				}
				for (k = 0; k < lengthof(ops); k++)
				{
					bool		ok = r->ctx->upsert ? (k == 1 || k == 2 || k == 4) : k < 4;

					if (ok && strlen(ops[k]) == (size_t) v->len && memcmp(ops[k], v->u.s, v->len) == 0)
					{
						r->op = res[k];
						r->opstr = ops[k];
						return true;
					}
				}
				return sc_error(r, pos, "illegal_argument_exception",
								"Operation type [%s] not allowed, only %s are allowed",
								sc_abbrev(v->u.s, v->len), allowed);
			}
		case CK_OTHER:
			return sc_error(r, pos, "illegal_argument_exception",
							"cannot put key [%s] into ctx", sc_abbrev(name, strlen(name)));
		default:
			return sc_error(r, pos, "illegal_argument_exception",
							"cannot modify read-only metadata [%s]", name);
	}
}

/* ---------------------------------------------------------------------
 * Element access
 * ---------------------------------------------------------------------
 */

/* Normalize a list index (negative counts from the end) for brace access. */
static bool
list_index(Run *r, int pos, const SVal *ix, int count, bool allow_end, int *out)
{
	int64		i;

	if (!sc_is_integral(ix))
	{
		if (ix->kind == V_NULL)
			return sc_error(r, pos, "null_pointer_exception", "list index is null");
		return cast_error(r, pos, ix, "int");
	}
	i = sc_as_long(ix);
	if (i < 0)
		i += count;
	if (i < 0 || i > count || (i == count && !allow_end))
		return sc_error(r, pos, "index_out_of_bounds_exception",
						"Index %lld out of bounds for length %d",
						(long long) sc_as_long(ix), count);
	*out = (int) i;
	return true;
}

/* Where ref-able node n points (object and key evaluated once). */
static bool
resolve_ref(Run *r, const Node *n, Ref *ref)
{
	SVal		obj;

	memset(ref, 0, sizeof(Ref));
	switch ((NodeKind) n->kind)
	{
		case E_LOCAL:
			ref->kind = R_LOCAL;
			ref->slot = n->slot;
			return true;
		case E_CTXFIELD:
			ref->kind = R_CTX;
			ref->ctxkey = (CtxKey) n->op;
			ref->key = n->name;
			ref->keylen = n->namelen;
			return true;
		case E_FIELD:
			if (!sc_eval(r, n->a, &obj))
				return false;
			if (obj.kind == V_MAP)
			{
				ref->kind = R_MAP;
				ref->c = obj.u.c;
				ref->ro = obj.ro;
				ref->key = n->name;
				ref->keylen = n->namelen;
				return true;
			}
			if (obj.kind == V_CTX)
			{
				ref->kind = R_CTX;
				ref->ctxkey = ctx_key_runtime(n->name, n->namelen);
				ref->key = n->name;
				ref->keylen = n->namelen;
				return true;
			}
			if (obj.kind == V_NULL)
				return npe(r, n->pos, "access field", n->name);
			return sc_error(r, n->pos, "illegal_argument_exception",
							"cannot set field [%s] of class [%s]", n->name, sc_type_name(&obj));
		case E_INDEX:
			{
				SVal		ix;

				if (!sc_eval(r, n->a, &obj) || !sc_eval(r, n->b, &ix))
					return false;
				if (obj.kind == V_MAP)
				{
					ref->kind = R_MAP;
					ref->c = obj.u.c;
					ref->ro = obj.ro;
					return sc_key_of(r, &ix, &ref->key, &ref->keylen, n->pos);
				}
				if (obj.kind == V_LIST)
				{
					ref->kind = R_LIST;
					ref->c = obj.u.c;
					ref->ro = obj.ro;
					return list_index(r, n->pos, &ix, obj.u.c->u.a.count, false, &ref->index);
				}
				if (obj.kind == V_CTX)
				{
					if (ix.kind != V_STRING)
						return cast_error(r, n->pos, &ix, "java.lang.String");
					ref->kind = R_CTX;
					ref->ctxkey = ctx_key_runtime(ix.u.s, ix.len);
					ref->key = ix.u.s;
					ref->keylen = ix.len;
					return true;
				}
				if (obj.kind == V_NULL)
					return npe(r, n->pos, "access an element", NULL);
				return sc_error(r, n->pos, "illegal_argument_exception",
								"cannot use [] on class [%s]", sc_type_name(&obj));
			}
		default:
			return sc_error(r, n->pos, "illegal_argument_exception", "not assignable");
	}
}

static bool
ref_get(Run *r, const Ref *ref, int pos, SVal *out)
{
	switch (ref->kind)
	{
		case R_LOCAL:
			*out = r->locals[ref->slot];
			return true;
		case R_MAP:
			{
				int			k = sc_map_find(ref->c, ref->key, ref->keylen);

				if (!sc_charge(r, pos, ref->c->u.o.count / 32))
					return false;
				if (k < 0)
					sc_val_null(out);
				else
					sc_val_from_json(out, ref->c->u.o.members[k].value, ref->ro);
				return true;
			}
		case R_LIST:
			if (ref->index >= ref->c->u.a.count)
				return sc_error(r, pos, "index_out_of_bounds_exception",
								"Index %d out of bounds for length %d", ref->index,
								ref->c->u.a.count);
			sc_val_from_json(out, ref->c->u.a.items[ref->index], ref->ro);
			return true;
		case R_CTX:
			ctx_get(r, ref->ctxkey, out);
			return true;
	}
	return false;
}

static bool
read_only(Run *r, int pos)
{
	return sc_error(r, pos, "unsupported_operation_exception",
					"params are read-only; copy the value first, e.g. new ArrayList(params.x)");
}

/* Store v (converted for a typed local) at ref; v is updated to what was stored. */
static bool
ref_set(Run *r, const Ref *ref, int pos, SVal *v)
{
	SeJson	   *j;

	switch (ref->kind)
	{
		case R_LOCAL:
			if (!sc_coerce(r, pos, r->script->local_types[ref->slot], v, false))
				return false;
			r->locals[ref->slot] = *v;
			return true;
		case R_MAP:
			if (ref->ro)
				return read_only(r, pos);
			j = sc_val_to_json(r, v, pos);
			if (j == NULL)
				return false;
			return sc_map_put(r, ref->c, ref->key, ref->keylen, j, pos);
		case R_LIST:
			if (ref->ro)
				return read_only(r, pos);
			if (ref->index >= ref->c->u.a.count)
				return sc_error(r, pos, "index_out_of_bounds_exception",
								"Index %d out of bounds for length %d", ref->index,
								ref->c->u.a.count);
			j = sc_val_to_json(r, v, pos);
			if (j == NULL)
				return false;
			ref->c->u.a.items[ref->index] = j;
			return true;
		case R_CTX:
			return ctx_set(r, ref->ctxkey, ref->key, v, pos);
	}
	return false;
}

static bool
get_field(Run *r, const Node *n, const SVal *obj, SVal *out)
{
	switch ((VKind) obj->kind)
	{
		case V_DOCVALS:
		case V_DATE:
			return sc_doc_get_field(r, n, obj, out);
		case V_MAP:
			{
				int			k = sc_map_find(obj->u.c, n->name, n->namelen);

				if (obj->u.c->u.o.count > 64 && !sc_charge(r, n->pos, obj->u.c->u.o.count / 32))
					return false;
				if (k < 0)
					sc_val_null(out);
				else
					sc_val_from_json(out, obj->u.c->u.o.members[k].value, obj->ro);
				return true;
			}
		case V_CTX:
			ctx_get(r, ctx_key_runtime(n->name, n->namelen), out);
			return true;
		case V_LIST:
			if (strcmp(n->name, "length") == 0 || strcmp(n->name, "size") == 0)
			{
				sc_val_int(out, obj->u.c->u.a.count);
				return true;
			}
			if (strcmp(n->name, "empty") == 0)
			{
				sc_val_bool(out, obj->u.c->u.a.count == 0);
				return true;
			}
			break;
		case V_STRING:
			if (strcmp(n->name, "empty") == 0)
			{
				sc_val_bool(out, obj->len == 0);
				return true;
			}
			break;
		case V_ENTRY:
			if (strcmp(n->name, "key") == 0)
			{
				sc_val_string(out, obj->u.e->key, obj->u.e->keylen);
				return true;
			}
			if (strcmp(n->name, "value") == 0)
			{
				*out = obj->u.e->value;
				return true;
			}
			break;
		case V_NULL:
			return npe(r, n->pos, "access field", n->name);
		default:
			break;
	}
	return sc_error(r, n->pos, "illegal_argument_exception",
					"dynamic field [%s] not found for class [%s]", n->name, sc_type_name(obj));
}

static bool
get_index(Run *r, const Node *n, const SVal *obj, const SVal *ix, SVal *out)
{
	switch ((VKind) obj->kind)
	{
		case V_DOCVALS:
			return sc_doc_get_index(r, n, obj, ix, out);
		case V_LIST:
			{
				int			i;

				if (!list_index(r, n->pos, ix, obj->u.c->u.a.count, false, &i))
					return false;
				sc_val_from_json(out, obj->u.c->u.a.items[i], obj->ro);
				return true;
			}
		case V_MAP:
			{
				const char *key;
				int			keylen;
				int			k;

				if (!sc_key_of(r, ix, &key, &keylen, n->pos))
					return false;
				if (obj->u.c->u.o.count > 64 && !sc_charge(r, n->pos, obj->u.c->u.o.count / 32))
					return false;
				k = sc_map_find(obj->u.c, key, keylen);
				if (k < 0)
					sc_val_null(out);
				else
					sc_val_from_json(out, obj->u.c->u.o.members[k].value, obj->ro);
				return true;
			}
		case V_CTX:
			if (ix->kind != V_STRING)
				return cast_error(r, n->pos, ix, "java.lang.String");
			ctx_get(r, ctx_key_runtime(ix->u.s, ix->len), out);
			return true;
		case V_NULL:
			return npe(r, n->pos, "access an element", NULL);
		default:
			return sc_error(r, n->pos, "illegal_argument_exception",
							"cannot use [] on class [%s]", sc_type_name(obj));
	}
}

/* ---------------------------------------------------------------------
 * Expressions
 * ---------------------------------------------------------------------
 */

static bool
eval_assign(Run *r, const Node *n, SVal *out)
{
	Ref			ref;
	SVal		rhs;

	if (!resolve_ref(r, n->a, &ref))
		return false;
	if (n->op == T_ASSIGN)
	{
		if (!sc_eval(r, n->b, &rhs))
			return false;
		if (!ref_set(r, &ref, n->pos, &rhs))
			return false;
		*out = rhs;
		return true;
	}
	else
	{
		SVal		cur;
		SVal		res;

		if (!ref_get(r, &ref, n->pos, &cur) || !sc_eval(r, n->b, &rhs))
			return false;
		if (!binop(r, n->pos, n->op, &cur, &rhs, &res))
			return false;
		/* Java's compound assignment casts back to the variable's type */
		if (ref.kind == R_LOCAL &&
			!sc_coerce(r, n->pos, r->script->local_types[ref.slot], &res, true))
			return false;
		if (!ref_set(r, &ref, n->pos, &res))
			return false;
		*out = res;
		return true;
	}
}

static bool
eval_incdec(Run *r, const Node *n, SVal *out)
{
	Ref			ref;
	SVal		cur;
	SVal		res;
	SVal		one;

	if (!resolve_ref(r, n->a, &ref) || !ref_get(r, &ref, n->pos, &cur))
		return false;
	if (!SV_IS_NUM(cur.kind))
	{
		if (cur.kind == V_NULL)
			return sc_error(r, n->pos, "null_pointer_exception", "cannot %s null",
							n->op == T_INC ? "increment" : "decrement");
		return bad_operands(r, n->pos, n->op, &cur, NULL);
	}
	sc_val_int(&one, 1);
	if (!arith(r, n->pos, n->op == T_INC ? T_PLUS : T_MINUS, &cur, &one, &res))
		return false;
	/* ++ keeps the operand's type (an int stays int, even if wrapping) */
	num_convert(&res, (VKind) cur.kind);
	if (!ref_set(r, &ref, n->pos, &res))
		return false;
	*out = (n->flags & NF_POSTFIX) ? cur : res;
	return true;
}

static bool
eval_unary(Run *r, const Node *n, SVal *out)
{
	SVal		a;

	if (!sc_eval(r, n->a, &a))
		return false;
	switch (n->op)
	{
		case T_NOT:
			{
				bool		b = false;

				if (!as_bool(r, n->pos, &a, &b))
					return false;
				sc_val_bool(out, !b);
				return true;
			}
		case T_MINUS:
			switch (a.kind)
			{
				case V_INT:
					sc_val_int(out, (int32) (0u - (uint32) a.u.i));
					return true;
				case V_LONG:
					sc_val_long(out, (int64) (0 - (uint64) a.u.l));
					return true;
				case V_FLOAT:
					sc_val_float(out, -a.u.f);
					return true;
				case V_DOUBLE:
					sc_val_double(out, -a.u.d);
					return true;
			}
			break;
		case T_PLUS:
			if (SV_IS_NUM(a.kind))
			{
				*out = a;
				out->node = NULL;
				return true;
			}
			break;
		case T_BNOT:
			if (a.kind == V_INT)
			{
				sc_val_int(out, ~a.u.i);
				return true;
			}
			if (a.kind == V_LONG)
			{
				sc_val_long(out, ~a.u.l);
				return true;
			}
			break;
	}
	return bad_operands(r, n->pos, n->op, &a, NULL);
}

static bool
eval_args(Run *r, const Node *n, SVal *args)
{
	int			k;

	for (k = 0; k < n->nargs; k++)
	{
		if (n->args[k]->kind == E_LAMBDA)
			sc_val_null(&args[k]);	/* builtins read the lambda node */
		else if (!sc_eval(r, n->args[k], &args[k]))
			return false;
	}
	return true;
}

bool
sc_eval(Run *r, const Node *n, SVal *out)
{
	SVal		a,
				b;

	/* every 16 expression nodes cost one statement */
	if ((++r->evals & 15) == 0 && --r->steps < 0 && !sc_charge(r, n->pos, 0))
		return false;
	switch ((NodeKind) n->kind)
	{
		case E_CONST:
			*out = n->val;
			return true;
		case E_LOCAL:
			*out = r->locals[n->slot];
			return true;
		case E_CTX:
			*out = r->ctxval;
			return true;
		case E_CTXFIELD:
			ctx_get(r, (CtxKey) n->op, out);
			return true;
		case E_DOCFIELD:
		case E_SCORE:
		case E_SCOREFN:
			return sc_eval_score_node(r, n, out);
		case E_FIELD:
			if (!sc_eval(r, n->a, &a))
				return false;
			if (a.kind == V_NULL && (n->flags & NF_NULLSAFE))
			{
				sc_val_null(out);
				return true;
			}
			return get_field(r, n, &a, out);
		case E_INDEX:
			if (!sc_eval(r, n->a, &a) || !sc_eval(r, n->b, &b))
				return false;
			return get_index(r, n, &a, &b, out);
		case E_CALL:
			{
				SVal		argbuf[8];
				SVal	   *args = argbuf;

				if (!sc_eval(r, n->a, &a))
					return false;
				if (a.kind == V_NULL)
				{
					if (n->flags & NF_NULLSAFE)
					{
						sc_val_null(out);
						return true;
					}
					return npe(r, n->pos, "invoke method", n->name);
				}
				/* no method takes more than 3 arguments: such a call always fails */
				if (n->nargs > lengthof(argbuf) &&
					(args = sc_alloc(r, n->pos, sizeof(SVal) * n->nargs)) == NULL)
					return false;
				if (!eval_args(r, n, args))
					return false;
				return sc_call_method(r, n, &a, args, out);
			}
		case E_STATIC:
			{
				SVal		args[2];	/* the parser allows at most 2 */

				if (n->nargs > lengthof(args))
					return sc_error(r, n->pos, "illegal_argument_exception", "too many arguments");
				if (!eval_args(r, n, args))
					return false;
				return sc_call_static(r, n, args, out);
			}
		case E_NEW:
			{
				SVal		argbuf[2];

				if (n->nargs > 1)
					return sc_error(r, n->pos, "illegal_argument_exception",
									"constructor takes at most 1 argument");
				if (!eval_args(r, n, argbuf))
					return false;
				return sc_new_instance(r, n, argbuf, out);
			}
		case E_LIST:
			{
				SeJson	   *arr = sc_new_array(r, n->pos, n->nargs);
				int			k;

				if (arr == NULL)
					return false;
				for (k = 0; k < n->nargs; k++)
				{
					SeJson	   *j;

					if (!sc_eval(r, n->args[k], &a))
						return false;
					j = sc_val_to_json(r, &a, n->args[k]->pos);
					if (j == NULL)
						return false;
					arr->u.a.items[arr->u.a.count++] = j;
				}
				sc_val_container(out, arr, false);
				return true;
			}
		case E_MAPLIT:
			{
				SeJson	   *obj = sc_new_object(r, n->pos, n->nargs / 2);
				int			k;

				if (obj == NULL)
					return false;
				for (k = 0; k + 1 < n->nargs; k += 2)
				{
					const char *key;
					int			keylen;
					SeJson	   *j;

					if (!sc_eval(r, n->args[k], &a) ||
						!sc_key_of(r, &a, &key, &keylen, n->args[k]->pos) ||
						!sc_eval(r, n->args[k + 1], &b))
						return false;
					j = sc_val_to_json(r, &b, n->args[k + 1]->pos);
					if (j == NULL || !sc_map_put(r, obj, key, keylen, j, n->pos))
						return false;
				}
				sc_val_container(out, obj, false);
				return true;
			}
		case E_UNARY:
			return eval_unary(r, n, out);
		case E_BINARY:
			if (!sc_eval(r, n->a, &a) || !sc_eval(r, n->b, &b))
				return false;
			return binop(r, n->pos, n->op, &a, &b, out);
		case E_ANDAND:
		case E_OROR:
			{
				bool		x = false;

				if (!sc_eval(r, n->a, &a) || !as_bool(r, n->a->pos, &a, &x))
					return false;
				if (x == (n->kind == E_OROR))
				{
					sc_val_bool(out, x);
					return true;
				}
				if (!sc_eval(r, n->b, &b) || !as_bool(r, n->b->pos, &b, &x))
					return false;
				sc_val_bool(out, x);
				return true;
			}
		case E_COND:
			{
				bool		x = false;

				if (!sc_eval(r, n->a, &a) || !as_bool(r, n->a->pos, &a, &x) ||
					!sc_eval(r, x ? n->b : n->c, out))
					return false;
				if ((n->flags & NF_PROMOTE) && SV_IS_NUM(out->kind))
					num_convert(out, (VKind) n->type);
				return true;
			}
		case E_ELVIS:
			if (!sc_eval(r, n->a, out))
				return false;
			if (out->kind != V_NULL)
				return true;
			return sc_eval(r, n->b, out);
		case E_ASSIGN:
			return eval_assign(r, n, out);
		case E_INCDEC:
			return eval_incdec(r, n, out);
		case E_CAST:
			if (!sc_eval(r, n->a, out))
				return false;
			if (SV_IS_NUM(out->kind) && n->type != DT_DEF && n->type != DT_NUMBER)
				out->node = NULL;
			return sc_coerce(r, n->pos, n->type, out, true);
		case E_INSTANCEOF:
			if (!sc_eval(r, n->a, &a))
				return false;
			sc_val_bool(out, instance_of(&a, n->type));
			return true;
		case E_LAMBDA:
			return sc_error(r, n->pos, "illegal_argument_exception",
							"a lambda can only be passed to a method");
		default:
			return sc_error(r, n->pos, "illegal_argument_exception", "not an expression");
	}
}

bool
sc_call_lambda(Run *r, const Node *lam, SVal *args, int nargs, SVal *out)
{
	int			k;

	if (nargs != lam->nslots)
		return sc_error(r, lam->pos, "illegal_argument_exception",
						"lambda takes %d parameters, called with %d", lam->nslots, nargs);
	for (k = 0; k < nargs; k++)
	{
		SVal		v = args[k];

		if (!sc_coerce(r, lam->pos, r->script->local_types[lam->slots[k]], &v, false))
			return false;
		r->locals[lam->slots[k]] = v;
	}
	if (lam->flags & NF_BLOCKBODY)
	{
		Flow		f = exec(r, lam->a);

		if (f == F_ERROR)
			return false;
		if (f == F_RETURN)
			*out = r->ret;
		else
			sc_val_null(out);
		return true;
	}
	return sc_eval(r, lam->a, out);
}

/* ---------------------------------------------------------------------
 * Statements
 * ---------------------------------------------------------------------
 */

static bool
eval_cond(Run *r, const Node *n, bool *result)
{
	SVal		v;

	return sc_eval(r, n, &v) && as_bool(r, n->pos, &v, result);
}

static void
default_value(int dtype, SVal *v)
{
	switch ((DType) dtype)
	{
		case DT_INT:
			sc_val_int(v, 0);
			break;
		case DT_LONG:
			sc_val_long(v, 0);
			break;
		case DT_FLOAT:
			sc_val_float(v, 0);
			break;
		case DT_DOUBLE:
			sc_val_double(v, 0);
			break;
		case DT_BOOLEAN:
			sc_val_bool(v, false);
			break;
		default:
			sc_val_null(v);
			break;
	}
}

/* Body of a loop: maps break/continue; returns true to keep looping. */
static inline bool
loop_body(Run *r, const Node *body, Flow *f)
{
	Flow		bf = exec(r, body);

	if (bf == F_BREAK)
	{
		*f = F_NORMAL;
		return false;
	}
	if (bf == F_RETURN || bf == F_ERROR)
	{
		*f = bf;
		return false;
	}
	return true;
}

static Flow
exec(Run *r, const Node *n)
{
	SVal		v;

	if (--r->steps < 0 && !sc_charge(r, n->pos, 0))
		return F_ERROR;
	switch ((NodeKind) n->kind)
	{
		case S_BLOCK:
			{
				int			k;

				for (k = 0; k < n->nargs; k++)
				{
					Flow		f = exec(r, n->args[k]);

					if (f != F_NORMAL)
						return f;
				}
				return F_NORMAL;
			}
		case S_EXPR:
			return sc_eval(r, n->a, &v) ? F_NORMAL : F_ERROR;
		case S_DECL:
			if (n->a != NULL)
			{
				if (!sc_eval(r, n->a, &v))
					return F_ERROR;
			}
			else
				default_value(n->type, &v);
			if (!sc_coerce(r, n->pos, n->type, &v, false))
				return F_ERROR;
			r->locals[n->slot] = v;
			return F_NORMAL;
		case S_IF:
			{
				bool		c = false;

				if (!eval_cond(r, n->a, &c))
					return F_ERROR;
				if (c)
					return exec(r, n->b);
				if (n->c != NULL)
					return exec(r, n->c);
				return F_NORMAL;
			}
		case S_WHILE:
			{
				Flow		f = F_NORMAL;

				for (;;)
				{
					bool		c = false;

					if (!eval_cond(r, n->a, &c))
						return F_ERROR;
					if (!c || !loop_body(r, n->b, &f))
						break;
				}
				return f;
			}
		case S_DO:
			{
				Flow		f = F_NORMAL;

				for (;;)
				{
					bool		c = false;

					if (!loop_body(r, n->b, &f))
						break;
					if (!eval_cond(r, n->a, &c))
						return F_ERROR;
					if (!c)
						break;
					if (--r->steps < 0 && !sc_charge(r, n->pos, 0))
						return F_ERROR;
				}
				return f;
			}
		case S_FOR:
			{
				Flow		f = F_NORMAL;

				if (n->d != NULL && exec(r, n->d) == F_ERROR)
					return F_ERROR;
				for (;;)
				{
					bool		c = true;

					if (n->a != NULL && !eval_cond(r, n->a, &c))
						return F_ERROR;
					if (!c || !loop_body(r, n->b, &f))
						break;
					if (n->c != NULL && exec(r, n->c) == F_ERROR)
						return F_ERROR;
				}
				return f;
			}
		case S_FOREACH:
			{
				Flow		f = F_NORMAL;
				SVal		it;
				int			k;

				if (!sc_eval(r, n->a, &it))
					return F_ERROR;
				if (it.kind == V_KEYSET || it.kind == V_ENTRYSET)
				{
					SeqSnap		snap;

					/* a snapshot: removing keys in the body does not disturb the loop */
					if (!sc_seq_open(r, n->a->pos, &it, &snap))
						return F_ERROR;
					for (k = 0; k < snap.count; k++)
					{
						sc_seq_get(&snap, k, &v);
						if (!sc_coerce(r, n->pos, n->type, &v, false))
							return F_ERROR;
						r->locals[n->slot] = v;
						if (!loop_body(r, n->b, &f))
							break;
					}
					return f;
				}
				if (it.kind != V_LIST)
				{
					if (it.kind == V_NULL)
					{
						sc_error(r, n->a->pos, "null_pointer_exception", "cannot iterate over null");
						return F_ERROR;
					}
					if (it.kind == V_MAP || it.kind == V_CTX)
						sc_error(r, n->a->pos, "illegal_argument_exception",
								 "cannot iterate over a Map; use keySet(), values() or entrySet()");
					else
						sc_error(r, n->a->pos, "illegal_argument_exception",
								 "cannot iterate over [%s]", sc_type_name(&it));
					return F_ERROR;
				}
				/* indexes, re-reading the count: changes during the loop cannot crash */
				for (k = 0; k < it.u.c->u.a.count; k++)
				{
					sc_val_from_json(&v, it.u.c->u.a.items[k], it.ro);
					if (!sc_coerce(r, n->pos, n->type, &v, false))
						return F_ERROR;
					r->locals[n->slot] = v;
					if (!loop_body(r, n->b, &f))
						break;
				}
				return f;
			}
		case S_BREAK:
			return F_BREAK;
		case S_CONTINUE:
			return F_CONTINUE;
		case S_RETURN:
			if (n->a != NULL)
			{
				if (!sc_eval(r, n->a, &r->ret))
					return F_ERROR;
			}
			else
				sc_val_null(&r->ret);
			return F_RETURN;
		default:
			return sc_eval(r, n, &v) ? F_NORMAL : F_ERROR;
	}
}

/* ---------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------
 */

void
se_script_ctx_init(SeScriptCtx *ctx, SeJson *source)
{
	memset(ctx, 0, sizeof(SeScriptCtx));
	ctx->source = source;
	ctx->version = -1;
	ctx->seq_no = -1;
	ctx->primary_term = -1;
	ctx->now = -1;
	ctx->max_statements = SE_SCRIPT_DEFAULT_STATEMENTS;
	ctx->max_memory = SE_SCRIPT_DEFAULT_MEMORY;
	ctx->max_source_bytes = SE_SCRIPT_DEFAULT_SOURCE_BYTES;
	ctx->op = "index";
	ctx->error_offset = -1;
}

/*
 * The updated document must be writable with bounded work and memory.  A
 * container stored into itself never ends (bounded depth), and nodes may
 * be shared -- one 1 MB string added to a list a thousand times is 8 kB
 * of pointers but 1 GB of JSON -- so count what se_json_write will write,
 * each shared node as many times as it appears, stopping at the limit.
 */
typedef struct SourceBudget
{
	int64		nodes;
	int64		bytes;
} SourceBudget;

static bool
check_source(const SeJson *j, int depth, SourceBudget *b)
{
	int			k;

	if (--b->nodes < 0 || depth > SC_MAX_WALK_DEPTH)
		return false;
	switch (j->type)
	{
		case SE_JSON_ARRAY:
			b->bytes -= 2 + j->u.a.count;	/* brackets, commas */
			for (k = 0; k < j->u.a.count && b->bytes >= 0; k++)
				if (!check_source(j->u.a.items[k], depth + 1, b))
					return false;
			break;
		case SE_JSON_OBJECT:
			b->bytes -= 2 + j->u.o.count;	/* braces, commas */
			for (k = 0; k < j->u.o.count && b->bytes >= 0; k++)
			{
				const SeJsonMember *m = &j->u.o.members[k];

				b->bytes -= se_json_string_size(m->key, m->keylen) + 1;
				if (!check_source(m->value, depth + 1, b))
					return false;
			}
			break;
		case SE_JSON_STRING:
			b->bytes -= se_json_string_size(j->u.s.str, j->u.s.len);
			break;
		case SE_JSON_NUMBER:
			b->bytes -= j->u.n.len > 0 ? j->u.n.len : SC_JAVA_DOUBLE_LEN;
			break;
		default:
			b->bytes -= 5;
			break;
	}
	return b->bytes >= 0;
}

static SeScriptResult run_script(const SeScript *s, SeScriptCtx *ctx, SeError *err,
								 StringInfo values, SVal *ret);

SeScriptResult
se_script_run(const SeScript *s, SeScriptCtx *ctx, SeError *err)
{
	return run_script(s, ctx, err, NULL, NULL);
}

bool
se_script_run_score(const SeScript *s, SeScriptCtx *ctx, double *result,
					SeError *err)
{
	SVal		v;

	if (run_script(s, ctx, err, NULL, &v) == SE_SCRIPT_ERROR)
		return false;
	if (!SV_IS_NUM(v.kind))
	{
		se_error_set(err, 400, "script_exception",
					 "runtime error: the score script returned [%s], not a number",
					 v.kind == V_NULL ? "null" : sc_type_name(&v));
		ctx->error_cause = "class_cast_exception";
		return false;
	}
	*result = sc_as_double(&v);
	return true;
}

bool
se_script_run_values(const SeScript *s, SeScriptCtx *ctx, StringInfo out, SeError *err)
{
	SVal		v;

	return run_script(s, ctx, err, out, &v) != SE_SCRIPT_ERROR;
}

/*
 * Run s; a score script's result (its return value) into *ret and, when
 * values is not NULL, as a script field's JSON values into values (while
 * the run, which may still read doc values, is alive).
 */
static SeScriptResult
run_script(const SeScript *s, SeScriptCtx *ctx, SeError *err, StringInfo values, SVal *ret)
{
	Run			r;
	Flow		f;
	int			k;

	memset(&r, 0, sizeof(r));
	r.script = s;
	r.ctx = ctx;
	r.err = err;
	r.op = SE_SCRIPT_INDEX;
	r.opstr = ctx->upsert ? "create" : "index";
	memset(&r.ctxval, 0, sizeof(SVal));
	r.ctxval.kind = V_CTX;
	if (ctx->max_statements <= 0)
		ctx->max_statements = SE_SCRIPT_DEFAULT_STATEMENTS;
	if (ctx->max_memory <= 0)
		ctx->max_memory = SE_SCRIPT_DEFAULT_MEMORY;
	if (ctx->max_source_bytes <= 0)
		ctx->max_source_bytes = SE_SCRIPT_DEFAULT_SOURCE_BYTES;
	r.steps = ctx->max_statements;
	r.mem = ctx->max_memory;
	ctx->error_cause = NULL;
	ctx->error_offset = -1;
	ctx->op = r.opstr;

	if (!s->score && (ctx->source == NULL || ctx->source->type != SE_JSON_OBJECT))
	{
		sc_error(&r, -1, "illegal_argument_exception", "ctx._source must be an object");
		return SE_SCRIPT_ERROR;
	}
	r.locals = (SVal *) sc_alloc(&r, -1, sizeof(SVal) * (s->nlocals > 0 ? s->nlocals : 1));
	if (r.locals == NULL)
		return SE_SCRIPT_ERROR;
	for (k = 0; k < s->nlocals; k++)
		default_value(s->local_types[k], &r.locals[k]);

	f = exec(&r, s->root);
	if (f == F_ERROR || se_error_is_set(err))
		return SE_SCRIPT_ERROR;
	if (s->score)
	{
		if (f == F_RETURN)
			*ret = r.ret;
		else
			sc_val_null(ret);
		if (values != NULL && !sc_field_values(&r, ret, values))
			return SE_SCRIPT_ERROR;
		return SE_SCRIPT_INDEX;
	}
	if (r.op == SE_SCRIPT_INDEX)
	{
		SourceBudget b = {SC_MAX_SOURCE_NODES, ctx->max_source_bytes};

		if (!check_source(ctx->source, 0, &b))
		{
			if (b.bytes < 0)
				sc_error(&r, -1, "illegal_argument_exception",
						 "the updated _source exceeds the limit of %lld bytes",
						 (long long) ctx->max_source_bytes);
			else
				sc_error(&r, -1, "illegal_argument_exception",
						 "the updated _source is nested too deeply, too large, or contains itself");
			return SE_SCRIPT_ERROR;
		}
	}
	ctx->op = r.opstr;
	return r.op;
}
