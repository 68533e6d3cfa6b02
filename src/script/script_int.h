/*-------------------------------------------------------------------------
 *
 * script_int.h
 *	  Internals shared by the files of src/script: tokens, the AST, runtime
 *	  values and the run state.  Not part of the module's contract.
 *
 * Runtime values (SVal) are small structs passed by pointer.  Lists and
 * maps are SeJson ARRAY / OBJECT nodes, so a value read from ctx._source is
 * the document's own node and writes go straight into the document; Java's
 * reference semantics (def l = ctx._source.tags; l.add(x)) come for free.
 * Scalars read from the DOM remember their node, so copying a field
 * (ctx._source.a = ctx._source.b) reuses it instead of allocating.
 *
 * Containers from params are read-only (ES documents params as read-only
 * and shares them across documents): mutating one is an error, and storing
 * one anywhere (a local, a field, a list) stores a deep copy.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SCRIPT_INT_H
#define SE_SCRIPT_INT_H

#include "script/script.h"

/* Limits on hostile input */
#define SC_MAX_DEPTH		256		/* AST depth and parser recursion */
/* equals/toString/copy recursion: whatever a document may nest (util/json.h) */
#define SC_MAX_WALK_DEPTH	(SE_JSON_MAX_DEPTH + 8)
#define SC_MAX_SOURCE_NODES	((int64) 20 * 1000 * 1000)	/* final _source walk */
#define SC_MAX_STRING		((int64) 16 * 1024 * 1024)
#define SC_MAX_ALLOC		((int64) 0x3fffffff)	/* palloc's MaxAllocSize */

/* How AllocSet lays out chunks: what an allocation really costs */
#define SC_CHUNK_LIMIT		8192	/* larger requests get a block each */
#define SC_CHUNK_OVERHEAD	16		/* chunk header */
#define SC_BLOCK_OVERHEAD	40		/* block header */

/* ---------------------------------------------------------------------
 * Tokens (lexer.c)
 * ---------------------------------------------------------------------
 */
typedef enum TokKind
{
	T_EOF,
	T_IDENT,
	T_INT,						/* integer literal without suffix */
	T_LONG,						/* ...with L */
	T_FLOAT,					/* decimal with f */
	T_DOUBLE,					/* decimal, or with d */
	T_STRING,
	/* keywords */
	T_IF, T_ELSE, T_FOR, T_WHILE, T_DO, T_BREAK, T_CONTINUE, T_RETURN,
	T_NEW, T_TRUE, T_FALSE, T_NULL, T_INSTANCEOF, T_IN, T_TRY, T_CATCH,
	T_THROW,
	/* punctuation */
	T_LBRACE, T_RBRACE, T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK,
	T_SEMI, T_COMMA, T_DOT, T_NSDOT, T_COLON, T_QUESTION, T_ELVIS, T_ARROW,
	T_DCOLON,
	/* operators */
	T_ASSIGN, T_ADD_ASSIGN, T_SUB_ASSIGN, T_MUL_ASSIGN, T_DIV_ASSIGN,
	T_REM_ASSIGN, T_AND_ASSIGN, T_OR_ASSIGN, T_XOR_ASSIGN, T_SHL_ASSIGN,
	T_SHR_ASSIGN, T_USHR_ASSIGN,
	T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_INC, T_DEC,
	T_EQ, T_NE, T_EQR, T_NER, T_LT, T_LE, T_GT, T_GE,
	T_ANDAND, T_OROR, T_NOT, T_BNOT, T_BAND, T_BOR, T_BXOR,
	T_SHL, T_SHR, T_USHR
} TokKind;

typedef struct Token
{
	TokKind		kind;
	int			pos;			/* byte offset in the source */
	int			len;			/* bytes of source text */
	uint64		ival;			/* T_INT/T_LONG magnitude */
	bool		overflow;		/* integer literal beyond uint64 (uint32 for hex/octal int) */
	bool		wraps;			/* hex/octal: two's complement, 0xFFFFFFFF is -1 */
	double		dval;			/* T_FLOAT/T_DOUBLE */
	char	   *str;			/* T_STRING decoded, T_IDENT copied (NUL-terminated) */
	int			slen;
} Token;

/* Tokenize src[0..len); on error sets *errpos and *errmsg and returns NULL. */
extern Token *sc_lex(const char *src, int len, int *ntokens,
					 int *errpos, char **errmsg);
extern const char *sc_token_name(TokKind k);

/* ---------------------------------------------------------------------
 * Runtime values
 * ---------------------------------------------------------------------
 */
typedef enum VKind
{
	V_NULL,
	V_BOOL,
	V_INT,
	V_LONG,
	V_FLOAT,
	V_DOUBLE,
	V_STRING,
	V_LIST,						/* SeJson ARRAY */
	V_MAP,						/* SeJson OBJECT */
	V_ENTRY,					/* Map.Entry from entrySet() */
	V_CTX,						/* the ctx map itself */
	V_KEYSET,					/* map.keySet(): a view, u.c is the map */
	V_ENTRYSET,					/* map.entrySet(): a view, u.c is the map */
	V_DOCVALS,					/* doc['f'] of a score script: u.i = field number */
	V_DATE						/* a date doc value: u.l = epoch millis */
} VKind;

typedef struct SEntry SEntry;

typedef struct SVal
{
	uint8		kind;			/* VKind */
	bool		ro;				/* container reached through params */
	int32		len;			/* V_STRING bytes */
	union
	{
		bool		b;
		int32		i;
		int64		l;
		float		f;
		double		d;
		const char *s;			/* NUL-terminated, immutable */
		SeJson	   *c;
		SEntry	   *e;
	}			u;
	SeJson	   *node;			/* scalar: the DOM node it was read from */
} SVal;

struct SEntry
{
	SeJson	   *map;			/* the map it came from (for setValue) */
	bool		ro;
	const char *key;
	int			keylen;
	SVal		value;
};

#define SV_IS_NUM(k)	((k) >= V_INT && (k) <= V_DOUBLE)

/* ---------------------------------------------------------------------
 * Declared types (typed locals, casts, instanceof)
 * ---------------------------------------------------------------------
 */
typedef enum DType
{
	DT_DEF,						/* def, var, Object */
	DT_INT,						/* int, short, byte, char */
	DT_LONG,
	DT_FLOAT,
	DT_DOUBLE,
	DT_BOOLEAN,
	DT_STRING,
	DT_LIST,					/* List, ArrayList, Collection, T[] */
	DT_MAP,						/* Map, HashMap, LinkedHashMap */
	DT_INTEGER_BOX,				/* Integer, Short, Byte */
	DT_LONG_BOX,
	DT_FLOAT_BOX,
	DT_DOUBLE_BOX,
	DT_BOOLEAN_BOX,
	DT_NUMBER
} DType;

/* ---------------------------------------------------------------------
 * AST (parser.c builds it, interp.c walks it)
 * ---------------------------------------------------------------------
 */
typedef enum NodeKind
{
	/* expressions */
	E_CONST,					/* val */
	E_LOCAL,					/* slot */
	E_CTX,						/* the ctx map */
	E_CTXFIELD,					/* op = CtxKey */
	E_FIELD,					/* a.name (flags: NF_NULLSAFE) */
	E_INDEX,					/* a[b] */
	E_CALL,						/* a.name(args), op = MethodId */
	E_STATIC,					/* Class.method(args), op = StaticId */
	E_NEW,						/* new T(args), type */
	E_LIST,						/* [args] */
	E_MAPLIT,					/* [k: v, ...]: args = k0, v0, k1, v1... */
	E_UNARY,					/* op: T_MINUS, T_PLUS, T_NOT, T_BNOT */
	E_BINARY,					/* op: arithmetic, bitwise, comparison */
	E_ANDAND,
	E_OROR,
	E_COND,						/* a ? b : c */
	E_ELVIS,					/* a ?: b */
	E_ASSIGN,					/* a op= b; op = T_ASSIGN or the binary op */
	E_INCDEC,					/* op = T_INC/T_DEC; flags NF_POSTFIX */
	E_CAST,						/* (type) a */
	E_INSTANCEOF,				/* a instanceof type */
	E_LAMBDA,					/* slots = params, a = body */
	E_DOCFIELD,					/* doc['f'] in a score script: slot = field number */
	E_SCORE,					/* _score in a score script */
	E_SCOREFN,					/* saturation(...), decayNumericGauss(...): op = ScoreFnId */
	/* statements */
	S_BLOCK,					/* args */
	S_EXPR,						/* a */
	S_DECL,						/* slot, type, a = init or NULL */
	S_IF,						/* a cond, b then, c else */
	S_WHILE,					/* a cond, b body */
	S_DO,						/* b body, a cond */
	S_FOR,						/* d init, a cond, c update (S_BLOCK of S_EXPR), b body */
	S_FOREACH,					/* slot, type, a iterable, b body */
	S_BREAK,
	S_CONTINUE,
	S_RETURN					/* a or NULL */
} NodeKind;

#define NF_NULLSAFE		0x01
#define NF_POSTFIX		0x02
#define NF_BLOCKBODY	0x04	/* E_LAMBDA body is a block */
#define NF_PROMOTE		0x08	/* E_COND: convert the result to numeric kind type */

/* ctx keys known at compile time */
typedef enum CtxKey
{
	CK_OTHER = 0,
	CK_SOURCE,
	CK_OP,
	CK_ID,
	CK_INDEX,
	CK_ROUTING,
	CK_VERSION,
	CK_SEQ_NO,
	CK_PRIMARY_TERM,
	CK_NOW
} CtxKey;

/* instance methods, resolved by name at compile time */
typedef enum MethodId
{
	M_UNKNOWN = 0,
	M_ADD, M_ADDALL, M_REMOVE, M_REMOVEALL, M_RETAINALL, M_REMOVEIF,
	M_CONTAINS, M_CONTAINSALL, M_SIZE, M_ISEMPTY, M_INDEXOF,
	M_LASTINDEXOF, M_GET, M_SET, M_CLEAR, M_SORT, M_FOREACH, M_JOIN,
	M_SUBLIST, M_CONTAINSKEY, M_CONTAINSVALUE, M_PUT, M_PUTALL,
	M_PUTIFABSENT, M_GETORDEFAULT, M_KEYSET, M_VALUES, M_ENTRYSET,
	M_GETKEY, M_GETVALUE, M_SETVALUE, M_LENGTH, M_STARTSWITH, M_ENDSWITH,
	M_TOLOWERCASE, M_TOUPPERCASE, M_TRIM, M_SUBSTRING, M_REPLACE,
	M_EQUALS, M_EQUALSIGNORECASE, M_COMPARETO, M_CHARAT, M_SPLITONTOKEN,
	M_CONCAT, M_TOSTRING, M_INTVALUE, M_LONGVALUE, M_DOUBLEVALUE,
	M_FLOATVALUE, M_HASHCODE, M_GETLENGTH, M_SPLIT
} MethodId;

/* static calls and constants (Math.max, Integer.parseInt, ...) */
typedef enum StaticId
{
	ST_MATH_ABS, ST_MATH_MAX, ST_MATH_MIN, ST_MATH_FLOOR, ST_MATH_CEIL,
	ST_MATH_ROUND, ST_MATH_SQRT, ST_MATH_POW, ST_MATH_LOG, ST_MATH_LOG10,
	ST_MATH_EXP, ST_MATH_SIGNUM, ST_MATH_CBRT,
	ST_PARSE_INT, ST_PARSE_LONG, ST_PARSE_DOUBLE, ST_PARSE_FLOAT,
	ST_PARSE_BOOLEAN, ST_VALUEOF_INT, ST_VALUEOF_LONG, ST_VALUEOF_DOUBLE,
	ST_VALUEOF_FLOAT, ST_VALUEOF_BOOLEAN, ST_STRING_VALUEOF, ST_TOSTRING,
	ST_STRING_JOIN, ST_OBJECTS_EQUALS, ST_OBJECTS_ISNULL,
	ST_OBJECTS_NONNULL, ST_COLLECTIONS_SORT, ST_COLLECTIONS_REVERSE
} StaticId;

typedef struct Node Node;

struct Node
{
	uint8		kind;			/* NodeKind */
	uint8		flags;
	uint16		depth;			/* height of the subtree */
	int			op;
	int			pos;			/* byte offset for error messages */
	Node	   *a,
			   *b,
			   *c,
			   *d;
	Node	  **args;
	int			nargs;
	int			slot;			/* E_LOCAL, S_DECL, S_FOREACH */
	int			type;			/* DType */
	int		   *slots;			/* E_LAMBDA parameters */
	int			nslots;
	const char *name;			/* E_FIELD/E_CALL name, interned */
	int			namelen;
	SVal		val;			/* E_CONST */
};

struct SeScript
{
	char	   *source;
	int			srclen;
	Node	   *root;			/* S_BLOCK */
	int			nlocals;
	int		   *local_types;	/* DType per slot */
	SeJson	   *params;			/* deep copy, an OBJECT */
	bool		score;			/* a score script (score.c) */
	char	  **doc_fields;		/* score scripts: fields named by doc['f'] */
	int			ndoc_fields;
};

/* ---------------------------------------------------------------------
 * Run state (interp.c) and helpers shared with builtins.c / values.c
 * ---------------------------------------------------------------------
 */
typedef struct GrowEnt
{
	SeJson	   *node;
	void	   *arr;
	int			cap;
} GrowEnt;

typedef struct Run
{
	const SeScript *script;
	SeScriptCtx *ctx;
	SeError    *err;
	SVal	   *locals;
	int64		steps;			/* statements left */
	uint32		evals;			/* expression nodes evaluated */
	int64		mem;			/* bytes left */
	SVal		ret;			/* value of the last return */
	SeScriptResult op;
	const char *opstr;
	GrowEnt    *grow;			/* open addressing by node pointer */
	int			growcap;
	int			growcount;
	SVal		ctxval;
	SeJson	   *params_node;
} Run;

/* in parser.c */
extern void sc_position(const char *src, int len, int pos, int *line, int *col);

/* in interp.c */
extern bool sc_error(Run *r, int pos, const char *cause, const char *fmt,...)
			pg_attribute_printf(4, 5);
extern bool sc_eval(Run *r, const Node *n, SVal *out);
extern bool sc_call_lambda(Run *r, const Node *lam, SVal *args, int nargs,
						   SVal *out);
extern bool sc_charge(Run *r, int pos, int64 units);
extern bool sc_alloc_ok(Run *r, int pos, int64 bytes);
extern void *sc_alloc(Run *r, int pos, int64 bytes);
extern void sc_free(Run *r, void *p, int64 bytes);
extern bool sc_ctx_lookup(Run *r, const char *key, int keylen, SVal *out);

/* in values.c */
extern void sc_val_null(SVal *v);
extern void sc_val_bool(SVal *v, bool b);
extern void sc_val_int(SVal *v, int32 i);
extern void sc_val_long(SVal *v, int64 l);
extern void sc_val_double(SVal *v, double d);
extern void sc_val_float(SVal *v, float f);
extern void sc_val_string(SVal *v, const char *s, int len);
extern void sc_val_container(SVal *v, SeJson *c, bool ro);
extern void sc_val_from_json(SVal *v, SeJson *j, bool ro);
extern SeJson *sc_val_to_json(Run *r, const SVal *v, int pos);
extern SeJson *sc_json_copy(Run *r, const SeJson *j, int depth, int pos);
extern SeJson *sc_new_array(Run *r, int pos, int cap);
extern SeJson *sc_new_object(Run *r, int pos, int cap);
extern bool sc_array_insert(Run *r, SeJson *arr, int at, SeJson *item, int pos);
extern void sc_array_delete(SeJson *arr, int at);
extern int	sc_map_find(const SeJson *map, const char *key, int keylen);
extern bool sc_map_put(Run *r, SeJson *map, const char *key, int keylen,
					   SeJson *value, int pos);
extern bool sc_map_remove(SeJson *map, const char *key, int keylen,
						  SeJson **old);
extern const char *sc_type_name(const SVal *v);
extern const char *sc_dtype_name(int t);
extern bool sc_to_string(Run *r, const SVal *v, StringInfo out, int depth, int pos);
#define SC_JAVA_DOUBLE_LEN 40
extern int	sc_format_java_double(char *dst, double d, bool is_float);
extern void sc_append_java_double(StringInfo out, double d, bool is_float);
extern bool sc_equals(Run *r, const SVal *a, const SVal *b, bool strict,
					  int depth, int pos, bool *result);
extern bool sc_is_integral(const SVal *v);
extern int64 sc_as_long(const SVal *v);
extern double sc_as_double(const SVal *v);
extern int32 sc_d2i(double d);
extern int64 sc_d2l(double d);
extern float sc_d2f(double d);
extern bool sc_key_of(Run *r, const SVal *k, const char **key, int *keylen, int pos);
extern bool sc_buf_init(Run *r, int pos, StringInfo buf, int64 hint);
extern bool sc_buf_reserve(Run *r, int pos, StringInfo buf, int64 more);
extern bool sc_buf_append(Run *r, int pos, StringInfo buf, const char *s, int64 len);
extern bool sc_make_string(Run *r, int pos, StringInfo buf, SVal *out);
extern int	sc_utf16_to_byte(const char *s, int len, int idx);
extern int	sc_byte_to_utf16(const char *s, int len, int off);
extern const char *sc_abbrev(const char *s, int len);

/* A snapshot of a collection's elements (list, keySet, entrySet). */
typedef struct SeqSnap
{
	int			kind;			/* VKind of the collection */
	bool		ro;
	int			count;
	SeJson	  **items;			/* V_LIST */
	SeJsonMember *members;		/* V_KEYSET, V_ENTRYSET */
	SEntry	   *entries;		/* V_ENTRYSET: each made on first use */
	SeJson	   *map;
} SeqSnap;

/* in builtins.c */
extern bool sc_seq_open(Run *r, int pos, const SVal *coll, SeqSnap *s);
extern void sc_seq_get(const SeqSnap *s, int i, SVal *out);
extern SeJson *sc_move_node(Run *r, SeJson *item, bool ro, int pos);
extern bool sc_call_method(Run *r, const Node *n, SVal *recv, SVal *args,
						   SVal *out);
extern bool sc_call_static(Run *r, const Node *n, SVal *args, SVal *out);
extern bool sc_new_instance(Run *r, const Node *n, SVal *args, SVal *out);
extern MethodId sc_method_id(const char *name, int len);

/* in score.c: score scripts' doc values, _score and score functions */
extern int	sc_score_fn_id(const char *name, int nargs);
extern bool sc_eval_score_node(Run *r, const Node *n, SVal *out);
extern bool sc_doc_get_field(Run *r, const Node *n, const SVal *obj, SVal *out);
extern bool sc_doc_get_index(Run *r, const Node *n, const SVal *obj, const SVal *ix,
							 SVal *out);
extern bool sc_doc_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out);
extern int	sc_date_format(int64 millis, char *buf);
extern bool sc_field_values(Run *r, const SVal *v, StringInfo out);

/* in interp.c: store a value into a typed slot, converting as a cast would */
extern bool sc_coerce(Run *r, int pos, int dtype, SVal *v, bool is_cast);

#endif							/* SE_SCRIPT_INT_H */
