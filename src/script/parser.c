/*-------------------------------------------------------------------------
 *
 * parser.c
 *	  Recursive-descent parser for the Painless subset, producing the AST
 *	  the interpreter walks (se_script_compile).
 *
 * Names are resolved while parsing: locals get frame slots (no lookup at
 * run time), ctx keys and method names become small integers, static calls
 * (Math.max, Integer.parseInt) are checked for arity, literals carry a
 * ready-made JSON node so storing a constant allocates nothing.
 *
 * Hostile input is bounded three ways: the source size, the parser's
 * recursion depth, and the height of every AST node (left-associative
 * chains such as a+b+c+... are built in a loop, so recursion alone would
 * not bound the tree the interpreter recurses over).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "script/script_int.h"

typedef struct VarEnt
{
	const char *name;
	int			len;
	int			slot;
	int			depth;			/* scope depth */
} VarEnt;

typedef struct Parser
{
	const char *src;
	int			srclen;
	Token	   *toks;
	int			ntoks;
	int			i;
	SeError    *err;
	bool		failed;
	VarEnt	   *vars;
	int			nvars;
	int			varcap;
	int			scope;
	int			nest;
	int			loop_depth;
	int			nlocals;
	int			typecap;
	int		   *local_types;
	SeScript   *script;
	/* intern table */
	const char **names;
	int			namecap;
	int			namecount;
} Parser;

/* ---------------------------------------------------------------------
 * Positions and errors
 * ---------------------------------------------------------------------
 */

/* 1-based line and column (in characters) of byte offset pos. */
void
sc_position(const char *src, int len, int pos, int *line, int *col)
{
	int			l = 1;
	int			c = 1;
	int			i;

	if (pos > len)
		pos = len;
	for (i = 0; i < pos; i++)
	{
		unsigned char b = (unsigned char) src[i];

		if (b == '\n')
		{
			l++;
			c = 1;
		}
		else if ((b & 0xC0) != 0x80)
			c++;
	}
	*line = l;
	*col = c;
}

static void perr(Parser *p, int pos, const char *fmt,...) pg_attribute_printf(3, 4);

static void
perr(Parser *p, int pos, const char *fmt,...)
{
	StringInfoData msg;
	va_list		args;
	int			line,
				col;

	if (p->failed)
		return;
	p->failed = true;
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
	sc_position(p->src, p->srclen, pos, &line, &col);
	se_error_set(p->err, 400, "script_exception", "compile error at [%d:%d]: %s",
				 line, col, msg.data);
}

static inline Token *
cur(Parser *p)
{
	return &p->toks[p->i];
}

static inline Token *
peek(Parser *p, int k)
{
	int			j = p->i + k;

	if (j >= p->ntoks)
		j = p->ntoks - 1;
	return &p->toks[j];
}

static inline void
advance(Parser *p)
{
	if (p->i < p->ntoks - 1)
		p->i++;
}

/* Describe the current token for an error message. */
static char *
tok_text(Parser *p, Token *t)
{
	if (t->kind == T_EOF)
		return pstrdup("end of script");
	if (t->len > 40)
		return psprintf("'%.40s...'", p->src + t->pos);
	return psprintf("'%.*s'", t->len, p->src + t->pos);
}

static void
unexpected(Parser *p, const char *expected)
{
	Token	   *t = cur(p);

	if (t->kind == T_EOF)
		perr(p, t->pos, "unexpected end of script, expected %s", expected);
	else
		perr(p, t->pos, "unexpected token %s, expected %s", tok_text(p, t), expected);
}

static bool
expect(Parser *p, TokKind k)
{
	if (cur(p)->kind == k)
	{
		advance(p);
		return true;
	}
	if (!p->failed)
	{
		char	   *what = psprintf("'%s'", sc_token_name(k));

		unexpected(p, what);
	}
	return false;
}

static bool
enter(Parser *p)
{
	if (++p->nest > SC_MAX_DEPTH)
	{
		perr(p, cur(p)->pos, "script is too deeply nested (limit %d)", SC_MAX_DEPTH);
		return false;
	}
	return true;
}

static inline void
leave(Parser *p)
{
	p->nest--;
}

/* ---------------------------------------------------------------------
 * Nodes
 * ---------------------------------------------------------------------
 */

static Node *
mk(Parser *p, NodeKind kind, int pos)
{
	Node	   *n = (Node *) palloc0(sizeof(Node));

	n->kind = kind;
	n->pos = pos;
	n->depth = 1;
	return n;
}

/* Compute n's height from its children; fails when the tree gets too tall. */
static Node *
seal(Parser *p, Node *n)
{
	int			d = 0;
	int			k;

	if (n == NULL)
		return NULL;
#define CH(x) if ((x) != NULL && (x)->depth > d) d = (x)->depth
	CH(n->a);
	CH(n->b);
	CH(n->c);
	CH(n->d);
	for (k = 0; k < n->nargs; k++)
		CH(n->args[k]);
#undef CH
	if (d + 1 > SC_MAX_DEPTH)
	{
		perr(p, n->pos, "script is too deeply nested (limit %d)", SC_MAX_DEPTH);
		return NULL;
	}
	n->depth = (uint16) (d + 1);
	return n;
}

static const char *
intern(Parser *p, const char *s, int len)
{
	uint32		h = 2166136261u;
	int			k;
	uint32		mask;

	if (p->namecount * 2 >= p->namecap)
	{
		int			newcap = p->namecap ? p->namecap * 2 : 64;
		const char **nn = (const char **) palloc0(sizeof(char *) * newcap);

		for (k = 0; k < p->namecap; k++)
		{
			if (p->names[k] != NULL)
			{
				const char *q = p->names[k];
				uint32		hh = 2166136261u;
				int			ql = strlen(q);
				int			j;

				for (j = 0; j < ql; j++)
					hh = (hh ^ (unsigned char) q[j]) * 16777619u;
				j = hh & (newcap - 1);
				while (nn[j] != NULL)
					j = (j + 1) & (newcap - 1);
				nn[j] = q;
			}
		}
		p->names = nn;
		p->namecap = newcap;
	}
	for (k = 0; k < len; k++)
		h = (h ^ (unsigned char) s[k]) * 16777619u;
	mask = p->namecap - 1;
	k = h & mask;
	while (p->names[k] != NULL)
	{
		if (strlen(p->names[k]) == (size_t) len && memcmp(p->names[k], s, len) == 0)
			return p->names[k];
		k = (k + 1) & mask;
	}
	p->names[k] = pnstrdup(s, len);
	p->namecount++;
	return p->names[k];
}

/* A JSON node for a double, printed as Java prints it. */
static SeJson *
double_node(double d, bool is_float)
{
	SeJson	   *j;
	StringInfoData b;

	if (isnan(d) || isinf(d))
		return se_json_make_string(isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity", -1);
	j = (SeJson *) palloc0(sizeof(SeJson));
	initStringInfo(&b);
	sc_append_java_double(&b, d, is_float);
	j->type = SE_JSON_NUMBER;
	j->u.n.text = b.data;
	j->u.n.len = b.len;
	j->u.n.d = d;
	return j;
}

static Node *
mk_const(Parser *p, int pos, const SVal *v)
{
	Node	   *n = mk(p, E_CONST, pos);

	n->val = *v;
	switch (v->kind)
	{
		case V_NULL:
			n->val.node = se_json_make_null();
			break;
		case V_BOOL:
			n->val.node = se_json_make_bool(v->u.b);
			break;
		case V_INT:
			n->val.node = se_json_make_number_int(v->u.i);
			break;
		case V_LONG:
			n->val.node = se_json_make_number_int(v->u.l);
			break;
		case V_FLOAT:
			n->val.node = double_node(v->u.f, true);
			break;
		case V_DOUBLE:
			n->val.node = double_node(v->u.d, false);
			break;
		case V_STRING:
			n->val.node = se_json_make_string(v->u.s, v->len);
			break;
		default:
			n->val.node = NULL;
			break;
	}
	return n;
}

/* ---------------------------------------------------------------------
 * Types and names
 * ---------------------------------------------------------------------
 */

static const struct
{
	const char *name;
	DType		type;
}			type_names[] = {
	{"def", DT_DEF}, {"var", DT_DEF}, {"Object", DT_DEF},
	{"int", DT_INT}, {"short", DT_INT}, {"byte", DT_INT},
	{"long", DT_LONG}, {"float", DT_FLOAT}, {"double", DT_DOUBLE},
	{"boolean", DT_BOOLEAN}, {"char", DT_STRING}, {"String", DT_STRING},
	{"CharSequence", DT_STRING},
	{"List", DT_LIST}, {"ArrayList", DT_LIST}, {"Collection", DT_LIST},
	{"Iterable", DT_LIST},
	{"Map", DT_MAP}, {"HashMap", DT_MAP}, {"LinkedHashMap", DT_MAP},
	{"Integer", DT_INTEGER_BOX}, {"Short", DT_INTEGER_BOX},
	{"Byte", DT_INTEGER_BOX}, {"Long", DT_LONG_BOX}, {"Float", DT_FLOAT_BOX},
	{"Double", DT_DOUBLE_BOX}, {"Boolean", DT_BOOLEAN_BOX},
	{"Character", DT_STRING}, {"Number", DT_NUMBER},
};

static int
type_of_name(const char *s, int len)
{
	int			k;

	for (k = 0; k < lengthof(type_names); k++)
		if (strlen(type_names[k].name) == (size_t) len &&
			memcmp(type_names[k].name, s, len) == 0)
			return type_names[k].type;
	return -1;
}

static bool
is_class_name(const char *s)
{
	static const char *const classes[] = {
		"Math", "Integer", "Long", "Double", "Float", "Boolean", "String",
		"Objects", "Collections", "Short", "Byte", "Character",
	};
	int			k;

	for (k = 0; k < lengthof(classes); k++)
		if (strcmp(classes[k], s) == 0)
			return true;
	return false;
}

/* Is the token at offset k a type name (an identifier naming a type)? */
static bool
is_type_at(Parser *p, int k)
{
	Token	   *t = peek(p, k);

	return t->kind == T_IDENT && type_of_name(t->str, t->slen) >= 0;
}

/*
 * Parse a type at the current token: Name followed by any number of "[]"
 * (arrays are lists here).  Returns the DType or -1 (no error raised).
 */
static int
parse_type(Parser *p)
{
	Token	   *t = cur(p);
	int			ty;

	if (t->kind != T_IDENT || (ty = type_of_name(t->str, t->slen)) < 0)
		return -1;
	advance(p);
	while (cur(p)->kind == T_LBRACK && peek(p, 1)->kind == T_RBRACK)
	{
		advance(p);
		advance(p);
		ty = DT_LIST;
	}
	return ty;
}

/* Number of tokens of the type starting at offset k, 0 if none. */
static int
type_len_at(Parser *p, int k)
{
	int			n = 1;

	if (!is_type_at(p, k))
		return 0;
	while (peek(p, k + n)->kind == T_LBRACK && peek(p, k + n + 1)->kind == T_RBRACK)
		n += 2;
	return n;
}

static VarEnt *
find_var(Parser *p, const char *name, int len)
{
	int			k;

	for (k = p->nvars - 1; k >= 0; k--)
		if (p->vars[k].len == len && memcmp(p->vars[k].name, name, len) == 0)
			return &p->vars[k];
	return NULL;
}

/* Declare a local in the current scope; returns its slot or -1. */
static int
declare(Parser *p, Token *name, int type)
{
	VarEnt	   *v;

	if (name->kind != T_IDENT)
	{
		unexpected(p, "a variable name");
		return -1;
	}
	if (type_of_name(name->str, name->slen) >= 0 || is_class_name(name->str))
	{
		perr(p, name->pos, "invalid variable name [%s]: it names a type", name->str);
		return -1;
	}
	if (strcmp(name->str, "ctx") == 0 || strcmp(name->str, "params") == 0 ||
		find_var(p, name->str, name->slen) != NULL)
	{
		perr(p, name->pos, "variable [%s] is already defined", name->str);
		return -1;
	}
	if (p->nvars == p->varcap)
	{
		p->varcap = p->varcap ? p->varcap * 2 : 16;
		p->vars = p->vars ? (VarEnt *) repalloc(p->vars, sizeof(VarEnt) * p->varcap)
			: (VarEnt *) palloc(sizeof(VarEnt) * p->varcap);
	}
	if (p->nlocals == p->typecap)
	{
		p->typecap = p->typecap ? p->typecap * 2 : 16;
		p->local_types = p->local_types
			? (int *) repalloc(p->local_types, sizeof(int) * p->typecap)
			: (int *) palloc(sizeof(int) * p->typecap);
	}
	v = &p->vars[p->nvars++];
	v->name = intern(p, name->str, name->slen);
	v->len = name->slen;
	v->slot = p->nlocals++;
	v->depth = p->scope;
	p->local_types[v->slot] = type;
	return v->slot;
}

static void
push_scope(Parser *p)
{
	p->scope++;
}

static void
pop_scope(Parser *p)
{
	while (p->nvars > 0 && p->vars[p->nvars - 1].depth >= p->scope)
		p->nvars--;
	p->scope--;
}

static CtxKey
ctx_key(const char *s, int len)
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

/* ---------------------------------------------------------------------
 * Expressions
 * ---------------------------------------------------------------------
 */

static Node *parse_expr(Parser *p);
static bool parse_args(Parser *p, Node *n);
static Node *parse_unary(Parser *p);
static Node *parse_statement(Parser *p);
static Node *parse_block(Parser *p);

static bool
is_lvalue(const Node *n)
{
	switch (n->kind)
	{
		case E_LOCAL:
		case E_INDEX:
		case E_CTXFIELD:
			return true;
		case E_FIELD:
			return (n->flags & NF_NULLSAFE) == 0;
		default:
			return false;
	}
}

/* Is a lambda starting at the current token? */
static bool
lambda_ahead(Parser *p)
{
	int			k;

	if (cur(p)->kind == T_IDENT && peek(p, 1)->kind == T_ARROW)
		return true;
	if (cur(p)->kind != T_LPAREN)
		return false;
	k = 1;
	if (peek(p, k)->kind == T_RPAREN)
		return peek(p, k + 1)->kind == T_ARROW;
	for (;;)
	{
		int			tl = type_len_at(p, k);

		if (tl > 0 && peek(p, k + tl)->kind == T_IDENT)
			k += tl;
		if (peek(p, k)->kind != T_IDENT)
			return false;
		k++;
		if (peek(p, k)->kind == T_COMMA)
		{
			k++;
			continue;
		}
		return peek(p, k)->kind == T_RPAREN && peek(p, k + 1)->kind == T_ARROW;
	}
}

static Node *
parse_lambda(Parser *p)
{
	Node	   *n = mk(p, E_LAMBDA, cur(p)->pos);
	int			slots[8];
	int			ns = 0;
	int			saved_loop = p->loop_depth;

	push_scope(p);
	if (cur(p)->kind == T_IDENT)
	{
		slots[ns++] = declare(p, cur(p), DT_DEF);
		advance(p);
	}
	else
	{
		advance(p);				/* ( */
		while (cur(p)->kind != T_RPAREN && !p->failed)
		{
			int			ty = DT_DEF;

			if (type_len_at(p, 0) > 0 && peek(p, type_len_at(p, 0))->kind == T_IDENT)
				ty = parse_type(p);
			if (ns == lengthof(slots))
			{
				perr(p, cur(p)->pos, "too many lambda parameters");
				break;
			}
			slots[ns++] = declare(p, cur(p), ty);
			advance(p);
			if (cur(p)->kind == T_COMMA)
				advance(p);
		}
		expect(p, T_RPAREN);
	}
	expect(p, T_ARROW);
	if (p->failed)
	{
		pop_scope(p);
		return NULL;
	}
	n->nslots = ns;
	n->slots = (int *) palloc(sizeof(int) * (ns > 0 ? ns : 1));
	memcpy(n->slots, slots, sizeof(int) * ns);
	p->loop_depth = 0;
	if (cur(p)->kind == T_LBRACE)
	{
		n->flags |= NF_BLOCKBODY;
		n->a = parse_block(p);
	}
	else
		n->a = parse_expr(p);
	p->loop_depth = saved_loop;
	pop_scope(p);
	if (n->a == NULL)
		return NULL;
	return seal(p, n);
}

/* '(' args ')' with lambdas allowed as arguments; the '(' is current. */
static bool
parse_args(Parser *p, Node *n)
{
	Node	   *buf[16];
	Node	  **args = buf;
	int			cap = lengthof(buf);
	int			count = 0;

	if (!expect(p, T_LPAREN))
		return false;
	while (cur(p)->kind != T_RPAREN)
	{
		Node	   *a;

		if (lambda_ahead(p))
			a = parse_lambda(p);
		else
			a = parse_expr(p);
		if (a == NULL)
			return false;
		if (count == cap)
		{
			Node	  **na = (Node **) palloc(sizeof(Node *) * cap * 2);

			memcpy(na, args, sizeof(Node *) * count);
			args = na;
			cap *= 2;
		}
		args[count++] = a;
		if (cur(p)->kind == T_COMMA)
			advance(p);
		else if (cur(p)->kind != T_RPAREN)
		{
			unexpected(p, "',' or ')'");
			return false;
		}
	}
	advance(p);
	n->nargs = count;
	n->args = (Node **) palloc(sizeof(Node *) * (count > 0 ? count : 1));
	memcpy(n->args, args, sizeof(Node *) * count);
	return true;
}

static const struct
{
	const char *cls;
	const char *name;
	int			minargs;
	int			maxargs;
	StaticId	id;
}			statics[] = {
	{"Math", "abs", 1, 1, ST_MATH_ABS},
	{"Math", "max", 2, 2, ST_MATH_MAX},
	{"Math", "min", 2, 2, ST_MATH_MIN},
	{"Math", "floor", 1, 1, ST_MATH_FLOOR},
	{"Math", "ceil", 1, 1, ST_MATH_CEIL},
	{"Math", "round", 1, 1, ST_MATH_ROUND},
	{"Math", "sqrt", 1, 1, ST_MATH_SQRT},
	{"Math", "pow", 2, 2, ST_MATH_POW},
	{"Math", "log", 1, 1, ST_MATH_LOG},
	{"Math", "log10", 1, 1, ST_MATH_LOG10},
	{"Math", "exp", 1, 1, ST_MATH_EXP},
	{"Math", "signum", 1, 1, ST_MATH_SIGNUM},
	{"Math", "cbrt", 1, 1, ST_MATH_CBRT},
	{"Integer", "parseInt", 1, 1, ST_PARSE_INT},
	{"Integer", "valueOf", 1, 1, ST_VALUEOF_INT},
	{"Integer", "toString", 1, 1, ST_TOSTRING},
	{"Short", "parseShort", 1, 1, ST_PARSE_INT},
	{"Byte", "parseByte", 1, 1, ST_PARSE_INT},
	{"Long", "parseLong", 1, 1, ST_PARSE_LONG},
	{"Long", "valueOf", 1, 1, ST_VALUEOF_LONG},
	{"Long", "toString", 1, 1, ST_TOSTRING},
	{"Double", "parseDouble", 1, 1, ST_PARSE_DOUBLE},
	{"Double", "valueOf", 1, 1, ST_VALUEOF_DOUBLE},
	{"Double", "toString", 1, 1, ST_TOSTRING},
	{"Float", "parseFloat", 1, 1, ST_PARSE_FLOAT},
	{"Float", "valueOf", 1, 1, ST_VALUEOF_FLOAT},
	{"Float", "toString", 1, 1, ST_TOSTRING},
	{"Boolean", "parseBoolean", 1, 1, ST_PARSE_BOOLEAN},
	{"Boolean", "valueOf", 1, 1, ST_VALUEOF_BOOLEAN},
	{"Boolean", "toString", 1, 1, ST_TOSTRING},
	{"String", "valueOf", 1, 1, ST_STRING_VALUEOF},
	{"String", "join", 2, 2, ST_STRING_JOIN},
	{"Character", "toString", 1, 1, ST_TOSTRING},
	{"Objects", "equals", 2, 2, ST_OBJECTS_EQUALS},
	{"Objects", "isNull", 1, 1, ST_OBJECTS_ISNULL},
	{"Objects", "nonNull", 1, 1, ST_OBJECTS_NONNULL},
	{"Objects", "toString", 1, 1, ST_STRING_VALUEOF},
	{"Collections", "sort", 1, 1, ST_COLLECTIONS_SORT},
	{"Collections", "reverse", 1, 1, ST_COLLECTIONS_REVERSE},
};

/* Class.NAME constants; false if unknown. */
static bool
static_constant(const char *cls, const char *name, SVal *v)
{
	if (strcmp(cls, "Integer") == 0 && strcmp(name, "MAX_VALUE") == 0)
		sc_val_int(v, PG_INT32_MAX);
	else if (strcmp(cls, "Integer") == 0 && strcmp(name, "MIN_VALUE") == 0)
		sc_val_int(v, PG_INT32_MIN);
	else if (strcmp(cls, "Long") == 0 && strcmp(name, "MAX_VALUE") == 0)
		sc_val_long(v, PG_INT64_MAX);
	else if (strcmp(cls, "Long") == 0 && strcmp(name, "MIN_VALUE") == 0)
		sc_val_long(v, PG_INT64_MIN);
	else if (strcmp(cls, "Double") == 0 && strcmp(name, "MAX_VALUE") == 0)
		sc_val_double(v, 1.7976931348623157e308);
	else if (strcmp(cls, "Double") == 0 && strcmp(name, "MIN_VALUE") == 0)
		sc_val_double(v, 4.9e-324);
	else if (strcmp(cls, "Double") == 0 && strcmp(name, "POSITIVE_INFINITY") == 0)
		sc_val_double(v, INFINITY);
	else if (strcmp(cls, "Double") == 0 && strcmp(name, "NEGATIVE_INFINITY") == 0)
		sc_val_double(v, -INFINITY);
	else if (strcmp(cls, "Double") == 0 && strcmp(name, "NaN") == 0)
		sc_val_double(v, NAN);
	else if (strcmp(cls, "Math") == 0 && strcmp(name, "PI") == 0)
		sc_val_double(v, 3.141592653589793);
	else if (strcmp(cls, "Math") == 0 && strcmp(name, "E") == 0)
		sc_val_double(v, 2.718281828459045);
	else
		return false;
	return true;
}

/* Class '.' name [args]: the class identifier is current. */
static Node *
parse_static(Parser *p)
{
	Token	   *cls = cur(p);
	Token	   *name;
	Node	   *n;
	int			k;

	advance(p);
	if (cur(p)->kind != T_DOT)
	{
		unexpected(p, psprintf("'.' after [%s]", cls->str));
		return NULL;
	}
	advance(p);
	name = cur(p);
	if (name->kind != T_IDENT)
	{
		unexpected(p, "a method or field name");
		return NULL;
	}
	advance(p);
	if (cur(p)->kind != T_LPAREN)
	{
		SVal		v;

		if (!static_constant(cls->str, name->str, &v))
		{
			perr(p, name->pos, "unknown static field [%s.%s]", cls->str, name->str);
			return NULL;
		}
		return mk_const(p, cls->pos, &v);
	}
	n = mk(p, E_STATIC, name->pos);
	n->name = intern(p, name->str, name->slen);
	n->namelen = name->slen;
	if (!parse_args(p, n))
		return NULL;
	for (k = 0; k < lengthof(statics); k++)
		if (strcmp(statics[k].cls, cls->str) == 0 && strcmp(statics[k].name, name->str) == 0 &&
			n->nargs >= statics[k].minargs && n->nargs <= statics[k].maxargs)
		{
			n->op = statics[k].id;
			return seal(p, n);
		}
	perr(p, name->pos, "unknown call [%s] with [%d] arguments on type [%s]",
		 name->str, n->nargs, cls->str);
	return NULL;
}

/*
 * Names only score scripts have, at identifier t (current): doc['f'] or
 * doc.f (the field numbered in the script's table), _score, and ES's
 * score functions.  NULL without failing when t is none of them.
 */
static Node *
parse_score_primary(Parser *p, Token *t)
{
	SeScript   *s = p->script;
	Node	   *n;
	const char *field = NULL;
	int			ntokens = 4;	/* doc [ 'f' ] */
	int			k;

	if (strcmp(t->str, "_score") == 0)
	{
		advance(p);
		return mk(p, E_SCORE, t->pos);
	}
	if (peek(p, 1)->kind == T_LPAREN && sc_score_fn_id(t->str, -1) >= 0)
	{
		advance(p);
		n = mk(p, E_SCOREFN, t->pos);
		n->name = intern(p, t->str, t->slen);
		n->namelen = t->slen;
		if (!parse_args(p, n))
			return NULL;
		if ((n->op = sc_score_fn_id(t->str, n->nargs)) < 0)
		{
			perr(p, t->pos, "unknown call [%s] with [%d] arguments", t->str, n->nargs);
			return NULL;
		}
		return seal(p, n);
	}
	if (strcmp(t->str, "doc") != 0)
		return NULL;
	if (peek(p, 1)->kind == T_LBRACK && peek(p, 2)->kind == T_STRING &&
		peek(p, 3)->kind == T_RBRACK)
		field = peek(p, 2)->str;
	else if (peek(p, 1)->kind == T_DOT && peek(p, 2)->kind == T_IDENT &&
			 peek(p, 3)->kind != T_LPAREN)
	{
		field = peek(p, 2)->str;
		ntokens = 3;			/* doc . f */
	}
	else if (peek(p, 1)->kind == T_LBRACK)
	{
		/* doc[expr]: the name is computed, its field resolved per run */
		advance(p);
		advance(p);
		n = mk(p, E_DOCFIELD, t->pos);
		n->slot = -1;
		if ((n->a = parse_expr(p)) == NULL || !expect(p, T_RBRACK))
			return NULL;
		return seal(p, n);
	}
	else
	{
		perr(p, t->pos, "doc is read as doc['field'], doc[expression] or doc.field");
		return NULL;
	}
	for (k = 0; k < s->ndoc_fields; k++)
		if (strcmp(s->doc_fields[k], field) == 0)
			break;
	if (k == s->ndoc_fields)
	{
		s->doc_fields = s->doc_fields
			? (char **) repalloc(s->doc_fields, sizeof(char *) * (k + 1))
			: (char **) palloc(sizeof(char *));
		s->doc_fields[s->ndoc_fields++] = pstrdup(field);
	}
	n = mk(p, E_DOCFIELD, t->pos);
	n->slot = k;
	n->name = intern(p, field, strlen(field));
	n->namelen = strlen(field);
	for (k = 0; k < ntokens; k++)
		advance(p);
	return n;
}

/* [ ... ]: list or map literal; '[' is current. */
static Node *
parse_collection_literal(Parser *p)
{
	int			pos = cur(p)->pos;
	Node	   *n;
	int			count = 0;
	int			cap = 8;
	Node	  **items = (Node **) palloc(sizeof(Node *) * cap);
	bool		is_map = false;

	advance(p);
	if (cur(p)->kind == T_COLON && peek(p, 1)->kind == T_RBRACK)
	{
		advance(p);
		advance(p);
		n = mk(p, E_MAPLIT, pos);
		return seal(p, n);
	}
	while (cur(p)->kind != T_RBRACK)
	{
		Node	   *e = parse_expr(p);

		if (e == NULL)
			return NULL;
		if (count + 2 > cap)
		{
			cap *= 2;
			items = (Node **) repalloc(items, sizeof(Node *) * cap);
		}
		items[count++] = e;
		if (count == 1 && cur(p)->kind == T_COLON)
			is_map = true;
		if (is_map)
		{
			if (!expect(p, T_COLON))
				return NULL;
			e = parse_expr(p);
			if (e == NULL)
				return NULL;
			items[count++] = e;
		}
		if (cur(p)->kind == T_COMMA)
			advance(p);
		else if (cur(p)->kind != T_RBRACK)
		{
			unexpected(p, is_map ? "',' or ']' in map initializer" : "',' or ']' in list initializer");
			return NULL;
		}
	}
	advance(p);
	n = mk(p, is_map ? E_MAPLIT : E_LIST, pos);
	n->args = items;
	n->nargs = count;
	return seal(p, n);
}

static Node *
parse_primary(Parser *p)
{
	Token	   *t = cur(p);
	SVal		v;
	Node	   *n;

	switch (t->kind)
	{
		case T_INT:
			if (t->wraps && !t->overflow)
			{
				sc_val_int(&v, (int32) (uint32) t->ival);
				advance(p);
				return mk_const(p, t->pos, &v);
			}
			if (t->overflow || t->ival > PG_INT32_MAX)
			{
				perr(p, t->pos, "invalid int constant [%.*s]; if a long constant was intended, append L",
					 t->len, p->src + t->pos);
				return NULL;
			}
			sc_val_int(&v, (int32) t->ival);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_LONG:
			if (t->wraps && !t->overflow)
			{
				sc_val_long(&v, (int64) t->ival);
				advance(p);
				return mk_const(p, t->pos, &v);
			}
			if (t->overflow || t->ival > PG_INT64_MAX)
			{
				perr(p, t->pos, "invalid long constant [%.*s]", t->len, p->src + t->pos);
				return NULL;
			}
			sc_val_long(&v, (int64) t->ival);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_FLOAT:
			sc_val_float(&v, (float) t->dval);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_DOUBLE:
			sc_val_double(&v, t->dval);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_STRING:
			sc_val_string(&v, t->str, t->slen);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_TRUE:
		case T_FALSE:
			sc_val_bool(&v, t->kind == T_TRUE);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_NULL:
			sc_val_null(&v);
			advance(p);
			return mk_const(p, t->pos, &v);
		case T_LPAREN:
			advance(p);
			n = parse_expr(p);
			if (n == NULL || !expect(p, T_RPAREN))
				return NULL;
			return n;
		case T_LBRACK:
			return parse_collection_literal(p);
		case T_NEW:
			{
				Token	   *ty;
				int			dt;

				advance(p);
				ty = cur(p);
				if (ty->kind != T_IDENT)
				{
					unexpected(p, "a type after 'new'");
					return NULL;
				}
				if (strcmp(ty->str, "ArrayList") == 0 || strcmp(ty->str, "LinkedList") == 0)
					dt = DT_LIST;
				else if (strcmp(ty->str, "HashMap") == 0 || strcmp(ty->str, "LinkedHashMap") == 0 ||
						 strcmp(ty->str, "TreeMap") == 0)
					dt = DT_MAP;
				else
				{
					perr(p, ty->pos, "cannot instantiate [%s]: only ArrayList, LinkedList, HashMap, LinkedHashMap and TreeMap are supported",
						 ty->str);
					return NULL;
				}
				advance(p);
				n = mk(p, E_NEW, ty->pos);
				n->type = dt;
				n->name = intern(p, ty->str, ty->slen);
				if (!parse_args(p, n))
					return NULL;
				if (n->nargs > 1)
				{
					perr(p, ty->pos, "constructor [%s] takes at most 1 argument", ty->str);
					return NULL;
				}
				return seal(p, n);
			}
		case T_IDENT:
			{
				VarEnt	   *var = find_var(p, t->str, t->slen);

				if (var != NULL)
				{
					n = mk(p, E_LOCAL, t->pos);
					n->slot = var->slot;
					n->type = p->local_types[var->slot];
					n->name = var->name;
					n->namelen = var->len;
					advance(p);
					return n;
				}
				if (p->script->score)
				{
					n = parse_score_primary(p, t);
					if (n != NULL || p->failed)
						return n;
				}
				else if (strcmp(t->str, "ctx") == 0)
				{
					advance(p);
					return mk(p, E_CTX, t->pos);
				}
				if (strcmp(t->str, "params") == 0)
				{
					n = mk(p, E_CONST, t->pos);
					sc_val_container(&n->val, p->script->params, true);
					advance(p);
					return n;
				}
				if (is_class_name(t->str) && peek(p, 1)->kind == T_DOT)
					return parse_static(p);
				perr(p, t->pos, "cannot resolve symbol [%s]", t->str);
				return NULL;
			}
		default:
			unexpected(p, "an expression");
			return NULL;
	}
}

/* Field access, index, call and postfix ++/-- after a primary. */
static Node *
parse_postfix(Parser *p, Node *n)
{
	while (n != NULL && !p->failed)
	{
		Token	   *t = cur(p);

		if (t->kind == T_DOT || t->kind == T_NSDOT)
		{
			Token	   *name = peek(p, 1);
			Node	   *m;

			if (name->kind != T_IDENT)
			{
				advance(p);
				/* keywords are fine as map keys: ctx._source.new, .in, ... */
				if (name->kind >= T_IF && name->kind <= T_THROW)
				{
					name->str = pnstrdup(p->src + name->pos, name->len);
					name->slen = name->len;
				}
				else
				{
					unexpected(p, "a field or method name");
					return NULL;
				}
			}
			else
				advance(p);
			advance(p);
			if (cur(p)->kind == T_LPAREN)
			{
				m = mk(p, E_CALL, name->pos);
				m->name = intern(p, name->str, name->slen);
				m->namelen = name->slen;
				m->op = sc_method_id(name->str, name->slen);
				m->a = n;
				if (t->kind == T_NSDOT)
					m->flags |= NF_NULLSAFE;
				if (!parse_args(p, m))
					return NULL;
			}
			else if (n->kind == E_CTX && t->kind == T_DOT &&
					 ctx_key(name->str, name->slen) != CK_OTHER)
			{
				m = mk(p, E_CTXFIELD, name->pos);
				m->op = ctx_key(name->str, name->slen);
				m->name = intern(p, name->str, name->slen);
				m->namelen = name->slen;
			}
			else
			{
				m = mk(p, E_FIELD, name->pos);
				m->name = intern(p, name->str, name->slen);
				m->namelen = name->slen;
				m->a = n;
				if (t->kind == T_NSDOT)
					m->flags |= NF_NULLSAFE;
			}
			n = seal(p, m);
		}
		else if (t->kind == T_LBRACK)
		{
			Node	   *m = mk(p, E_INDEX, t->pos);
			Node	   *ix;

			advance(p);
			ix = parse_expr(p);
			if (ix == NULL || !expect(p, T_RBRACK))
				return NULL;
			if (n->kind == E_CTX && ix->kind == E_CONST && ix->val.kind == V_STRING &&
				ctx_key(ix->val.u.s, ix->val.len) != CK_OTHER)
			{
				m->kind = E_CTXFIELD;
				m->op = ctx_key(ix->val.u.s, ix->val.len);
				m->name = intern(p, ix->val.u.s, ix->val.len);
				m->namelen = ix->val.len;
			}
			else
			{
				m->a = n;
				m->b = ix;
			}
			n = seal(p, m);
		}
		else if (t->kind == T_INC || t->kind == T_DEC)
		{
			Node	   *m;

			if (!is_lvalue(n))
			{
				perr(p, t->pos, "invalid increment target: not a variable, field or element");
				return NULL;
			}
			m = mk(p, E_INCDEC, t->pos);
			m->op = t->kind;
			m->flags |= NF_POSTFIX;
			m->a = n;
			advance(p);
			return seal(p, m);
		}
		else
			break;
	}
	return n;
}

static bool
cast_ahead(Parser *p)
{
	int			tl;

	if (cur(p)->kind != T_LPAREN)
		return false;
	tl = type_len_at(p, 1);
	return tl > 0 && peek(p, 1 + tl)->kind == T_RPAREN;
}

static Node *
parse_unary(Parser *p)
{
	Token	   *t = cur(p);
	Node	   *n = NULL;

	if (!enter(p))
		return NULL;
	switch (t->kind)
	{
		case T_MINUS:
			{
				Token	   *lit = peek(p, 1);
				TokKind		after = peek(p, 2)->kind;

				/* -2147483648 and -9223372036854775808L are literals */
				if ((lit->kind == T_INT || lit->kind == T_LONG) && !lit->overflow && !lit->wraps &&
					after != T_DOT && after != T_NSDOT && after != T_LBRACK &&
					after != T_INC && after != T_DEC)
				{
					SVal		v;

					if (lit->kind == T_INT && lit->ival <= (uint64) PG_INT32_MAX + 1)
						sc_val_int(&v, (int32) (-(int64) lit->ival));
					else if (lit->kind == T_LONG && lit->ival <= (uint64) PG_INT64_MAX + 1)
						sc_val_long(&v, lit->ival == (uint64) PG_INT64_MAX + 1
									? PG_INT64_MIN : -(int64) lit->ival);
					else
					{
						perr(p, lit->pos, "invalid %s constant [-%.*s]",
							 lit->kind == T_INT ? "int" : "long", lit->len, p->src + lit->pos);
						break;
					}
					advance(p);
					advance(p);
					n = mk_const(p, t->pos, &v);
					break;
				}
			}
			/* FALLTHROUGH */
		case T_PLUS:
		case T_NOT:
		case T_BNOT:
			{
				Node	   *a;

				advance(p);
				a = parse_unary(p);
				if (a == NULL)
					break;
				if (t->kind == T_MINUS && a->kind == E_CONST &&
					(a->val.kind == V_DOUBLE || a->val.kind == V_FLOAT))
				{
					SVal		v = a->val;

					if (v.kind == V_DOUBLE)
						v.u.d = -v.u.d;
					else
						v.u.f = -v.u.f;
					n = mk_const(p, t->pos, &v);
					break;
				}
				n = mk(p, E_UNARY, t->pos);
				n->op = t->kind;
				n->a = a;
				n = seal(p, n);
			}
			break;
		case T_INC:
		case T_DEC:
			{
				Node	   *a;

				advance(p);
				a = parse_unary(p);
				if (a == NULL)
					break;
				if (!is_lvalue(a))
				{
					perr(p, t->pos, "invalid increment target: not a variable, field or element");
					break;
				}
				n = mk(p, E_INCDEC, t->pos);
				n->op = t->kind;
				n->a = a;
				n = seal(p, n);
			}
			break;
		case T_LPAREN:
			if (cast_ahead(p))
			{
				Node	   *a;
				int			ty;

				advance(p);
				ty = parse_type(p);
				expect(p, T_RPAREN);
				a = parse_unary(p);
				if (a == NULL)
					break;
				n = mk(p, E_CAST, t->pos);
				n->type = ty;
				n->a = a;
				n = seal(p, n);
				break;
			}
			/* FALLTHROUGH */
		default:
			n = parse_primary(p);
			n = parse_postfix(p, n);
			break;
	}
	leave(p);
	return p->failed ? NULL : n;
}

/* Painless's precedence table, loosest first (instanceof below relational). */
static int
binary_prec(TokKind k)
{
	switch (k)
	{
		case T_OROR:
			return 1;
		case T_ANDAND:
			return 2;
		case T_BOR:
			return 3;
		case T_BXOR:
			return 4;
		case T_BAND:
			return 5;
		case T_EQ:
		case T_NE:
		case T_EQR:
		case T_NER:
			return 6;
		case T_INSTANCEOF:
			return 7;
		case T_LT:
		case T_LE:
		case T_GT:
		case T_GE:
			return 8;
		case T_SHL:
		case T_SHR:
		case T_USHR:
			return 9;
		case T_PLUS:
		case T_MINUS:
			return 10;
		case T_STAR:
		case T_SLASH:
		case T_PERCENT:
			return 11;
		default:
			return 0;
	}
}

static Node *
parse_binary(Parser *p, int minprec)
{
	Node	   *left;

	if (!enter(p))
		return NULL;
	left = parse_unary(p);
	while (left != NULL && !p->failed)
	{
		Token	   *t = cur(p);
		int			prec = binary_prec(t->kind);
		Node	   *n;

		if (prec == 0 || prec < minprec)
			break;
		advance(p);
		if (t->kind == T_INSTANCEOF)
		{
			int			ty = parse_type(p);

			if (ty < 0)
			{
				unexpected(p, "a type after 'instanceof'");
				left = NULL;
				break;
			}
			n = mk(p, E_INSTANCEOF, t->pos);
			n->type = ty;
			n->a = left;
		}
		else
		{
			Node	   *right = parse_binary(p, prec + 1);

			if (right == NULL)
			{
				left = NULL;
				break;
			}
			n = mk(p, t->kind == T_ANDAND ? E_ANDAND : t->kind == T_OROR ? E_OROR : E_BINARY,
				   t->pos);
			n->op = t->kind;
			n->a = left;
			n->b = right;
		}
		left = seal(p, n);
	}
	leave(p);
	return p->failed ? NULL : left;
}

/*
 * The numeric kind (V_INT..V_DOUBLE) an expression always has, when that is
 * known without running it (literals, typed locals, casts, arithmetic on
 * those); -1 otherwise.
 */
static int
static_numeric_kind(Parser *p, const Node *n)
{
	int			a,
				b;

	switch ((NodeKind) n->kind)
	{
		case E_CONST:
			return SV_IS_NUM(n->val.kind) ? n->val.kind : -1;
		case E_LOCAL:
		case E_CAST:
			switch (n->kind == E_LOCAL ? p->local_types[n->slot] : n->type)
			{
				case DT_INT:
					return V_INT;
				case DT_LONG:
					return V_LONG;
				case DT_FLOAT:
					return V_FLOAT;
				case DT_DOUBLE:
					return V_DOUBLE;
				default:
					return -1;
			}
		case E_UNARY:
			return (n->op == T_MINUS || n->op == T_PLUS) ? static_numeric_kind(p, n->a) : -1;
		case E_BINARY:
			if (n->op != T_PLUS && n->op != T_MINUS && n->op != T_STAR &&
				n->op != T_SLASH && n->op != T_PERCENT)
				return -1;
			a = static_numeric_kind(p, n->a);
			b = static_numeric_kind(p, n->b);
			return (a < 0 || b < 0) ? -1 : Max(a, b);
		default:
			return -1;
	}
}

/*
 * a ? b : c; binds tighter than Elvis, so the else branch is a conditional.
 * As in Java, numeric branches of known different types are promoted
 * (true ? 1 : 2.0 is 1.0).
 */
static Node *
parse_ternary(Parser *p)
{
	Node	   *c = parse_binary(p, 1);

	if (c != NULL && cur(p)->kind == T_QUESTION)
	{
		Node	   *n = mk(p, E_COND, cur(p)->pos);

		advance(p);
		if (!enter(p))
			return NULL;
		n->a = c;
		n->b = parse_expr(p);
		if (n->b != NULL && expect(p, T_COLON))
			n->c = parse_ternary(p);
		leave(p);
		if (n->c == NULL)
			return NULL;
		{
			int			kb = static_numeric_kind(p, n->b);
			int			kc = static_numeric_kind(p, n->c);

			if (kb >= 0 && kc >= 0 && kb != kc)
			{
				n->flags |= NF_PROMOTE;
				n->type = Max(kb, kc);
			}
		}
		return seal(p, n);
	}
	return c;
}

/* a ?: b, right-associative, the loosest operator below assignment */
static Node *
parse_elvis(Parser *p)
{
	Node	   *left = parse_ternary(p);

	if (left != NULL && cur(p)->kind == T_ELVIS)
	{
		Node	   *n = mk(p, E_ELVIS, cur(p)->pos);

		advance(p);
		if (!enter(p))
			return NULL;
		n->a = left;
		n->b = parse_elvis(p);
		leave(p);
		if (n->b == NULL)
			return NULL;
		return seal(p, n);
	}
	return left;
}

static int
assign_binop(TokKind k)
{
	switch (k)
	{
		case T_ASSIGN:
			return T_ASSIGN;
		case T_ADD_ASSIGN:
			return T_PLUS;
		case T_SUB_ASSIGN:
			return T_MINUS;
		case T_MUL_ASSIGN:
			return T_STAR;
		case T_DIV_ASSIGN:
			return T_SLASH;
		case T_REM_ASSIGN:
			return T_PERCENT;
		case T_AND_ASSIGN:
			return T_BAND;
		case T_OR_ASSIGN:
			return T_BOR;
		case T_XOR_ASSIGN:
			return T_BXOR;
		case T_SHL_ASSIGN:
			return T_SHL;
		case T_SHR_ASSIGN:
			return T_SHR;
		case T_USHR_ASSIGN:
			return T_USHR;
		default:
			return -1;
	}
}

static Node *
parse_expr(Parser *p)
{
	Node	   *left;
	Token	   *t;
	int			op;

	if (!enter(p))
		return NULL;
	left = parse_elvis(p);
	t = cur(p);
	if (left != NULL && (op = assign_binop(t->kind)) >= 0)
	{
		Node	   *n;

		if (!is_lvalue(left))
		{
			perr(p, t->pos, "invalid assignment: the left side is not a variable, field or element");
			leave(p);
			return NULL;
		}
		n = mk(p, E_ASSIGN, t->pos);
		n->op = op;
		n->a = left;
		advance(p);
		n->b = parse_expr(p);
		left = n->b ? seal(p, n) : NULL;
	}
	leave(p);
	return p->failed ? NULL : left;
}

/* ---------------------------------------------------------------------
 * Statements
 * ---------------------------------------------------------------------
 */

/* After a simple statement: ';', or nothing before '}' / end of script. */
static bool
terminator(Parser *p)
{
	TokKind		k = cur(p)->kind;

	if (k == T_SEMI)
	{
		advance(p);
		return true;
	}
	if (k == T_RBRACE || k == T_EOF)
		return true;
	unexpected(p, "';'");
	return false;
}

/* Does a declaration start here (Type [ [] ]* name)? */
static bool
decl_ahead(Parser *p)
{
	int			tl = type_len_at(p, 0);

	return tl > 0 && peek(p, tl)->kind == T_IDENT;
}

/* Type name [= init] {, name [= init]}; no terminator. */
static Node *
parse_declaration(Parser *p)
{
	int			pos = cur(p)->pos;
	int			ty = parse_type(p);
	Node	   *block = NULL;
	Node	   *first = NULL;

	for (;;)
	{
		Node	   *d = mk(p, S_DECL, cur(p)->pos);
		Node	   *init = NULL;
		Token	   *name = cur(p);

		if (name->kind != T_IDENT)
		{
			unexpected(p, "a variable name");
			return NULL;
		}
		advance(p);
		if (cur(p)->kind == T_ASSIGN)
		{
			advance(p);
			init = parse_expr(p);
			if (init == NULL)
				return NULL;
		}
		/* declared after the initializer: "def x = x" does not see itself */
		d->slot = declare(p, name, ty);
		if (d->slot < 0)
			return NULL;
		d->type = ty;
		d->a = init;
		d = seal(p, d);
		if (d == NULL)
			return NULL;
		if (first == NULL)
			first = d;
		else
		{
			if (block == NULL)
			{
				block = mk(p, S_BLOCK, pos);
				block->args = (Node **) palloc(sizeof(Node *) * 4);
				block->args[block->nargs++] = first;
			}
			else if ((block->nargs & (block->nargs - 1)) == 0 && block->nargs >= 4)
				block->args = (Node **) repalloc(block->args, sizeof(Node *) * block->nargs * 2);
			block->args[block->nargs++] = d;
		}
		if (cur(p)->kind != T_COMMA)
			break;
		advance(p);
	}
	return block ? seal(p, block) : first;
}

/* Statements until '}' (inner) or end of script; no scope handling. */
static Node *
parse_statements(Parser *p, int pos, bool inner)
{
	Node	   *b = mk(p, S_BLOCK, pos);
	int			cap = 8;

	b->args = (Node **) palloc(sizeof(Node *) * cap);
	while (!p->failed)
	{
		Node	   *s;
		TokKind		k = cur(p)->kind;

		if (k == T_EOF || (inner && k == T_RBRACE))
			break;
		if (!inner && k == T_RBRACE)
		{
			unexpected(p, "a statement");
			return NULL;
		}
		s = parse_statement(p);
		if (s == NULL)
			return NULL;
		if (b->nargs == cap)
		{
			cap *= 2;
			b->args = (Node **) repalloc(b->args, sizeof(Node *) * cap);
		}
		b->args[b->nargs++] = s;
	}
	return p->failed ? NULL : seal(p, b);
}

static Node *
parse_block(Parser *p)
{
	int			pos = cur(p)->pos;
	Node	   *b;

	if (!expect(p, T_LBRACE))
		return NULL;
	push_scope(p);
	b = parse_statements(p, pos, true);
	pop_scope(p);
	if (b == NULL || !expect(p, T_RBRACE))
		return NULL;
	return b;
}

/* A loop or if body: a statement in its own scope. */
static Node *
parse_body(Parser *p)
{
	Node	   *s;

	push_scope(p);
	s = parse_statement(p);
	pop_scope(p);
	return s;
}

static Node *
parse_for(Parser *p)
{
	int			pos = cur(p)->pos;
	Node	   *n;

	advance(p);
	if (!expect(p, T_LPAREN))
		return NULL;
	push_scope(p);

	/* for (Type x : expr) / for (x in expr) */
	if ((decl_ahead(p) && peek(p, type_len_at(p, 0) + 1)->kind == T_COLON) ||
		(cur(p)->kind == T_IDENT && peek(p, 1)->kind == T_IN))
	{
		int			ty = DT_DEF;
		Token	   *name;
		Node	   *iter;

		if (peek(p, 1)->kind != T_IN)
			ty = parse_type(p);
		name = cur(p);
		advance(p);
		advance(p);				/* ':' or 'in' */
		iter = parse_expr(p);
		n = mk(p, S_FOREACH, pos);
		if (iter == NULL)
			goto fail;
		n->slot = declare(p, name, ty);
		if (n->slot < 0 || !expect(p, T_RPAREN))
			goto fail;
		n->type = ty;
		n->a = iter;
	}
	else
	{
		n = mk(p, S_FOR, pos);
		if (cur(p)->kind != T_SEMI)
		{
			if (decl_ahead(p))
				n->d = parse_declaration(p);
			else
			{
				Node	   *e = parse_expr(p);

				if (e != NULL)
				{
					n->d = mk(p, S_EXPR, e->pos);
					n->d->a = e;
					n->d = seal(p, n->d);
				}
			}
			if (n->d == NULL)
				goto fail;
		}
		if (!expect(p, T_SEMI))
			goto fail;
		if (cur(p)->kind != T_SEMI)
		{
			n->a = parse_expr(p);
			if (n->a == NULL)
				goto fail;
		}
		if (!expect(p, T_SEMI))
			goto fail;
		if (cur(p)->kind != T_RPAREN)
		{
			Node	   *u = mk(p, S_BLOCK, cur(p)->pos);
			int			cap = 4;

			u->args = (Node **) palloc(sizeof(Node *) * cap);
			for (;;)
			{
				Node	   *e = parse_expr(p);
				Node	   *s;

				if (e == NULL)
					goto fail;
				s = mk(p, S_EXPR, e->pos);
				s->a = e;
				if (u->nargs == cap)
				{
					cap *= 2;
					u->args = (Node **) repalloc(u->args, sizeof(Node *) * cap);
				}
				u->args[u->nargs++] = seal(p, s);
				if (cur(p)->kind != T_COMMA)
					break;
				advance(p);
			}
			n->c = seal(p, u);
			if (n->c == NULL)
				goto fail;
		}
		if (!expect(p, T_RPAREN))
			goto fail;
	}
	p->loop_depth++;
	if (cur(p)->kind == T_SEMI)
	{
		advance(p);
		n->b = mk(p, S_BLOCK, pos);
	}
	else
		n->b = parse_body(p);
	p->loop_depth--;
	pop_scope(p);
	if (n->b == NULL)
		return NULL;
	return seal(p, n);

fail:
	pop_scope(p);
	return NULL;
}

static Node *
parse_statement(Parser *p)
{
	Token	   *t = cur(p);
	Node	   *n = NULL;

	if (!enter(p))
		return NULL;
	switch (t->kind)
	{
		case T_LBRACE:
			n = parse_block(p);
			break;
		case T_SEMI:
			advance(p);
			n = mk(p, S_BLOCK, t->pos);
			break;
		case T_IF:
			advance(p);
			n = mk(p, S_IF, t->pos);
			if (!expect(p, T_LPAREN) || (n->a = parse_expr(p)) == NULL ||
				!expect(p, T_RPAREN) || (n->b = parse_body(p)) == NULL)
			{
				n = NULL;
				break;
			}
			if (cur(p)->kind == T_ELSE)
			{
				advance(p);
				if ((n->c = parse_body(p)) == NULL)
				{
					n = NULL;
					break;
				}
			}
			n = seal(p, n);
			break;
		case T_WHILE:
			advance(p);
			n = mk(p, S_WHILE, t->pos);
			if (!expect(p, T_LPAREN) || (n->a = parse_expr(p)) == NULL ||
				!expect(p, T_RPAREN))
			{
				n = NULL;
				break;
			}
			p->loop_depth++;
			if (cur(p)->kind == T_SEMI)
			{
				advance(p);
				n->b = mk(p, S_BLOCK, t->pos);
			}
			else
				n->b = parse_body(p);
			p->loop_depth--;
			n = n->b ? seal(p, n) : NULL;
			break;
		case T_DO:
			advance(p);
			n = mk(p, S_DO, t->pos);
			p->loop_depth++;
			n->b = parse_body(p);
			p->loop_depth--;
			if (n->b == NULL || !expect(p, T_WHILE) || !expect(p, T_LPAREN) ||
				(n->a = parse_expr(p)) == NULL || !expect(p, T_RPAREN) ||
				!terminator(p))
			{
				n = NULL;
				break;
			}
			n = seal(p, n);
			break;
		case T_FOR:
			n = parse_for(p);
			break;
		case T_BREAK:
		case T_CONTINUE:
			if (p->loop_depth == 0)
			{
				perr(p, t->pos, "%s must be inside a loop", sc_token_name(t->kind));
				break;
			}
			advance(p);
			n = mk(p, t->kind == T_BREAK ? S_BREAK : S_CONTINUE, t->pos);
			if (!terminator(p))
				n = NULL;
			break;
		case T_RETURN:
			advance(p);
			n = mk(p, S_RETURN, t->pos);
			if (cur(p)->kind != T_SEMI && cur(p)->kind != T_RBRACE && cur(p)->kind != T_EOF)
			{
				n->a = parse_expr(p);
				if (n->a == NULL)
				{
					n = NULL;
					break;
				}
			}
			n = terminator(p) ? seal(p, n) : NULL;
			break;
		case T_TRY:
		case T_THROW:
		case T_CATCH:
			perr(p, t->pos, "'%s' is not supported", sc_token_name(t->kind));
			break;
		case T_ELSE:
			perr(p, t->pos, "unexpected token 'else' without a matching 'if'");
			break;
		default:
			if (decl_ahead(p))
			{
				n = parse_declaration(p);
				if (n != NULL && !terminator(p))
					n = NULL;
			}
			else
			{
				Node	   *e = parse_expr(p);

				if (e == NULL || !terminator(p))
					break;
				n = mk(p, S_EXPR, e->pos);
				n->a = e;
				n = seal(p, n);
			}
			break;
	}
	leave(p);
	return p->failed ? NULL : n;
}

/* ---------------------------------------------------------------------
 * Entry point
 * ---------------------------------------------------------------------
 */

static SeScript *
compile(const char *source, const SeJson *params, bool score, SeError *err)
{
	Parser		p;
	SeScript   *s;
	int			len;
	int			errpos;
	char	   *errmsg;
	Run			dummy;
	int			bad;

	if (source == NULL)
		source = "";
	len = strlen(source);
	if (len > SE_SCRIPT_MAX_SOURCE)
	{
		se_error_set(err, 400, "script_exception",
					 "compile error: script is %d bytes, more than the maximum of %d",
					 len, SE_SCRIPT_MAX_SOURCE);
		return NULL;
	}
	if ((bad = se_utf8_validate(source, len)) >= 0)
	{
		int			line,
					col;

		sc_position(source, len, bad, &line, &col);
		se_error_set(err, 400, "script_exception",
					 "compile error at [%d:%d]: invalid UTF-8 in script", line, col);
		return NULL;
	}
	if (params != NULL && params->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "script_exception",
					 "compile error: params must be an object, not %s",
					 se_json_type_name(params->type));
		return NULL;
	}

	s = (SeScript *) palloc0(sizeof(SeScript));
	s->source = pnstrdup(source, len);
	s->srclen = len;
	s->score = score;

	/* params: a private, read-only deep copy */
	memset(&dummy, 0, sizeof(dummy));
	dummy.mem = PG_INT64_MAX;
	dummy.steps = PG_INT64_MAX;
	dummy.err = err;
	if (params != NULL)
	{
		s->params = sc_json_copy(&dummy, params, 0, -1);
		if (s->params == NULL)
		{
			se_error_set(err, 400, "script_exception",
						 "compile error: params are nested too deeply");
			return NULL;
		}
	}
	else
	{
		s->params = (SeJson *) palloc0(sizeof(SeJson));
		s->params->type = SE_JSON_OBJECT;
	}

	memset(&p, 0, sizeof(p));
	p.src = s->source;
	p.srclen = len;
	p.err = err;
	p.script = s;
	p.toks = sc_lex(s->source, len, &p.ntoks, &errpos, &errmsg);
	if (p.toks == NULL)
	{
		perr(&p, errpos, "%s", errmsg);
		return NULL;
	}
	s->root = parse_statements(&p, 0, false);
	if (s->root == NULL || p.failed)
	{
		if (!p.failed)
			perr(&p, cur(&p)->pos, "invalid script");
		return NULL;
	}
	s->nlocals = p.nlocals;
	s->local_types = p.local_types;
	pfree(p.toks);

	/* a score script's final expression statement is its value */
	if (score && s->root->nargs > 0 &&
		s->root->args[s->root->nargs - 1]->kind == S_EXPR)
		s->root->args[s->root->nargs - 1]->kind = S_RETURN;
	return s;
}

SeScript *
se_script_compile(const char *source, const SeJson *params, SeError *err)
{
	return compile(source, params, false, err);
}

SeScript *
se_script_compile_score(const char *source, const SeJson *params, SeError *err)
{
	return compile(source, params, true, err);
}

const char *const *
se_script_doc_fields(const SeScript *s, int *n)
{
	*n = s->ndoc_fields;
	return (const char *const *) s->doc_fields;
}

const char *
se_script_source(const SeScript *s)
{
	return s->source;
}
