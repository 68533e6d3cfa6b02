/*-------------------------------------------------------------------------
 *
 * score.c
 *	  What score scripts have beyond update scripts: doc values (doc['f']),
 *	  _score, dates, and ES's score functions (ScoreScriptUtils).
 *
 * doc['f'] evaluates to a V_DOCVALS value naming the field (doc[expr], a
 * name computed at run time, is numbered by the reader's lookup); its values are
 * read from the caller's SeScriptDocReader only when the script asks for
 * them (.value, .size(), [i]), so a script that tests .size() first never
 * touches a missing value.  Painless's ScriptDocValues shapes: integer
 * fields read as long, float fields as double, keyword as String, boolean
 * as boolean, dates as a ZonedDateTime (here V_DATE: epoch millis with
 * getMillis(), toInstant(), toEpochMilli() and ES's toString).  .value of
 * a document without one is ES's illegal_state_exception.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "script/script_int.h"
#include "util/units.h"

typedef enum ScoreFnId
{
	SF_SATURATION,
	SF_SIGMOID,
	SF_DECAY_NUM_LINEAR,
	SF_DECAY_NUM_EXP,
	SF_DECAY_NUM_GAUSS,
	SF_DECAY_DATE_LINEAR,
	SF_DECAY_DATE_EXP,
	SF_DECAY_DATE_GAUSS
} ScoreFnId;

static const struct
{
	const char *name;
	int			nargs;
	ScoreFnId	id;
}			score_fns[] = {
	{"saturation", 2, SF_SATURATION},
	{"sigmoid", 3, SF_SIGMOID},
	{"decayNumericLinear", 5, SF_DECAY_NUM_LINEAR},
	{"decayNumericExp", 5, SF_DECAY_NUM_EXP},
	{"decayNumericGauss", 5, SF_DECAY_NUM_GAUSS},
	{"decayDateLinear", 5, SF_DECAY_DATE_LINEAR},
	{"decayDateExp", 5, SF_DECAY_DATE_EXP},
	{"decayDateGauss", 5, SF_DECAY_DATE_GAUSS},
};

/* The function called name with nargs arguments (-1: any), or -1. */
int
sc_score_fn_id(const char *name, int nargs)
{
	int			k;

	for (k = 0; k < lengthof(score_fns); k++)
		if (strcmp(score_fns[k].name, name) == 0 &&
			(nargs < 0 || nargs == score_fns[k].nargs))
			return score_fns[k].id;
	return -1;
}

/* ES's ZonedDateTime.toString of a UTC instant: 2020-01-02T03:04:05.006Z */
int
sc_date_format(int64 millis, char *buf)
{
	int64		days = millis >= 0 ? millis / 86400000 : -((-millis + 86399999) / 86400000);
	int64		ms = millis - days * 86400000;
	int64		z = days + 719468;
	int64		era = (z >= 0 ? z : z - 146096) / 146097;
	int64		doe = z - era * 146097;
	int64		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64		mp = (5 * doy + 2) / 153;
	int			d = (int) (doy - (153 * mp + 2) / 5 + 1);
	int			m = (int) (mp < 10 ? mp + 3 : mp - 9);
	int64		y = yoe + era * 400 + (m <= 2);
	int			len;

	len = snprintf(buf, SC_JAVA_DOUBLE_LEN, "%04lld-%02d-%02dT%02d:%02d",
				   (long long) y, m, d, (int) (ms / 3600000), (int) (ms / 60000 % 60));
	/* java.time omits zero seconds and millis */
	if (ms % 60000 != 0)
	{
		len += snprintf(buf + len, SC_JAVA_DOUBLE_LEN - len, ":%02d", (int) (ms / 1000 % 60));
		if (ms % 1000 != 0)
			len += snprintf(buf + len, SC_JAVA_DOUBLE_LEN - len, ".%03d", (int) (ms % 1000));
	}
	len += snprintf(buf + len, SC_JAVA_DOUBLE_LEN - len, "Z");
	return len;
}

static bool
digits(const char **p, int n, int *out)
{
	int			v = 0;

	while (n-- > 0)
	{
		if (**p < '0' || **p > '9')
			return false;
		v = v * 10 + (*(*p)++ - '0');
	}
	*out = v;
	return true;
}

/*
 * A decayDate* origin: ISO 8601 as ES's strict_date_optional_time
 * (yyyy-MM-dd['T'HH:mm[:ss[.SSS]]][Z|+-HH:mm]), or epoch millis.
 */
static bool
parse_date(const char *s, int64 *millis)
{
	const char *p = s;
	int			y,
				mo,
				d,
				h = 0,
				mi = 0,
				sec = 0,
				ms = 0,
				oh,
				om;
	int64		days;
	int64		tz = 0;
	char	   *end;

	if (strlen(s) > 0 && strspn(s, "-0123456789") == strlen(s) && strchr(s + 1, '-') == NULL)
	{
		*millis = strtoll(s, &end, 10);
		return *end == '\0';
	}
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
		!digits(&p, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
		return false;
	if (*p == 'T')
	{
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return false;
		if (*p == ':')
		{
			p++;
			if (!digits(&p, 2, &sec))
				return false;
			if (*p == '.')
			{
				int			nd = 0;

				p++;
				while (*p >= '0' && *p <= '9')
				{
					if (nd++ < 3)
						ms = ms * 10 + (*p - '0');
					p++;
				}
				while (nd > 0 && nd++ < 3)
					ms *= 10;
			}
		}
		if (h > 23 || mi > 59 || sec > 59)
			return false;
	}
	if (*p == 'Z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		int			sign = *p++ == '-' ? -1 : 1;

		if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
			return false;
		tz = sign * ((int64) oh * 3600000 + (int64) om * 60000);
	}
	if (*p != '\0')
		return false;
	/* days from civil (Howard Hinnant's algorithm) */
	{
		int64		yy = y - (mo <= 2);
		int64		era = (yy >= 0 ? yy : yy - 399) / 400;
		int64		yoe = yy - era * 400;
		int64		doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
		int64		doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

		days = era * 146097 + doe - 719468;
	}
	*millis = days * 86400000 + h * 3600000LL + mi * 60000LL + sec * 1000LL + ms - tz;
	return true;
}

/* doc value i of field slot into out, as Painless's ScriptDocValues gives it */
static void
doc_value(Run *r, int slot, int i, SVal *out)
{
	SeScriptDocValue v;

	memset(&v, 0, sizeof(v));
	r->ctx->doc->value(r->ctx->doc->arg, slot, i, &v);
	switch (v.kind)
	{
		case SE_SDOC_LONG:
			sc_val_long(out, v.l);
			break;
		case SE_SDOC_DOUBLE:
			sc_val_double(out, v.d);
			break;
		case SE_SDOC_STRING:
			{
				char	   *s = sc_alloc(r, -1, v.len + 1);

				if (s == NULL)
				{
					sc_val_null(out);
					return;
				}
				memcpy(s, v.s, v.len);
				s[v.len] = '\0';
				sc_val_string(out, s, v.len);
				break;
			}
		case SE_SDOC_BOOLEAN:
			sc_val_bool(out, v.l != 0);
			break;
		case SE_SDOC_DATE:
			memset(out, 0, sizeof(SVal));
			out->kind = V_DATE;
			out->u.l = v.l;
			break;
	}
}

/* The number of values of doc['f'] (obj), or -1 with the error set. */
static int
doc_count(Run *r, int pos, const SVal *obj)
{
	SeError		e;
	int			n;

	se_error_init(&e);
	n = r->ctx->doc->count(r->ctx->doc->arg, obj->u.i, &e);
	if (n < 0)
	{
		sc_error(r, pos, se_error_is_set(&e) ? e.type : "illegal_argument_exception",
				 "%s", se_error_is_set(&e) ? e.reason : "cannot read the field's doc values");
		return -1;
	}
	return n;
}

/* One value of a script field, as JSON, after a comma when not the first. */
static bool
append_field_value(Run *r, const SVal *v, StringInfo out)
{
	SeJson	   *j = sc_val_to_json(r, v, -1);

	if (j == NULL)
		return false;
	if (out->len > 0)
		appendStringInfoChar(out, ',');
	se_json_write(out, j);
	return true;
}

/*
 * A script field's result v as its JSON values, comma-joined: the
 * elements of a list or of doc values, otherwise v itself (ES's
 * script_fields put a returned collection's elements in the hit's array).
 */
bool
sc_field_values(Run *r, const SVal *v, StringInfo out)
{
	int			k;

	if (v->kind == V_DOCVALS)
	{
		int			n = doc_count(r, -1, v);

		if (n < 0)
			return false;
		for (k = 0; k < n; k++)
		{
			SVal		e;

			doc_value(r, v->u.i, k, &e);
			if (se_error_is_set(r->err) || !append_field_value(r, &e, out))
				return false;
		}
		return true;
	}
	if (v->kind == V_LIST || v->kind == V_KEYSET || v->kind == V_ENTRYSET)
	{
		SeJson	   *arr = sc_val_to_json(r, v, -1);

		if (arr == NULL)
			return false;
		for (k = 0; k < arr->u.a.count; k++)
		{
			if (out->len > 0)
				appendStringInfoChar(out, ',');
			se_json_write(out, arr->u.a.items[k]);
		}
		return true;
	}
	return append_field_value(r, v, out);
}

static bool
first_value(Run *r, int pos, const SVal *obj, SVal *out)
{
	int			n = doc_count(r, pos, obj);

	if (n < 0)
		return false;
	if (n == 0)
		return sc_error(r, pos, "illegal_state_exception",
						"A document doesn't have a value for a field! Use doc[<field>].size()==0 to check if a document is missing a field!");
	doc_value(r, obj->u.i, 0, out);
	return !se_error_is_set(r->err);
}

static bool
value_at(Run *r, int pos, const SVal *obj, const SVal *ix, SVal *out)
{
	int			n = doc_count(r, pos, obj);
	int64		i;

	if (n < 0)
		return false;
	if (ix->kind != V_INT && ix->kind != V_LONG)
		return sc_error(r, pos, "class_cast_exception",
						"Cannot cast %s to int", sc_type_name(ix));
	i = sc_as_long(ix);
	if (i < 0 || i >= n)
		return sc_error(r, pos, "index_out_of_bounds_exception",
						"Index %lld out of bounds for length %d", (long long) i, n);
	doc_value(r, obj->u.i, (int) i, out);
	return !se_error_is_set(r->err);
}

/*
 * doc[expr]: the field whose name expr yields, numbered by the caller's
 * reader (ES's LeafDocLookup takes any String key).
 */
static bool
doc_field_computed(Run *r, const Node *n, SVal *out)
{
	SVal		name;
	SeError		e;
	int			slot;

	if (!sc_eval(r, n->a, &name))
		return false;
	if (name.kind != V_STRING)
		return sc_error(r, n->a->pos, "class_cast_exception",
						"Cannot cast %s to java.lang.String", sc_type_name(&name));
	if (r->ctx->doc->lookup == NULL)
		return sc_error(r, n->pos, "illegal_argument_exception",
						"doc[...] with a computed field name is not available here");
	se_error_init(&e);
	slot = r->ctx->doc->lookup(r->ctx->doc->arg, name.u.s, name.len, &e);
	if (slot < 0)
		return sc_error(r, n->pos, se_error_is_set(&e) ? e.type : "illegal_argument_exception",
						"%s", se_error_is_set(&e) ? e.reason : "cannot read the field's doc values");
	memset(out, 0, sizeof(SVal));
	out->kind = V_DOCVALS;
	out->u.i = slot;
	return true;
}

bool
sc_eval_score_node(Run *r, const Node *n, SVal *out)
{
	SVal		a[5];
	double		x[5];
	int			k;

	switch ((NodeKind) n->kind)
	{
		case E_DOCFIELD:
			if (r->ctx->doc == NULL)
				return sc_error(r, n->pos, "illegal_argument_exception",
								"doc values are not available here");
			if (n->slot < 0)
				return doc_field_computed(r, n, out);
			memset(out, 0, sizeof(SVal));
			out->kind = V_DOCVALS;
			out->u.i = n->slot;
			return true;
		case E_SCORE:
			sc_val_double(out, r->ctx->score);
			return true;
		case E_SCOREFN:
			break;
		default:
			return sc_error(r, n->pos, "painless_error", "not a score script node");
	}
	for (k = 0; k < n->nargs; k++)
		if (!sc_eval(r, n->args[k], &a[k]))
			return false;
	if (n->op >= SF_DECAY_DATE_LINEAR)
	{
		/* (String origin, String scale, String offset, double decay, date) */
		int64		origin,
					scale,
					offset;
		double		decay,
					scaling,
					dist;

		for (k = 0; k < 3; k++)
			if (a[k].kind != V_STRING)
				return sc_error(r, n->args[k]->pos, "class_cast_exception",
								"Cannot cast %s to java.lang.String", sc_type_name(&a[k]));
		if (!SV_IS_NUM(a[3].kind))
			return sc_error(r, n->args[3]->pos, "class_cast_exception",
							"Cannot cast %s to double", sc_type_name(&a[3]));
		if (a[4].kind != V_DATE)
			return sc_error(r, n->args[4]->pos, "class_cast_exception",
							"Cannot cast %s to java.time.ZonedDateTime", sc_type_name(&a[4]));
		if (!parse_date(a[0].u.s, &origin))
			return sc_error(r, n->args[0]->pos, "illegal_argument_exception",
							"failed to parse date [%s]", a[0].u.s);
		if (!se_parse_time_value(a[1].u.s, &scale) || scale <= 0)
			return sc_error(r, n->args[1]->pos, "illegal_argument_exception",
							"failed to parse time value [%s]", a[1].u.s);
		if (!se_parse_time_value(a[2].u.s, &offset) || offset < 0)
			return sc_error(r, n->args[2]->pos, "illegal_argument_exception",
							"failed to parse time value [%s]", a[2].u.s);
		decay = sc_as_double(&a[3]);
		dist = Max(0.0, fabs((double) a[4].u.l - (double) origin) - (double) offset);
		switch ((ScoreFnId) n->op)
		{
			case SF_DECAY_DATE_LINEAR:
				scaling = (double) scale / (1.0 - decay);
				sc_val_double(out, Max(0.0, (scaling - dist) / scaling));
				break;
			case SF_DECAY_DATE_EXP:
				scaling = log(decay) / (double) scale;
				sc_val_double(out, exp(scaling * dist));
				break;
			default:
				scaling = 0.5 * pow((double) scale, 2.0) / log(decay);
				sc_val_double(out, exp(0.5 * pow(dist, 2.0) / scaling));
				break;
		}
		return true;
	}
	for (k = 0; k < n->nargs; k++)
	{
		if (!SV_IS_NUM(a[k].kind))
			return sc_error(r, n->args[k]->pos, "class_cast_exception",
							"Cannot cast %s to double", sc_type_name(&a[k]));
		x[k] = sc_as_double(&a[k]);
	}
	switch ((ScoreFnId) n->op)
	{
		case SF_SATURATION:
			sc_val_double(out, x[0] / (x[1] + x[0]));
			break;
		case SF_SIGMOID:
			sc_val_double(out, pow(x[0], x[2]) / (pow(x[1], x[2]) + pow(x[0], x[2])));
			break;
		default:
			{
				/* (origin, scale, offset, decay, value) */
				double		dist = Max(0.0, fabs(x[4] - x[0]) - x[2]);
				double		scaling;

				if (n->op == SF_DECAY_NUM_LINEAR)
				{
					scaling = x[1] / (1.0 - x[3]);
					sc_val_double(out, Max(0.0, (scaling - dist) / scaling));
				}
				else if (n->op == SF_DECAY_NUM_EXP)
				{
					scaling = log(x[3]) / x[1];
					sc_val_double(out, exp(scaling * dist));
				}
				else
				{
					scaling = 0.5 * pow(x[1], 2.0) / log(x[3]);
					sc_val_double(out, exp(0.5 * pow(dist, 2.0) / scaling));
				}
				break;
			}
	}
	return true;
}

/* doc['f'].value / .values / .empty / .length, date.millis */
bool
sc_doc_get_field(Run *r, const Node *n, const SVal *obj, SVal *out)
{
	int			cnt;

	if (obj->kind == V_DATE)
	{
		if (strcmp(n->name, "millis") == 0)
		{
			sc_val_long(out, obj->u.l);
			return true;
		}
		return sc_error(r, n->pos, "illegal_argument_exception",
						"dynamic getter [java.time.ZonedDateTime, %s] not found", n->name);
	}
	if (strcmp(n->name, "value") == 0)
		return first_value(r, n->pos, obj, out);
	if (strcmp(n->name, "empty") == 0 || strcmp(n->name, "length") == 0)
	{
		if ((cnt = doc_count(r, n->pos, obj)) < 0)
			return false;
		if (n->name[0] == 'e')
			sc_val_bool(out, cnt == 0);
		else
			sc_val_int(out, cnt);
		return true;
	}
	return sc_error(r, n->pos, "illegal_argument_exception",
					"dynamic getter [org.elasticsearch.index.fielddata.ScriptDocValues, %s] not found",
					n->name);
}

bool
sc_doc_get_index(Run *r, const Node *n, const SVal *obj, const SVal *ix, SVal *out)
{
	return value_at(r, n->pos, obj, ix, out);
}

bool
sc_doc_method(Run *r, const Node *n, SVal *recv, SVal *args, SVal *out)
{
	int			cnt;

	if (recv->kind == V_DATE)
	{
		if (n->nargs == 0 && (strcmp(n->name, "getMillis") == 0 ||
							  strcmp(n->name, "toEpochMilli") == 0))
		{
			sc_val_long(out, recv->u.l);
			return true;
		}
		if (n->nargs == 0 && strcmp(n->name, "toInstant") == 0)
		{
			*out = *recv;
			return true;
		}
	}
	else if (n->op == M_SIZE && n->nargs == 0)
	{
		if ((cnt = doc_count(r, n->pos, recv)) < 0)
			return false;
		sc_val_int(out, cnt);
		return true;
	}
	else if (n->op == M_ISEMPTY && n->nargs == 0)
	{
		if ((cnt = doc_count(r, n->pos, recv)) < 0)
			return false;
		sc_val_bool(out, cnt == 0);
		return true;
	}
	else if (n->nargs == 0 && strcmp(n->name, "getValue") == 0)
		return first_value(r, n->pos, recv, out);
	else if (n->op == M_GET && n->nargs == 1)
		return value_at(r, n->pos, recv, &args[0], out);
	return sc_error(r, n->pos, "illegal_argument_exception",
					"dynamic method [%s, %s/%d] not found", sc_type_name(recv),
					n->name, n->nargs);
}

int
se_script_java_double(char *dst, double d, bool is_float)
{
	return sc_format_java_double(dst, d, is_float);
}
