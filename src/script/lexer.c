/*-------------------------------------------------------------------------
 *
 * lexer.c
 *	  Tokenizer for the Painless subset.
 *
 * The whole source is tokenized up front into an array, so the parser can
 * look ahead freely (casts, lambdas, declarations).  Identifiers are copied
 * NUL-terminated; string literals are decoded (escapes \\ \' \" as Painless
 * has them, plus \n \t \r \b \f \0 and \uXXXX); numbers are converted here,
 * with range checks for int/long left to the parser because a leading
 * minus belongs to the literal (-2147483648).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdlib.h>

#include "script/script_int.h"

typedef struct Lexer
{
	const char *src;
	int			len;
	int			i;
	Token	   *toks;
	int			ntoks;
	int			cap;
	int			errpos;
	char	   *errmsg;
} Lexer;

static const struct
{
	const char *word;
	TokKind		kind;
}			keywords[] = {
	{"if", T_IF}, {"else", T_ELSE}, {"for", T_FOR}, {"while", T_WHILE},
	{"do", T_DO}, {"break", T_BREAK}, {"continue", T_CONTINUE},
	{"return", T_RETURN}, {"new", T_NEW}, {"true", T_TRUE},
	{"false", T_FALSE}, {"null", T_NULL}, {"instanceof", T_INSTANCEOF},
	{"in", T_IN}, {"try", T_TRY}, {"catch", T_CATCH}, {"throw", T_THROW},
};

/* operators, longest first within each leading character */
static const struct
{
	const char *text;
	TokKind		kind;
}			operators[] = {
	{">>>=", T_USHR_ASSIGN}, {"===", T_EQR}, {"!==", T_NER},
	{"<<=", T_SHL_ASSIGN}, {">>=", T_SHR_ASSIGN}, {">>>", T_USHR},
	{"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE}, {">=", T_GE},
	{"&&", T_ANDAND}, {"||", T_OROR}, {"++", T_INC}, {"--", T_DEC},
	{"+=", T_ADD_ASSIGN}, {"-=", T_SUB_ASSIGN}, {"*=", T_MUL_ASSIGN},
	{"/=", T_DIV_ASSIGN}, {"%=", T_REM_ASSIGN}, {"&=", T_AND_ASSIGN},
	{"|=", T_OR_ASSIGN}, {"^=", T_XOR_ASSIGN}, {"<<", T_SHL}, {">>", T_SHR},
	{"?.", T_NSDOT}, {"?:", T_ELVIS}, {"->", T_ARROW}, {"::", T_DCOLON},
	{"{", T_LBRACE}, {"}", T_RBRACE}, {"(", T_LPAREN}, {")", T_RPAREN},
	{"[", T_LBRACK}, {"]", T_RBRACK}, {";", T_SEMI}, {",", T_COMMA},
	{".", T_DOT}, {":", T_COLON}, {"?", T_QUESTION}, {"=", T_ASSIGN},
	{"+", T_PLUS}, {"-", T_MINUS}, {"*", T_STAR}, {"/", T_SLASH},
	{"%", T_PERCENT}, {"<", T_LT}, {">", T_GT}, {"!", T_NOT},
	{"~", T_BNOT}, {"&", T_BAND}, {"|", T_BOR}, {"^", T_BXOR},
};

const char *
sc_token_name(TokKind k)
{
	int			i;

	switch (k)
	{
		case T_EOF:
			return "end of script";
		case T_IDENT:
			return "identifier";
		case T_INT:
		case T_LONG:
		case T_FLOAT:
		case T_DOUBLE:
			return "number";
		case T_STRING:
			return "string";
		default:
			break;
	}
	for (i = 0; i < lengthof(keywords); i++)
		if (keywords[i].kind == k)
			return keywords[i].word;
	for (i = 0; i < lengthof(operators); i++)
		if (operators[i].kind == k)
			return operators[i].text;
	return "?";
}

static bool
lex_fail(Lexer *lx, int pos, const char *msg)
{
	lx->errpos = pos;
	lx->errmsg = pstrdup(msg);
	return false;
}

static Token *
push(Lexer *lx, TokKind kind, int pos, int len)
{
	Token	   *t;

	if (lx->ntoks == lx->cap)
	{
		lx->cap *= 2;
		lx->toks = (Token *) repalloc(lx->toks, sizeof(Token) * lx->cap);
	}
	t = &lx->toks[lx->ntoks++];
	memset(t, 0, sizeof(Token));
	t->kind = kind;
	t->pos = pos;
	t->len = len;
	return t;
}

static inline bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool
is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

static inline bool
is_ident_char(char c)
{
	return is_ident_start(c) || is_digit(c);
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Accumulate an unsigned magnitude in base; flags overflow past uint64. */
static void
accumulate(Token *t, int digit, int base)
{
	if (t->ival > (PG_UINT64_MAX - (uint64) digit) / (uint64) base)
		t->overflow = true;
	else
		t->ival = t->ival * base + digit;
}

static bool
lex_number(Lexer *lx)
{
	const char *s = lx->src;
	int			start = lx->i;
	int			i = start;
	bool		decimal = false;
	Token	   *t;
	char		c;

	if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
	{
		i += 2;
		if (hex_value(s[i]) < 0)
			return lex_fail(lx, start, "invalid hexadecimal literal");
		t = push(lx, T_INT, start, 0);
		while (hex_value(s[i]) >= 0)
			accumulate(t, hex_value(s[i++]), 16);
		if (s[i] == 'l' || s[i] == 'L')
		{
			t->kind = T_LONG;
			i++;
		}
		else if (t->ival > PG_UINT32_MAX)
			t->overflow = true;
		t->wraps = true;		/* Java: 0xFFFFFFFF == -1 */
		if (is_ident_char(s[i]))
			return lex_fail(lx, i, "invalid number literal");
		t->len = i - start;
		lx->i = i;
		return true;
	}

	while (is_digit(s[i]))
		i++;
	if (s[i] == '.' && is_digit(s[i + 1]))
	{
		decimal = true;
		i++;
		while (is_digit(s[i]))
			i++;
	}
	if (s[i] == 'e' || s[i] == 'E')
	{
		int			j = i + 1;

		if (s[j] == '+' || s[j] == '-')
			j++;
		if (!is_digit(s[j]))
			return lex_fail(lx, i, "invalid exponent in number literal");
		while (is_digit(s[j]))
			j++;
		i = j;
		decimal = true;
	}
	c = s[i];
	if (decimal || c == 'f' || c == 'F' || c == 'd' || c == 'D')
	{
		char	   *copy = pnstrdup(s + start, i - start);
		bool		isfloat = (c == 'f' || c == 'F');

		t = push(lx, isfloat ? T_FLOAT : T_DOUBLE, start, 0);
		if (isfloat)
			t->dval = (double) strtof(copy, NULL);
		else
			t->dval = strtod(copy, NULL);
		pfree(copy);
		if (c == 'f' || c == 'F' || c == 'd' || c == 'D')
			i++;
	}
	else
	{
		bool		octal = (s[start] == '0' && i - start > 1);
		int			j;

		t = push(lx, T_INT, start, 0);
		for (j = start; j < i; j++)
		{
			if (octal && s[j] > '7')
				return lex_fail(lx, j, "invalid octal literal");
			accumulate(t, s[j] - '0', octal ? 8 : 10);
		}
		if (c == 'l' || c == 'L')
		{
			t->kind = T_LONG;
			i++;
		}
		else if (octal && t->ival > PG_UINT32_MAX)
			t->overflow = true;
		t->wraps = octal;
	}
	if (is_ident_char(s[i]) || (s[i] == '.' && is_digit(s[i + 1])))
		return lex_fail(lx, i, "invalid number literal");
	t->len = i - start;
	lx->i = i;
	return true;
}

/* Append code point cp as UTF-8. */
static void
append_utf8(StringInfo buf, uint32 cp)
{
	char		b[4];
	int			n;

	if (cp < 0x80)
	{
		b[0] = (char) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		b[0] = (char) (0xC0 | (cp >> 6));
		b[1] = (char) (0x80 | (cp & 0x3F));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		b[0] = (char) (0xE0 | (cp >> 12));
		b[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char) (0x80 | (cp & 0x3F));
		n = 3;
	}
	else
	{
		b[0] = (char) (0xF0 | (cp >> 18));
		b[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char) (0x80 | (cp & 0x3F));
		n = 4;
	}
	appendBinaryStringInfo(buf, b, n);
}

/* Four hex digits at s[i..i+4) or -1. */
static int
hex4(const char *s, int i, int len)
{
	int			v = 0;
	int			k;

	if (i + 4 > len)
		return -1;
	for (k = 0; k < 4; k++)
	{
		int			h = hex_value(s[i + k]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static bool
lex_string(Lexer *lx)
{
	const char *s = lx->src;
	int			start = lx->i;
	char		quote = s[start];
	int			i = start + 1;
	StringInfoData buf;
	Token	   *t;

	initStringInfo(&buf);
	for (;;)
	{
		int			run = i;

		while (i < lx->len && s[i] != quote && s[i] != '\\')
			i++;
		appendBinaryStringInfo(&buf, s + run, i - run);
		if (i >= lx->len)
			return lex_fail(lx, start, "unterminated string literal");
		if (s[i] == quote)
			break;
		/* backslash */
		if (i + 1 >= lx->len)
			return lex_fail(lx, start, "unterminated string literal");
		switch (s[i + 1])
		{
			case '\\':
				appendStringInfoChar(&buf, '\\');
				break;
			case '\'':
				appendStringInfoChar(&buf, '\'');
				break;
			case '"':
				appendStringInfoChar(&buf, '"');
				break;
			case 'n':
				appendStringInfoChar(&buf, '\n');
				break;
			case 't':
				appendStringInfoChar(&buf, '\t');
				break;
			case 'r':
				appendStringInfoChar(&buf, '\r');
				break;
			case 'b':
				appendStringInfoChar(&buf, '\b');
				break;
			case 'f':
				appendStringInfoChar(&buf, '\f');
				break;
			case '0':
				appendStringInfoChar(&buf, '\0');
				break;
			case 'u':
				{
					int			cp = hex4(s, i + 2, lx->len);

					if (cp < 0)
						return lex_fail(lx, i, "invalid unicode escape");
					if (cp >= 0xD800 && cp <= 0xDBFF)
					{
						int			lo = -1;

						if (i + 7 < lx->len && s[i + 6] == '\\' && s[i + 7] == 'u')
							lo = hex4(s, i + 8, lx->len);
						if (lo < 0xDC00 || lo > 0xDFFF)
							return lex_fail(lx, i, "unpaired surrogate in unicode escape");
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
						i += 6;
					}
					else if (cp >= 0xDC00 && cp <= 0xDFFF)
						return lex_fail(lx, i, "unpaired surrogate in unicode escape");
					append_utf8(&buf, (uint32) cp);
					i += 4;
				}
				break;
			default:
				return lex_fail(lx, i, "invalid escape sequence in string literal");
		}
		i += 2;
	}
	t = push(lx, T_STRING, start, i + 1 - start);
	t->str = buf.data;
	t->slen = buf.len;
	lx->i = i + 1;
	return true;
}

Token *
sc_lex(const char *src, int len, int *ntokens, int *errpos, char **errmsg)
{
	Lexer		lx;

	lx.src = src;
	lx.len = len;
	lx.i = 0;
	lx.cap = 64;
	lx.ntoks = 0;
	lx.toks = (Token *) palloc(sizeof(Token) * lx.cap);
	lx.errpos = 0;
	lx.errmsg = NULL;

	for (;;)
	{
		const char *s = src;
		int			i = lx.i;
		char		c;
		bool		ok = true;

		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
						   s[i] == '\r' || s[i] == '\f'))
			i++;
		lx.i = i;
		if (i >= len)
			break;
		c = s[i];
		if (c == '/' && i + 1 < len && s[i + 1] == '/')
		{
			while (i < len && s[i] != '\n')
				i++;
			lx.i = i;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '*')
		{
			int			j = i + 2;

			while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
				j++;
			if (j + 1 >= len)
			{
				lex_fail(&lx, i, "unterminated comment");
				break;
			}
			lx.i = j + 2;
			continue;
		}
		if (is_digit(c) || (c == '.' && i + 1 < len && is_digit(s[i + 1])))
			ok = lex_number(&lx);
		else if (c == '\'' || c == '"')
			ok = lex_string(&lx);
		else if (is_ident_start(c))
		{
			int			j = i;
			int			k;
			Token	   *t;
			TokKind		kind = T_IDENT;

			while (j < len && is_ident_char(s[j]))
				j++;
			for (k = 0; k < lengthof(keywords); k++)
				if (strlen(keywords[k].word) == (size_t) (j - i) &&
					memcmp(keywords[k].word, s + i, j - i) == 0)
				{
					kind = keywords[k].kind;
					break;
				}
			t = push(&lx, kind, i, j - i);
			if (kind == T_IDENT)
			{
				t->str = pnstrdup(s + i, j - i);
				t->slen = j - i;
			}
			lx.i = j;
		}
		else
		{
			int			k;
			bool		found = false;

			for (k = 0; k < lengthof(operators); k++)
			{
				int			ol = strlen(operators[k].text);

				if (i + ol <= len && memcmp(operators[k].text, s + i, ol) == 0)
				{
					/* "c?.5:1" is a ternary with .5, not a null-safe access */
					if (operators[k].kind == T_NSDOT && i + 2 < len && is_digit(s[i + 2]))
						continue;
					push(&lx, operators[k].kind, i, ol);
					lx.i = i + ol;
					found = true;
					break;
				}
			}
			if (!found)
			{
				char		msg[64];

				if ((unsigned char) c >= 0x20 && (unsigned char) c < 0x7F)
					snprintf(msg, sizeof(msg), "unexpected character '%c'", c);
				else
					snprintf(msg, sizeof(msg), "unexpected character (code %d)",
							 (int) (unsigned char) c);
				ok = lex_fail(&lx, i, msg);
			}
		}
		if (!ok)
			break;
	}
	if (lx.errmsg != NULL)
	{
		*errpos = lx.errpos;
		*errmsg = lx.errmsg;
		return NULL;
	}
	push(&lx, T_EOF, len, 0);
	*ntokens = lx.ntoks;
	return lx.toks;
}
