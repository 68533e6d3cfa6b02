/*-------------------------------------------------------------------------
 *
 * query_string.c
 *	  The query_string and simple_query_string queries: Lucene's classic
 *	  query syntax and its simple syntax, parsed into query trees.
 *
 * query_string follows Lucene's classic QueryParser: clauses with the
 * modifiers + - NOT !, conjunctions AND OR && ||, groups ( ), field:term
 * and field:(group), terms (analyzed as match), "phrases"~slop, prefix*
 * and wild?card terms, fuzzy~N, /regexp/, ranges [a TO b] {a TO b} and
 * field:>=v, _exists_:field, ^boosts and \ escapes.  The clauses of a level
 * get MUST/SHOULD/MUST_NOT by the classic parser's addClause rules under
 * default_operator.  simple_query_string follows Lucene's
 * SimpleQueryParser: + | - " * ~N ( ) and whitespace, enabled by flags,
 * never a syntax error; an operator change nests the tree built so far.
 *
 * Both stay independent of the mapping, as every parsed query is: a term
 * on several fields (fields, or default_field "*") becomes an
 * SE_Q_PER_FIELD node that the weight builder expands over the mapping
 * (dis_max with tie_breaker for query_string, a sum for
 * simple_query_string, as ES's best_fields and most_fields).  Term-level
 * terms (wildcard, prefix, fuzzy) are lowercased on text fields there, as
 * ES normalizes them with the field's analyzer.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <ctype.h>
#include <math.h>

#include "search/search_int.h"

/* simple_query_string flags (ES SimpleQueryStringFlag) */
#define SQS_AND			0x001
#define SQS_NOT			0x002
#define SQS_OR			0x004
#define SQS_PREFIX		0x008
#define SQS_PHRASE		0x010
#define SQS_PRECEDENCE	0x020
#define SQS_ESCAPE		0x040
#define SQS_WHITESPACE	0x080
#define SQS_FUZZY		0x100
#define SQS_NEAR		0x200
#define SQS_ALL			0xfff

/* Nesting of groups past which a query string is refused. */
#define QS_MAX_GROUP_DEPTH	100

typedef enum Occur
{
	OCC_SHOULD,
	OCC_MUST,
	OCC_MUST_NOT
} Occur;

typedef struct QsCtx
{
	const char *qname;
	const char *s;				/* the query text */
	int			len;
	int			pos;
	bool		simple;
	int			flags;			/* simple: SQS_* */
	int			nfields;		/* default fields and their boosts */
	char	  **fields;
	float	   *boosts;
	bool		op_and;
	char	   *analyzer;
	float		tie_breaker;
	bool		lenient;
	SeFuzziness fuzziness;
	int			fuzzy_prefix_length;
	int			fuzzy_max_expansions;
	bool		fuzzy_transpositions;
	int			phrase_slop;
	bool		allow_leading_wildcard;
	char	   *msm;
	char	   *time_zone;		/* for date ranges; NULL: UTC */
	SeError    *err;
} QsCtx;

/* ---------------------------------------------------------------------
 * Leaves
 * ---------------------------------------------------------------------
 */
static SeQuery *
leaf(SeQueryKind kind, const char *text, int len)
{
	SeQuery    *q = se_query_new(kind);

	q->value = se_json_make_string(text, len);
	return q;
}

/*
 * tmpl on field (NULL: the default fields); several fields or a pattern
 * make a per-field node.
 */
static SeQuery *
on_fields(QsCtx *c, const char *field, SeQuery *tmpl)
{
	SeQuery    *pf;

	tmpl->lenient = c->lenient;
	if (field != NULL)
	{
		if (strchr(field, '*') == NULL)
		{
			tmpl->field = pstrdup(field);
			return tmpl;
		}
		pf = se_query_new(SE_Q_PER_FIELD);
		pf->nfields = 1;
		pf->fields = palloc(sizeof(char *));
		pf->field_boosts = palloc(sizeof(float));
		pf->fields[0] = pstrdup(field);
		pf->field_boosts[0] = 1.0f;
	}
	else
	{
		if (c->nfields == 1 && strchr(c->fields[0], '*') == NULL)
		{
			tmpl->field = c->fields[0];
			tmpl->boost *= c->boosts[0];
			return tmpl;
		}
		pf = se_query_new(SE_Q_PER_FIELD);
		pf->nfields = c->nfields;
		pf->fields = c->fields;
		pf->field_boosts = c->boosts;
	}
	pf->inner = tmpl;
	pf->tie_breaker = c->tie_breaker;
	pf->lenient = c->lenient;
	return pf;
}

static SeQuery *
text_leaf(QsCtx *c, const char *field, const char *text, int len)
{
	SeQuery    *q = leaf(SE_Q_MATCH, text, len);

	q->op_and = c->op_and;
	q->analyzer = c->analyzer;
	return on_fields(c, field, q);
}

static SeQuery *
phrase_leaf(QsCtx *c, const char *field, const char *text, int len, int slop)
{
	SeQuery    *q = leaf(SE_Q_MATCH_PHRASE, text, len);

	q->slop = slop;
	q->analyzer = c->analyzer;
	return on_fields(c, field, q);
}

static SeQuery *
fuzzy_leaf(QsCtx *c, const char *field, const char *text, int len,
		   const SeFuzziness *fz)
{
	SeQuery    *q = leaf(SE_Q_FUZZY, text, len);

	q->fuzziness = *fz;
	q->prefix_length = c->fuzzy_prefix_length;
	q->max_expansions = c->fuzzy_max_expansions;
	q->transpositions = c->fuzzy_transpositions;
	q->normalize = true;
	return on_fields(c, field, q);
}

static SeQuery *
prefix_leaf(QsCtx *c, const char *field, const char *text, int len)
{
	SeQuery    *q = leaf(SE_Q_PREFIX, text, len);

	q->normalize = true;
	return on_fields(c, field, q);
}

static SeQuery *
match_all(void)
{
	return se_query_new(SE_Q_MATCH_ALL);
}

/* ---------------------------------------------------------------------
 * Boolean assembly
 * ---------------------------------------------------------------------
 */
static void
bool_add(SeQuery *b, SeQuery *q, Occur occ)
{
	SeQuery  ***list;
	int		   *n;

	if (occ == OCC_MUST)
	{
		list = &b->must;
		n = &b->nmust;
	}
	else if (occ == OCC_SHOULD)
	{
		list = &b->should;
		n = &b->nshould;
	}
	else
	{
		list = &b->must_not;
		n = &b->nmust_not;
	}
	*list = *list ? repalloc(*list, sizeof(SeQuery *) * (*n + 1))
		: palloc(sizeof(SeQuery *));
	(*list)[(*n)++] = q;
}

static void
syntax_error(QsCtx *c, const char *what)
{
	se_error_set(c->err, 400, "query_shard_exception",
				 "Failed to parse query [%s]: Cannot parse '%s': %s at position %d",
				 c->s, c->s, what, c->pos);
}

/* ---------------------------------------------------------------------
 * query_string: Lucene's classic syntax
 * ---------------------------------------------------------------------
 */
static bool
qs_special(char ch)
{
	return strchr("+-!():^[]\"{}~/\\", ch) != NULL;
}

static void
skip_ws(QsCtx *c)
{
	while (c->pos < c->len && isspace((unsigned char) c->s[c->pos]))
		c->pos++;
}

/*
 * A bare term: up to whitespace or a special character ('-' and '+' may
 * continue a term), \ escaping.  raw keeps the escapes (for wildcards),
 * text drops them; *wild says an unescaped * or ? occurs, *star_end that
 * the only one is a final *.
 */
static bool
qs_term(QsCtx *c, StringInfo raw, StringInfo text, bool *wild, bool *star_end)
{
	int			start = c->pos;
	int			nwild = 0;
	bool		last_star = false;

	resetStringInfo(raw);
	resetStringInfo(text);
	while (c->pos < c->len)
	{
		char		ch = c->s[c->pos];

		if (ch == '\\')
		{
			if (c->pos + 1 >= c->len)
			{
				syntax_error(c, "Lexical error: escape at the end");
				return false;
			}
			appendStringInfoChar(raw, ch);
			appendStringInfoChar(raw, c->s[c->pos + 1]);
			appendStringInfoChar(text, c->s[c->pos + 1]);
			c->pos += 2;
			last_star = false;
			continue;
		}
		if (isspace((unsigned char) ch) ||
			(qs_special(ch) && !((ch == '-' || ch == '+') && c->pos > start)))
			break;
		if (ch == '*' || ch == '?')
		{
			nwild++;
			last_star = ch == '*';
		}
		else
			last_star = false;
		appendStringInfoChar(raw, ch);
		appendStringInfoChar(text, ch);
		c->pos++;
	}
	*wild = nwild > 0;
	*star_end = nwild == 1 && last_star;
	return c->pos > start;
}

/* ^boost after a clause (1 when none) */
static bool
qs_boost(QsCtx *c, float *boost)
{
	char	   *end;
	double		d;

	*boost = 1.0f;
	if (c->pos >= c->len || c->s[c->pos] != '^')
		return true;
	c->pos++;
	d = strtod(c->s + c->pos, &end);
	if (end == c->s + c->pos || isnan(d) || d < 0)
	{
		syntax_error(c, "Encountered a bad boost");
		return false;
	}
	c->pos = end - c->s;
	*boost = (float) d;
	return true;
}

/* ~N after a term or phrase: *present, and N (-1 when not written) */
static void
qs_tilde(QsCtx *c, bool *present, double *n)
{
	char	   *end;

	*present = false;
	*n = -1;
	if (c->pos >= c->len || c->s[c->pos] != '~')
		return;
	*present = true;
	c->pos++;
	if (c->pos < c->len && isdigit((unsigned char) c->s[c->pos]))
	{
		*n = strtod(c->s + c->pos, &end);
		c->pos = end - c->s;
	}
}

/* One bound of a range: a term, a quoted string or * (NULL: open) */
static bool
qs_range_bound(QsCtx *c, char **out)
{
	StringInfoData b;

	skip_ws(c);
	initStringInfo(&b);
	if (c->pos < c->len && c->s[c->pos] == '"')
	{
		c->pos++;
		while (c->pos < c->len && c->s[c->pos] != '"')
		{
			if (c->s[c->pos] == '\\' && c->pos + 1 < c->len)
				c->pos++;
			appendStringInfoChar(&b, c->s[c->pos++]);
		}
		if (c->pos >= c->len)
		{
			syntax_error(c, "Lexical error: unterminated quote");
			return false;
		}
		c->pos++;
		*out = b.data;
		return true;
	}
	while (c->pos < c->len && !isspace((unsigned char) c->s[c->pos]) &&
		   c->s[c->pos] != ']' && c->s[c->pos] != '}')
	{
		if (c->s[c->pos] == '\\' && c->pos + 1 < c->len)
			c->pos++;
		appendStringInfoChar(&b, c->s[c->pos++]);
	}
	if (b.len == 0)
	{
		syntax_error(c, "Encountered an empty range bound");
		return false;
	}
	*out = strcmp(b.data, "*") == 0 ? NULL : b.data;
	return true;
}

static SeQuery *
range_leaf(QsCtx *c, const char *field, const char *lo, bool inc_lo,
		   const char *hi, bool inc_hi)
{
	SeQuery    *q = se_query_new(SE_Q_RANGE);

	if (lo != NULL)
		q->lower = se_json_make_string(lo, strlen(lo));
	if (hi != NULL)
		q->upper = se_json_make_string(hi, strlen(hi));
	q->include_lower = inc_lo;
	q->include_upper = inc_hi;
	q->time_zone = c->time_zone;
	return on_fields(c, field, q);
}

/* [a TO b], {a TO b} and their mixtures */
static SeQuery *
qs_range(QsCtx *c, const char *field)
{
	bool		inc_lo = c->s[c->pos] == '[';
	bool		inc_hi;
	char	   *lo,
			   *hi;

	c->pos++;
	if (!qs_range_bound(c, &lo))
		return NULL;
	skip_ws(c);
	if (c->len - c->pos < 2 || strncmp(c->s + c->pos, "TO", 2) != 0)
	{
		syntax_error(c, "Encountered a range without TO");
		return NULL;
	}
	c->pos += 2;
	if (!qs_range_bound(c, &hi))
		return NULL;
	skip_ws(c);
	if (c->pos >= c->len || (c->s[c->pos] != ']' && c->s[c->pos] != '}'))
	{
		syntax_error(c, "Encountered an unterminated range");
		return NULL;
	}
	inc_hi = c->s[c->pos] == ']';
	c->pos++;
	return range_leaf(c, field, lo, inc_lo, hi, inc_hi);
}

static SeQuery *qs_query(QsCtx *c, const char *field, int depth);

/* A term, phrase, regexp or range, on field (NULL: the default fields). */
static SeQuery *
qs_term_clause(QsCtx *c, const char *field)
{
	StringInfoData raw,
				text;
	bool		wild,
				star_end,
				tilde;
	double		n;
	SeQuery    *q;

	initStringInfo(&raw);
	initStringInfo(&text);
	if (c->s[c->pos] == '"')
	{
		int			slop = c->phrase_slop;

		c->pos++;
		while (c->pos < c->len && c->s[c->pos] != '"')
		{
			if (c->s[c->pos] == '\\' && c->pos + 1 < c->len)
				c->pos++;
			appendStringInfoChar(&text, c->s[c->pos++]);
		}
		if (c->pos >= c->len)
		{
			syntax_error(c, "Lexical error: unterminated quote");
			return NULL;
		}
		c->pos++;
		qs_tilde(c, &tilde, &n);
		if (tilde && n >= 0)
			slop = (int) n;
		return phrase_leaf(c, field, text.data, text.len, slop);
	}
	if (c->s[c->pos] == '/')
	{
		c->pos++;
		while (c->pos < c->len && c->s[c->pos] != '/')
		{
			if (c->s[c->pos] == '\\' && c->pos + 1 < c->len)
				appendStringInfoChar(&raw, c->s[c->pos++]);
			appendStringInfoChar(&raw, c->s[c->pos++]);
		}
		if (c->pos >= c->len)
		{
			syntax_error(c, "Lexical error: unterminated regular expression");
			return NULL;
		}
		c->pos++;
		q = leaf(SE_Q_REGEXP, raw.data, raw.len);
		q->re_flags = SE_RE_ALL;
		return on_fields(c, field, q);
	}
	if (c->s[c->pos] == '[' || c->s[c->pos] == '{')
		return qs_range(c, field);
	if (field != NULL && (c->s[c->pos] == '>' || c->s[c->pos] == '<'))
	{
		bool		gt = c->s[c->pos] == '>';
		bool		eq = c->pos + 1 < c->len && c->s[c->pos + 1] == '=';
		char	   *v;

		c->pos += eq ? 2 : 1;
		if (!qs_range_bound(c, &v) || v == NULL)
		{
			if (!se_error_is_set(c->err))
				syntax_error(c, "Encountered an open comparison");
			return NULL;
		}
		return gt ? range_leaf(c, field, v, eq, NULL, true)
			: range_leaf(c, field, NULL, true, v, eq);
	}
	if (!qs_term(c, &raw, &text, &wild, &star_end))
	{
		if (!se_error_is_set(c->err))
			syntax_error(c, psprintf("Encountered \"%c\"",
									 c->pos < c->len ? c->s[c->pos] : ' '));
		return NULL;
	}
	qs_tilde(c, &tilde, &n);
	if (tilde)
	{
		SeFuzziness fz = c->fuzziness;

		if (n >= 0)
		{
			/* an edit distance; Lucene's old similarities (< 1) mean AUTO */
			if (n >= 1)
			{
				fz.is_auto = false;
				fz.edits = Min(2, (int) n);
			}
		}
		return fuzzy_leaf(c, field, text.data, text.len, &fz);
	}
	if (wild)
	{
		if (strcmp(raw.data, "*") == 0)
		{
			if (field == NULL || strcmp(field, "*") == 0)
				return match_all();
			q = se_query_new(SE_Q_EXISTS);
			q->field = pstrdup(field);
			return q;
		}
		if (!c->allow_leading_wildcard && (raw.data[0] == '*' || raw.data[0] == '?'))
		{
			se_error_set(c->err, 400, "query_shard_exception",
						 "Failed to parse query [%s]: Cannot parse '%s': '*' or '?' not allowed as first character in WildcardQuery",
						 c->s, c->s);
			return NULL;
		}
		if (star_end)
			return prefix_leaf(c, field, text.data, text.len - 1);
		q = leaf(SE_Q_WILDCARD, raw.data, raw.len);
		q->normalize = true;
		return on_fields(c, field, q);
	}
	return text_leaf(c, field, text.data, text.len);
}

/* A clause: [field:] (term | group), with its boost. */
static SeQuery *
qs_clause(QsCtx *c, const char *field, int depth)
{
	SeQuery    *q;
	float		boost;

	skip_ws(c);
	if (c->pos >= c->len)
	{
		syntax_error(c, "Encountered \"<EOF>\"");
		return NULL;
	}
	/* field: a term followed by an unescaped colon */
	if (c->s[c->pos] != '(' && c->s[c->pos] != '"' && c->s[c->pos] != '[' &&
		c->s[c->pos] != '{' && c->s[c->pos] != '/')
	{
		int			save = c->pos;
		StringInfoData raw,
					text;
		bool		wild,
					star_end;

		initStringInfo(&raw);
		initStringInfo(&text);
		if (qs_term(c, &raw, &text, &wild, &star_end) && c->pos < c->len &&
			c->s[c->pos] == ':')
		{
			c->pos++;
			if (strcmp(text.data, "_exists_") == 0)
			{
				StringInfoData fr,
							ft;

				initStringInfo(&fr);
				initStringInfo(&ft);
				if (!qs_term(c, &fr, &ft, &wild, &star_end))
				{
					syntax_error(c, "Encountered _exists_ without a field");
					return NULL;
				}
				q = se_query_new(SE_Q_EXISTS);
				q->field = ft.data;
				if (!qs_boost(c, &boost))
					return NULL;
				q->boost *= boost;
				return q;
			}
			field = text.data;
			if (c->pos >= c->len || isspace((unsigned char) c->s[c->pos]))
			{
				syntax_error(c, "Encountered a field without a value");
				return NULL;
			}
		}
		else
		{
			if (se_error_is_set(c->err))
				return NULL;
			c->pos = save;
		}
	}
	if (c->s[c->pos] == '(')
	{
		if (depth >= QS_MAX_GROUP_DEPTH)
		{
			syntax_error(c, "Groups nested too deeply");
			return NULL;
		}
		c->pos++;
		q = qs_query(c, field, depth + 1);
		if (q == NULL)
			return NULL;
		if (c->pos >= c->len || c->s[c->pos] != ')')
		{
			syntax_error(c, "Encountered \"<EOF>\", expected \")\"");
			return NULL;
		}
		c->pos++;
	}
	else if ((q = qs_term_clause(c, field)) == NULL)
		return NULL;
	if (!qs_boost(c, &boost))
		return NULL;
	q->boost *= boost;
	return q;
}

static bool
qs_keyword(QsCtx *c, const char *kw)
{
	int			n = strlen(kw);

	if (c->len - c->pos >= n && strncmp(c->s + c->pos, kw, n) == 0 &&
		(c->pos + n >= c->len || isspace((unsigned char) c->s[c->pos + n]) ||
		 c->s[c->pos + n] == '(' || c->s[c->pos + n] == '"' ||
		 (kw[0] == '&' || kw[0] == '|' || kw[0] == '!')))
	{
		c->pos += n;
		return true;
	}
	return false;
}

/*
 * A sequence of clauses up to ')' or the end, as the classic parser's
 * Query production; Occurs by its addClause.
 */
static SeQuery *
qs_query(QsCtx *c, const char *field, int depth)
{
	SeQuery   **qs = NULL;
	Occur	   *occ = NULL;
	int			n = 0;
	SeQuery    *b;
	int			i;

	for (;;)
	{
		enum
		{
			CONJ_NONE, CONJ_AND, CONJ_OR
		}			conj = CONJ_NONE;
		enum
		{
			MOD_NONE, MOD_REQ, MOD_NOT
		}			mods = MOD_NONE;
		bool		required,
					prohibited;
		SeQuery    *q;

		skip_ws(c);
		if (c->pos >= c->len || c->s[c->pos] == ')')
			break;
		if (qs_keyword(c, "AND") || qs_keyword(c, "&&"))
			conj = CONJ_AND;
		else if (qs_keyword(c, "OR") || qs_keyword(c, "||"))
			conj = CONJ_OR;
		skip_ws(c);
		if (c->pos < c->len && c->s[c->pos] == '+')
		{
			mods = MOD_REQ;
			c->pos++;
		}
		else if (c->pos < c->len && c->s[c->pos] == '-')
		{
			mods = MOD_NOT;
			c->pos++;
		}
		else if (qs_keyword(c, "NOT") || (c->pos < c->len && c->s[c->pos] == '!' &&
										   ++c->pos))
			mods = MOD_NOT;
		if ((q = qs_clause(c, field, depth)) == NULL)
			return NULL;
		/* Lucene QueryParserBase.addClause */
		if (n > 0 && conj == CONJ_AND && occ[n - 1] != OCC_MUST_NOT)
			occ[n - 1] = OCC_MUST;
		if (n > 0 && c->op_and && conj == CONJ_OR && occ[n - 1] != OCC_MUST_NOT)
			occ[n - 1] = OCC_SHOULD;
		prohibited = mods == MOD_NOT;
		if (!c->op_and)
			required = mods == MOD_REQ || (conj == CONJ_AND && !prohibited);
		else
			required = !prohibited && conj != CONJ_OR;
		qs = qs ? repalloc(qs, sizeof(SeQuery *) * (n + 1)) : palloc(sizeof(SeQuery *));
		occ = occ ? repalloc(occ, sizeof(Occur) * (n + 1)) : palloc(sizeof(Occur));
		qs[n] = q;
		occ[n] = required ? OCC_MUST : prohibited ? OCC_MUST_NOT : OCC_SHOULD;
		n++;
	}
	if (n == 0)
	{
		if (depth > 0)
		{
			syntax_error(c, "Encountered an empty group");
			return NULL;
		}
		return se_query_new(SE_Q_MATCH_NONE);
	}
	if (n == 1 && occ[0] != OCC_MUST_NOT && (depth > 0 || c->msm == NULL))
		return qs[0];
	b = se_query_new(SE_Q_BOOL);
	for (i = 0; i < n; i++)
		bool_add(b, qs[i], occ[i]);
	return b;
}

/* ---------------------------------------------------------------------
 * simple_query_string: Lucene's SimpleQueryParser
 * ---------------------------------------------------------------------
 */
typedef struct SqsState
{
	SeQuery    *top;
	int			cur_op;			/* -1: none yet, else an Occur */
	int			prev_op;
	int			nots;
} SqsState;

/* SimpleQueryParser.buildQueryTree */
static void
sqs_build(QsCtx *c, SqsState *st, SeQuery *branch)
{
	if (branch != NULL)
	{
		if (st->nots % 2 == 1)
		{
			SeQuery    *nq = se_query_new(SE_Q_BOOL);

			bool_add(nq, branch, OCC_MUST_NOT);
			bool_add(nq, match_all(), OCC_SHOULD);
			branch = nq;
		}
		if (st->top == NULL)
			st->top = branch;
		else
		{
			if (st->cur_op < 0)
				st->cur_op = c->op_and ? OCC_MUST : OCC_SHOULD;
			if (st->prev_op != st->cur_op)
			{
				SeQuery    *bq = se_query_new(SE_Q_BOOL);

				bool_add(bq, st->top, (Occur) st->cur_op);
				st->top = bq;
			}
			bool_add(st->top, branch, (Occur) st->cur_op);
			st->prev_op = st->cur_op;
		}
		st->cur_op = -1;
	}
	st->nots = 0;
}

static bool
sqs_finished(QsCtx *c, char ch)
{
	return (ch == '"' && (c->flags & SQS_PHRASE)) ||
		(ch == '|' && (c->flags & SQS_OR)) ||
		(ch == '+' && (c->flags & SQS_AND)) ||
		(ch == '(' && (c->flags & SQS_PRECEDENCE)) ||
		(ch == ')' && (c->flags & SQS_PRECEDENCE)) ||
		((ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') &&
		 (c->flags & SQS_WHITESPACE));
}

/* ~N: N, 2 when not written (SimpleQueryParser.parseFuzziness) */
static int
sqs_tilde_number(QsCtx *c)
{
	int			v = 0;
	bool		any = false;

	c->pos++;
	while (c->pos < c->len && !sqs_finished(c, c->s[c->pos]))
	{
		if (isdigit((unsigned char) c->s[c->pos]) && v < 1000)
		{
			v = v * 10 + (c->s[c->pos] - '0');
			any = true;
		}
		c->pos++;
	}
	return any ? v : 2;
}

static SeQuery *
sqs_term(QsCtx *c)
{
	StringInfoData t;

	initStringInfo(&t);
	while (c->pos < c->len)
	{
		char		ch = c->s[c->pos];

		if (ch == '\\' && (c->flags & SQS_ESCAPE))
		{
			if (c->pos + 1 < c->len)
				appendStringInfoChar(&t, c->s[c->pos + 1]);
			c->pos += 2;
			continue;
		}
		if (sqs_finished(c, ch))
			break;
		if (t.len > 0 && ch == '~' && (c->flags & SQS_FUZZY))
		{
			SeFuzziness fz = {0};

			fz.set = true;
			fz.edits = Min(2, sqs_tilde_number(c));
			return fuzzy_leaf(c, NULL, t.data, t.len, &fz);
		}
		if (t.len > 0 && ch == '*' && (c->flags & SQS_PREFIX) &&
			(c->pos + 1 == c->len || sqs_finished(c, c->s[c->pos + 1])))
		{
			c->pos++;
			return prefix_leaf(c, NULL, t.data, t.len);
		}
		appendStringInfoChar(&t, ch);
		c->pos++;
	}
	if (t.len == 0)
		return NULL;
	return text_leaf(c, NULL, t.data, t.len);
}

static SeQuery *
sqs_phrase(QsCtx *c)
{
	int			start = ++c->pos;
	StringInfoData t;
	int			slop = 0;

	initStringInfo(&t);
	while (c->pos < c->len && c->s[c->pos] != '"')
	{
		if (c->s[c->pos] == '\\' && (c->flags & SQS_ESCAPE) && c->pos + 1 < c->len)
			c->pos++;
		appendStringInfoChar(&t, c->s[c->pos++]);
	}
	if (c->pos >= c->len)
	{
		/* unterminated: the text after the quote is terms */
		c->pos = start;
		return NULL;
	}
	c->pos++;
	if (c->pos < c->len && c->s[c->pos] == '~' && (c->flags & SQS_NEAR))
		slop = sqs_tilde_number(c);
	return phrase_leaf(c, NULL, t.data, t.len, slop);
}

static SeQuery *
sqs_parse(QsCtx *c, int depth)
{
	SqsState	st = {NULL, -1, -1, 0};

	while (c->pos < c->len)
	{
		char		ch = c->s[c->pos];

		if (ch == '(' && (c->flags & SQS_PRECEDENCE) && depth < QS_MAX_GROUP_DEPTH)
		{
			c->pos++;
			sqs_build(c, &st, sqs_parse(c, depth + 1));
		}
		else if (ch == ')' && (c->flags & SQS_PRECEDENCE))
		{
			c->pos++;
			if (depth > 0)
				break;
		}
		else if (ch == '"' && (c->flags & SQS_PHRASE))
		{
			SeQuery    *p = sqs_phrase(c);

			sqs_build(c, &st, p != NULL ? p : sqs_term(c));
		}
		else if (ch == '+' && (c->flags & SQS_AND))
		{
			if (st.cur_op < 0 && st.top != NULL)
				st.cur_op = OCC_MUST;
			c->pos++;
		}
		else if (ch == '|' && (c->flags & SQS_OR))
		{
			if (st.cur_op < 0 && st.top != NULL)
				st.cur_op = OCC_SHOULD;
			c->pos++;
		}
		else if (ch == '-' && (c->flags & SQS_NOT))
		{
			st.nots++;
			c->pos++;
		}
		else if ((ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') &&
				 (c->flags & SQS_WHITESPACE))
			c->pos++;
		else
		{
			int			before = c->pos;

			sqs_build(c, &st, sqs_term(c));
			if (c->pos == before)
				c->pos++;		/* a lone operator character */
		}
	}
	return st.top;
}

/* ES's flags: names joined by '|' (ALL, NONE, AND, OR, ...) */
static bool
sqs_flags_parse(const char *s, int *flags, SeError *err)
{
	static const struct
	{
		const char *name;
		int			flag;
	}			names[] = {
		{"ALL", SQS_ALL}, {"NONE", 0}, {"AND", SQS_AND}, {"NOT", SQS_NOT},
		{"OR", SQS_OR}, {"PREFIX", SQS_PREFIX}, {"PHRASE", SQS_PHRASE},
		{"PRECEDENCE", SQS_PRECEDENCE}, {"ESCAPE", SQS_ESCAPE},
		{"WHITESPACE", SQS_WHITESPACE}, {"FUZZY", SQS_FUZZY}, {"NEAR", SQS_NEAR},
		{"SLOP", SQS_NEAR},
	};
	char	   *copy = pstrdup(s);
	char	   *tok;
	char	   *save = NULL;

	*flags = 0;
	for (tok = strtok_r(copy, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
	{
		int			i;
		bool		found = false;

		for (i = 0; i < lengthof(names); i++)
			if (pg_strcasecmp(tok, names[i].name) == 0)
			{
				*flags |= names[i].flag;
				found = true;
			}
		if (!found)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Unknown simple_query_string flag [%s]", tok);
			return false;
		}
	}
	return true;
}

/* ---------------------------------------------------------------------
 * The query bodies
 * ---------------------------------------------------------------------
 */
static bool
add_field_spec(QsCtx *c, const char *spec, SeError *err)
{
	const char *caret = strrchr(spec, '^');
	float		boost = 1.0f;
	char	   *name;

	if (caret != NULL)
	{
		char	   *end;
		double		d = strtod(caret + 1, &end);

		if (caret[1] == '\0' || *end != '\0' || isnan(d) || d < 0)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] invalid field boost in [%s]", c->qname, spec);
			return false;
		}
		boost = (float) d;
		name = pnstrdup(spec, caret - spec);
	}
	else
		name = pstrdup(spec);
	c->fields = c->fields ? repalloc(c->fields, sizeof(char *) * (c->nfields + 1))
		: palloc(sizeof(char *));
	c->boosts = c->boosts ? repalloc(c->boosts, sizeof(float) * (c->nfields + 1))
		: palloc(sizeof(float));
	c->fields[c->nfields] = name;
	c->boosts[c->nfields] = boost;
	c->nfields++;
	return true;
}

static bool
bad_param(QsCtx *c, const char *key, SeError *err)
{
	se_error_set(err, 400, "parsing_exception",
				 "[%s] failed to parse field [%s]", c->qname, key);
	return false;
}

static bool
json_int(const SeJson *v, int *out)
{
	double		d;

	if (v->type == SE_JSON_NUMBER)
		d = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
	else if (v->type == SE_JSON_STRING)
	{
		char	   *end;

		d = strtod(v->u.s.str, &end);
		if (end == v->u.s.str || *end != '\0')
			return false;
	}
	else
		return false;
	if (d != floor(d) || d < 0 || d > PG_INT32_MAX)
		return false;
	*out = (int) d;
	return true;
}

/* One option of the body; false with err set when bad or unknown. */
static bool
parse_option(QsCtx *c, const char *k, const SeJson *v, float *boost,
			 const SeJson **query, SeError *err)
{
	if (strcmp(k, "query") == 0)
	{
		if (v->type != SE_JSON_STRING)
			return bad_param(c, k, err);
		*query = v;
	}
	else if (strcmp(k, "fields") == 0)
	{
		int			i;

		if (v->type != SE_JSON_ARRAY)
			return bad_param(c, k, err);
		for (i = 0; i < v->u.a.count; i++)
		{
			if (v->u.a.items[i]->type != SE_JSON_STRING)
				return bad_param(c, k, err);
			if (!add_field_spec(c, v->u.a.items[i]->u.s.str, err))
				return false;
		}
	}
	else if (!c->simple && strcmp(k, "default_field") == 0)
	{
		if (v->type != SE_JSON_STRING)
			return bad_param(c, k, err);
		if (!add_field_spec(c, v->u.s.str, err))
			return false;
	}
	else if (strcmp(k, "default_operator") == 0)
	{
		if (v->type != SE_JSON_STRING ||
			(pg_strcasecmp(v->u.s.str, "and") != 0 && pg_strcasecmp(v->u.s.str, "or") != 0))
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "No enum constant org.elasticsearch.index.query.Operator.%s",
						 v->type == SE_JSON_STRING ? v->u.s.str : "?");
			return false;
		}
		c->op_and = pg_strcasecmp(v->u.s.str, "and") == 0;
	}
	else if (strcmp(k, "analyzer") == 0)
	{
		if (v->type != SE_JSON_STRING)
			return bad_param(c, k, err);
		c->analyzer = pstrdup(v->u.s.str);
	}
	else if (strcmp(k, "boost") == 0)
	{
		if (v->type != SE_JSON_NUMBER || v->u.n.d < 0)
			return bad_param(c, k, err);
		*boost = (float) v->u.n.d;
	}
	else if (strcmp(k, "lenient") == 0)
	{
		if (!se_query_json_bool(v, &c->lenient))
			return bad_param(c, k, err);
	}
	else if (strcmp(k, "fuzzy_prefix_length") == 0)
	{
		if (!json_int(v, &c->fuzzy_prefix_length))
			return bad_param(c, k, err);
	}
	else if (strcmp(k, "fuzzy_max_expansions") == 0)
	{
		if (!json_int(v, &c->fuzzy_max_expansions) || c->fuzzy_max_expansions == 0)
			return bad_param(c, k, err);
	}
	else if (strcmp(k, "fuzzy_transpositions") == 0)
	{
		if (!se_query_json_bool(v, &c->fuzzy_transpositions))
			return bad_param(c, k, err);
	}
	else if (strcmp(k, "minimum_should_match") == 0)
	{
		if (v->type == SE_JSON_STRING)
			c->msm = pstrdup(v->u.s.str);
		else if (v->type == SE_JSON_NUMBER)
			c->msm = pnstrdup(v->u.n.text, v->u.n.len);
		else
			return bad_param(c, k, err);
	}
	else if (c->simple && strcmp(k, "flags") == 0)
	{
		if (v->type == SE_JSON_STRING)
			return sqs_flags_parse(v->u.s.str, &c->flags, err);
		if (v->type != SE_JSON_NUMBER || !v->u.n.is_int)
			return bad_param(c, k, err);
		c->flags = (int) v->u.n.i;
	}
	else if (!c->simple && strcmp(k, "time_zone") == 0 && v->type == SE_JSON_STRING)
	{
		SeTimeZone	tz;

		c->time_zone = pstrdup(v->u.s.str);
		if (!se_tz_parse(c->time_zone, &tz, err))
			return false;
	}
	else if (!c->simple && strcmp(k, "fuzziness") == 0)
		return se_fuzziness_parse(v, &c->fuzziness, err);
	else if (!c->simple && strcmp(k, "phrase_slop") == 0)
	{
		if (!json_int(v, &c->phrase_slop))
			return bad_param(c, k, err);
	}
	else if (!c->simple && strcmp(k, "tie_breaker") == 0)
	{
		if (v->type != SE_JSON_NUMBER)
			return bad_param(c, k, err);
		c->tie_breaker = (float) v->u.n.d;
	}
	else if (!c->simple && strcmp(k, "allow_leading_wildcard") == 0)
	{
		if (!se_query_json_bool(v, &c->allow_leading_wildcard))
			return bad_param(c, k, err);
	}
	else if (!c->simple && strcmp(k, "type") == 0)
	{
		if (v->type != SE_JSON_STRING)
			return bad_param(c, k, err);
		if (strcmp(v->u.s.str, "most_fields") == 0)
			c->tie_breaker = 1.0f;
		else if (strcmp(v->u.s.str, "best_fields") != 0)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] query type [%s] is not supported", c->qname, v->u.s.str);
			return false;
		}
	}
	else if (strcmp(k, "_name") == 0 || strcmp(k, "analyze_wildcard") == 0 ||
			 strcmp(k, "auto_generate_synonyms_phrase_query") == 0 ||
			 strcmp(k, "quote_field_suffix") == 0 ||
			 (!c->simple && (strcmp(k, "rewrite") == 0 ||
							 strcmp(k, "fuzzy_rewrite") == 0 ||
							 strcmp(k, "max_determinized_states") == 0 ||
							 strcmp(k, "enable_position_increments") == 0 ||
							 strcmp(k, "escape") == 0 ||
							 strcmp(k, "quote_analyzer") == 0)))
		 /* accepted without effect */ ;
	else
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query does not support [%s]", c->qname, k);
		return false;
	}
	return true;
}

SeQuery *
se_query_string_parse(const SeJson *body, bool simple, SeError *err)
{
	QsCtx		c;
	const SeJson *query = NULL;
	float		boost = 1.0f;
	SeQuery    *q;
	int			i;

	memset(&c, 0, sizeof(c));
	c.qname = simple ? "simple_query_string" : "query_string";
	c.simple = simple;
	c.flags = SQS_ALL;
	c.fuzziness.set = true;
	c.fuzziness.is_auto = true;
	c.fuzziness.low = 3;
	c.fuzziness.high = 6;
	c.fuzzy_max_expansions = SE_FUZZY_MAX_EXPANSIONS_DEFAULT;
	c.fuzzy_transpositions = true;
	c.allow_leading_wildcard = true;
	c.tie_breaker = simple ? 1.0f : 0.0f;
	c.err = err;
	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name", c.qname);
		return NULL;
	}
	for (i = 0; i < body->u.o.count; i++)
		if (!parse_option(&c, body->u.o.members[i].key, body->u.o.members[i].value,
						  &boost, &query, err))
			return NULL;
	if (query == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] must be provided with a [query]", c.qname);
		return NULL;
	}
	if (c.nfields == 0)
	{
		/* index.query.default_field: every field, leniently */
		(void) add_field_spec(&c, "*", err);
	}
	c.s = query->u.s.str;
	c.len = query->u.s.len;
	if (simple)
	{
		q = sqs_parse(&c, 0);
		if (q == NULL)
			q = se_query_new(SE_Q_MATCH_NONE);
	}
	else
	{
		q = qs_query(&c, NULL, 0);
		if (q == NULL)
			return NULL;
		if (c.pos < c.len)
		{
			syntax_error(&c, "Encountered \")\"");
			return NULL;
		}
	}
	if (c.msm != NULL && q->kind == SE_Q_BOOL)
		q->msm = c.msm;
	q->boost *= boost;
	return q;
}
