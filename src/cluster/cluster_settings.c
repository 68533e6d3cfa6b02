/*-------------------------------------------------------------------------
 *
 * cluster_settings.c
 *	  Dynamic cluster settings: the known settings, validation, the
 *	  persistent and transient layers, and the allocator's view of them
 *	  (see cluster_settings.h).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "cluster/cluster_settings.h"
#include "util/match.h"
#include "util/units.h"

typedef enum Kind
{
	K_ENUM,
	K_INT,						/* an integer >= min */
	K_FLOAT,					/* a number >= min */
	K_BOOL,
	K_WATERMARK,				/* "85%", "0.85" or a byte size of free space */
	K_LIST,						/* comma-separated values */
	K_BYTES,					/* a byte size ("40mb"), or -1 */
	K_TIME						/* a time value ("1s", "500ms") >= min ms */
} Kind;

typedef struct Def
{
	const char *key;			/* may hold one '*': an attribute name */
	Kind		kind;
	const char *def;			/* default (NULL: none) */
	double		min;
	const char *const *enum_values;
} Def;

static const char *const enable_values[] = {"all", "primaries", "new_primaries", "none", NULL};
static const char *const rebalance_values[] = {"all", "primaries", "replicas", "none", NULL};

#define A "cluster.routing.allocation."

static const Def defs[] = {
	{A "enable", K_ENUM, "all", 0, enable_values},
	{"cluster.routing.rebalance.enable", K_ENUM, "all", 0, rebalance_values},
	{A "balance.shard", K_FLOAT, "0.45", 0, NULL},
	{A "balance.index", K_FLOAT, "0.55", 0, NULL},
	/* below 1 the balancer could move a copy back and forth (allocator.c) */
	{A "balance.threshold", K_FLOAT, "1.0", 1.0, NULL},
	{A "cluster_concurrent_rebalance", K_INT, "2", -1, NULL},
	{A "node_concurrent_recoveries", K_INT, "2", 0, NULL},
	{A "node_concurrent_incoming_recoveries", K_INT, "2", 0, NULL},
	{A "node_concurrent_outgoing_recoveries", K_INT, "2", 0, NULL},
	{A "node_initial_primaries_recoveries", K_INT, "4", 0, NULL},
	{A "total_shards_per_node", K_INT, "-1", -1, NULL},
	{A "same_shard.host", K_BOOL, "false", 0, NULL},
	{A "disk.threshold_enabled", K_BOOL, "true", 0, NULL},
	{A "disk.watermark.low", K_WATERMARK, "85%", 0, NULL},
	{A "disk.watermark.high", K_WATERMARK, "90%", 0, NULL},
	{A "disk.watermark.flood_stage", K_WATERMARK, "95%", 0, NULL},
	{A "awareness.attributes", K_LIST, "", 0, NULL},
	{A "awareness.force.*.values", K_LIST, NULL, 0, NULL},
	{A "include.*", K_LIST, NULL, 0, NULL},
	{A "exclude.*", K_LIST, NULL, 0, NULL},
	{A "require.*", K_LIST, NULL, 0, NULL},
	/* reads rank copies by their nodes' responses (replica_select.c) */
	{"cluster.routing.use_adaptive_replica_selection", K_BOOL, "true", 0, NULL},
	/* peer recovery (replication/recovery_target.c); 0 or -1: unthrottled */
	{"indices.recovery.max_bytes_per_sec", K_BYTES, "40mb", 0, NULL},
	/* windows of files a recovery streams at once (ES: 1 to 8) */
	{"indices.recovery.max_concurrent_file_chunks", K_INT, "2", 1, NULL},
	/* the master's checks of the nodes and theirs of it (fault_detection.c) */
	{"cluster.fault_detection.follower_check.interval", K_TIME, "1s", 100, NULL},
	{"cluster.fault_detection.follower_check.timeout", K_TIME, "10s", 100, NULL},
	{"cluster.fault_detection.follower_check.retry_count", K_INT, "3", 1, NULL},
	{"cluster.fault_detection.leader_check.interval", K_TIME, "1s", 100, NULL},
	{"cluster.fault_detection.leader_check.timeout", K_TIME, "10s", 100, NULL},
	{"cluster.fault_detection.leader_check.retry_count", K_INT, "3", 1, NULL},
	/* the longest scroll / point in time keep-alive a request may ask (api/pit.c) */
	{"search.max_keep_alive", K_TIME, "24h", 1, NULL},
};

#define NDEFS lengthof(defs)

/* does key match def (one '*' standing for a non-empty name)? */
static bool
def_matches(const Def *d, const char *key)
{
	const char *star = strchr(d->key, '*');
	size_t		pre,
				post,
				len = strlen(key);

	if (star == NULL)
		return strcmp(d->key, key) == 0;
	pre = star - d->key;
	post = strlen(star + 1);
	return len > pre + post && strncmp(key, d->key, pre) == 0 &&
		strcmp(key + len - post, star + 1) == 0;
}

static const Def *
find_def(const char *key)
{
	int			i;

	for (i = 0; i < (int) NDEFS; i++)
		if (def_matches(&defs[i], key))
			return &defs[i];
	return NULL;
}

static int	get_int(const SeSettingsLayer *p, const SeSettingsLayer *t, const char *key);

/* ---------- layers ---------- */

static int
layer_find(const SeSettingsLayer *l, const char *key)
{
	int			lo = 0,
				hi = l->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			c = strcmp(l->keys[mid], key);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -(lo + 1);
}

static const char *
layer_get(const SeSettingsLayer *l, const char *key)
{
	int			i = l ? layer_find(l, key) : -1;

	return i >= 0 ? l->values[i] : NULL;
}

static void
layer_set(SeSettingsLayer *l, const char *key, const char *value)
{
	int			i = layer_find(l, key);

	if (i >= 0)
	{
		l->values[i] = pstrdup(value);
		return;
	}
	i = -i - 1;
	l->keys = l->keys ? repalloc(l->keys, sizeof(char *) * (l->n + 1)) : palloc(sizeof(char *));
	l->values = l->values ? repalloc(l->values, sizeof(char *) * (l->n + 1)) : palloc(sizeof(char *));
	memmove(&l->keys[i + 1], &l->keys[i], sizeof(char *) * (l->n - i));
	memmove(&l->values[i + 1], &l->values[i], sizeof(char *) * (l->n - i));
	l->keys[i] = pstrdup(key);
	l->values[i] = pstrdup(value);
	l->n++;
}

static void
layer_remove_at(SeSettingsLayer *l, int i)
{
	memmove(&l->keys[i], &l->keys[i + 1], sizeof(char *) * (l->n - i - 1));
	memmove(&l->values[i], &l->values[i + 1], sizeof(char *) * (l->n - i - 1));
	l->n--;
}

static SeSettingsLayer
layer_copy(const SeSettingsLayer *l)
{
	SeSettingsLayer c = {0};
	int			i;

	for (i = 0; i < l->n; i++)
		layer_set(&c, l->keys[i], l->values[i]);
	return c;
}

void
se_csettings_layer_put(SeSettingsLayer *l, const char *key, const char *value)
{
	int			i;

	if (value)
	{
		layer_set(l, key, value);
		return;
	}
	if ((i = layer_find(l, key)) >= 0)
		layer_remove_at(l, i);
}

SeSettingsLayer
se_csettings_layer_copy(const SeSettingsLayer *l)
{
	return layer_copy(l);
}

const char *
se_csettings_get(const SeSettingsLayer *persistent, const SeSettingsLayer *transient,
				 const char *key)
{
	const char *v = layer_get(transient, key);
	const Def  *d;

	if (v == NULL)
		v = layer_get(persistent, key);
	if (v == NULL && (d = find_def(key)) != NULL)
		v = d->def;
	return v;
}

/* ---------- values ---------- */

static bool
parse_int_strict(const char *s, int64 *out)
{
	char	   *end;
	long long	v;

	if (*s == '\0')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0' || errno != 0)
		return false;
	*out = v;
	return true;
}

/*
 * A watermark: a used fraction (*frac, from "85%" or "0.85") or the free
 * bytes to keep (*free_bytes).
 */
static bool
parse_watermark(const char *s, double *frac, int64 *free_bytes)
{
	char	   *end;
	double		v;

	*frac = -1;
	*free_bytes = -1;
	v = strtod(s, &end);
	if (end != s && strcmp(end, "%") == 0 && v >= 0 && v <= 100)
	{
		*frac = v / 100.0;
		return true;
	}
	if (end != s && *end == '\0' && v >= 0 && v <= 1.0 && strchr(s, '.'))
	{
		*frac = v;
		return true;
	}
	return se_parse_byte_size(s, free_bytes);
}

/* check value for d; false with why set */
static bool
valid_value(const Def *d, const char *value, const char **why)
{
	int64		i;
	double		f;
	int64		b;
	char	   *end;
	int			k;

	switch (d->kind)
	{
		case K_ENUM:
			for (k = 0; d->enum_values[k]; k++)
				if (strcmp(d->enum_values[k], value) == 0)
					return true;
			*why = "not one of the setting's values";
			return false;
		case K_INT:
			if (!parse_int_strict(value, &i) || i < (int64) d->min || i > PG_INT32_MAX)
			{
				*why = psprintf("must be an integer >= %d", (int) d->min);
				return false;
			}
			return true;
		case K_FLOAT:
			f = strtod(value, &end);
			if (end == value || *end != '\0' || isnan(f) || isinf(f) || f < d->min)
			{
				*why = psprintf("must be a number >= %g", d->min);
				return false;
			}
			return true;
		case K_BOOL:
			if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
				return true;
			*why = "must be [true] or [false]";
			return false;
		case K_WATERMARK:
			if (parse_watermark(value, &f, &b))
				return true;
			*why = "must be a percentage, a ratio or a byte size of free space";
			return false;
		case K_LIST:
			return true;
		case K_BYTES:
			if (strcmp(value, "-1") == 0 || se_parse_byte_size(value, &b))
				return true;
			*why = "must be a byte size value such as [40mb], or [-1]";
			return false;
		case K_TIME:
			if (se_parse_time_value(value, &i) && i >= (int64) d->min)
				return true;
			*why = psprintf("must be a time value such as [1s] of at least [%dms]", (int) d->min);
			return false;
	}
	return false;
}

/* ---------- reading a request body ---------- */

typedef struct Pending
{
	int			n;
	char	  **keys;
	char	  **values;			/* NULL = reset */
} Pending;

static void
pending_add(Pending *p, const char *key, char *value)
{
	p->keys = p->keys ? repalloc(p->keys, sizeof(char *) * (p->n + 1)) : palloc(sizeof(char *));
	p->values = p->values ? repalloc(p->values, sizeof(char *) * (p->n + 1)) : palloc(sizeof(char *));
	p->keys[p->n] = pstrdup(key);
	p->values[p->n] = value;
	p->n++;
}

/* flatten obj into p (prefix: the dotted path so far) */
static bool
flatten(const SeJson *obj, const char *prefix, Pending *p, const char *scope, SeError *err)
{
	int			i;

	for (i = 0; i < obj->u.o.count; i++)
	{
		const char *k = obj->u.o.members[i].key;
		const SeJson *v = obj->u.o.members[i].value;
		char	   *key = prefix ? psprintf("%s.%s", prefix, k) : pstrdup(k);

		if (v->type == SE_JSON_OBJECT)
		{
			if (!flatten(v, key, p, scope, err))
				return false;
		}
		else if (v->type == SE_JSON_NULL)
			pending_add(p, key, NULL);
		else if (v->type == SE_JSON_ARRAY)
		{
			StringInfoData s;
			int			e;

			initStringInfo(&s);
			for (e = 0; e < v->u.a.count; e++)
			{
				char	   *t = se_json_scalar_text(v->u.a.items[e]);

				if (t == NULL)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "%s setting [%s] must be a value or a list of values", scope, key);
					return false;
				}
				appendStringInfo(&s, "%s%s", e ? "," : "", t);
			}
			pending_add(p, key, s.data);
		}
		else
			pending_add(p, key, se_json_scalar_text(v));
	}
	return true;
}

static bool
apply_pending(const Pending *p, SeSettingsLayer *layer, const SeSettingsLayer *persistent,
			  const SeSettingsLayer *transient, const char *scope, SeSettingsLayer *applied,
			  SeError *err)
{
	int			i;

	for (i = 0; i < p->n; i++)
	{
		const char *key = p->keys[i];
		const Def  *d;
		const char *why = NULL;

		if (p->values[i] == NULL)
		{
			int			k;
			bool		any = false;

			if (strchr(key, '*'))
			{
				for (k = layer->n - 1; k >= 0; k--)
					if (se_wildcard_match(key, layer->keys[k]))
						layer_remove_at(layer, k);
				continue;
			}
			k = layer_find(layer, key);
			if (k >= 0)
			{
				layer_remove_at(layer, k);
				any = true;
			}
			if (!any && find_def(key) == NULL)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "%s setting [%s], not recognized", scope, key);
				return false;
			}
			continue;
		}
		d = find_def(key);
		if (d == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "%s setting [%s], not recognized", scope, key);
			return false;
		}
		if (!valid_value(d, p->values[i], &why))
		{
			const char *old = se_csettings_get(persistent, transient, key);

			se_error_set(err, 400, "illegal_argument_exception",
						 "illegal value can't update [%s] from [%s] to [%s]: %s",
						 key, old ? old : "", p->values[i], why);
			return false;
		}
		layer_set(layer, key, p->values[i]);
		layer_set(applied, key, p->values[i]);
	}
	return true;
}

/* the three watermarks must be of one kind and in order */
static bool
check_watermarks(const SeSettingsLayer *persistent, const SeSettingsLayer *transient,
				 SeError *err)
{
	const char *names[3] = {"low", "high", "flood_stage"};
	const char *text[3];
	double		frac[3];
	int64		bytes[3];
	int			i;

	for (i = 0; i < 3; i++)
	{
		text[i] = se_csettings_get(persistent, transient,
								   psprintf(A "disk.watermark.%s", names[i]));
		(void) parse_watermark(text[i], &frac[i], &bytes[i]);
	}
	for (i = 0; i < 2; i++)
	{
		bool		pct = frac[i] >= 0;

		if (pct != (frac[i + 1] >= 0))
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unable to consistently parse [%s=%s], [%s=%s] as percentage or bytes",
						 A "disk.watermark.low", text[0], A "disk.watermark.high", text[1]);
			return false;
		}
		if (pct ? frac[i] > frac[i + 1] : bytes[i] < bytes[i + 1])
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "%s disk watermark [%s] more than %s disk watermark [%s]",
						 names[i], text[i], names[i + 1], text[i + 1]);
			return false;
		}
	}
	return true;
}

bool
se_csettings_update(const SeJson *body, SeSettingsLayer *persistent,
					SeSettingsLayer *transient, StringInfo answer, SeError *err)
{
	Pending		pp = {0},
				pt = {0};
	SeSettingsLayer np,
				nt,
				ap = {0},
				at = {0};
	int			i;

	if (body == NULL || body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no settings to update;");
		return false;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		pers = strcmp(k, "persistent") == 0;

		if (!pers && strcmp(k, "transient") != 0)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[cluster_update_settings_request] unknown field [%s]", k);
			return false;
		}
		if (v->type == SE_JSON_NULL)
			continue;
		if (v->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[cluster_update_settings_request] failed to parse field [%s]", k);
			return false;
		}
		if (!flatten(v, NULL, pers ? &pp : &pt, pers ? "persistent" : "transient", err))
			return false;
	}
	if (pp.n == 0 && pt.n == 0)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no settings to update;");
		return false;
	}
	np = layer_copy(persistent);
	nt = layer_copy(transient);
	if (!apply_pending(&pt, &nt, persistent, transient, "transient", &at, err) ||
		!apply_pending(&pp, &np, persistent, transient, "persistent", &ap, err) ||
		!check_watermarks(&np, &nt, err))
		return false;
	*persistent = np;
	*transient = nt;
	if (answer)
	{
		appendStringInfoString(answer, "{\"acknowledged\":true,\"persistent\":");
		se_csettings_layer_nested(&ap, answer);
		appendStringInfoString(answer, ",\"transient\":");
		se_csettings_layer_nested(&at, answer);
		appendStringInfoChar(answer, '}');
	}
	return true;
}

/* ---------- JSON ---------- */

void
se_csettings_layer_to_json(const SeSettingsLayer *l, StringInfo out)
{
	int			i;

	appendStringInfoChar(out, '{');
	for (i = 0; i < l->n; i++)
	{
		if (i)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, l->keys[i], strlen(l->keys[i]));
		appendStringInfoChar(out, ':');
		se_json_write_string(out, l->values[i], strlen(l->values[i]));
	}
	appendStringInfoChar(out, '}');
}

/* a sorted flat layer as nested objects ("a.b.c": v -> {"a":{"b":{"c":v}}}) */
void
se_csettings_layer_nested(const SeSettingsLayer *l, StringInfo out)
{
	const char *prev = NULL;
	int			depth = 0;		/* objects open below the root */
	int			i;

	appendStringInfoChar(out, '{');
	for (i = 0; i < l->n; i++)
	{
		const char *key = l->keys[i];
		int			common = 0;	/* path segments shared with prev */
		const char *p,
				   *seg;
		int			nseg = 1;

		for (p = key; *p; p++)
			if (*p == '.')
				nseg++;
		if (prev)
		{
			const char *a = prev,
					   *b = key;

			/* count whole leading segments both keys share */
			for (;;)
			{
				const char *ea = strchr(a, '.'),
						   *eb = strchr(b, '.');

				if (ea == NULL || eb == NULL || ea - a != eb - b || strncmp(a, b, ea - a) != 0)
					break;
				common++;
				a = ea + 1;
				b = eb + 1;
			}
			if (common > depth)
				common = depth;
			for (; depth > common; depth--)
				appendStringInfoChar(out, '}');
			appendStringInfoChar(out, ',');
		}
		/* open the segments after the shared ones, then the leaf */
		seg = key;
		{
			int			k;

			for (k = 0; k < common; k++)
				seg = strchr(seg, '.') + 1;
			for (k = common; k < nseg - 1; k++)
			{
				const char *e = strchr(seg, '.');

				se_json_write_string(out, seg, e - seg);
				appendStringInfoString(out, ":{");
				depth++;
				seg = e + 1;
			}
		}
		se_json_write_string(out, seg, strlen(seg));
		appendStringInfoChar(out, ':');
		se_json_write_string(out, l->values[i], strlen(l->values[i]));
		prev = key;
	}
	for (; depth > 0; depth--)
		appendStringInfoChar(out, '}');
	appendStringInfoChar(out, '}');
}

bool
se_csettings_layer_from_json(const SeJson *obj, SeSettingsLayer *l, SeError *err)
{
	int			i;

	memset(l, 0, sizeof(*l));
	if (obj == NULL)
		return true;
	if (obj->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 500, "illegal_state_exception", "stored cluster settings are not an object");
		return false;
	}
	for (i = 0; i < obj->u.o.count; i++)
	{
		char	   *v = se_json_scalar_text(obj->u.o.members[i].value);

		if (v == NULL)
		{
			se_error_set(err, 500, "illegal_state_exception",
						 "stored cluster setting [%s] is not a value", obj->u.o.members[i].key);
			return false;
		}
		layer_set(l, obj->u.o.members[i].key, v);
	}
	return true;
}

void
se_csettings_to_json(const SeSettingsLayer *persistent, const SeSettingsLayer *transient,
					 bool flat, bool include_defaults, StringInfo out)
{
	void		(*emit) (const SeSettingsLayer *, StringInfo) =
		flat ? se_csettings_layer_to_json : se_csettings_layer_nested;

	appendStringInfoString(out, "{\"persistent\":");
	emit(persistent, out);
	appendStringInfoString(out, ",\"transient\":");
	emit(transient, out);
	if (include_defaults)
	{
		SeSettingsLayer d = {0};
		int			i;

		for (i = 0; i < (int) NDEFS; i++)
			if (defs[i].def && !strchr(defs[i].key, '*') &&
				layer_get(persistent, defs[i].key) == NULL &&
				layer_get(transient, defs[i].key) == NULL)
				layer_set(&d, defs[i].key, defs[i].def);
		appendStringInfoString(out, ",\"defaults\":");
		emit(&d, out);
	}
	appendStringInfoChar(out, '}');
}

/* A K_TIME setting in milliseconds (its default if unset or unreadable). */
int64
se_csettings_time_ms(const SeSettingsLayer *p, const SeSettingsLayer *t, const char *key)
{
	const Def  *d = find_def(key);
	int64		ms = 0;

	Assert(d && d->kind == K_TIME);
	if (!se_parse_time_value(se_csettings_get(p, t, key), &ms))
		(void) se_parse_time_value(d->def, &ms);
	return ms;
}

/* A K_INT setting. */
int
se_csettings_int(const SeSettingsLayer *p, const SeSettingsLayer *t, const char *key)
{
	return get_int(p, t, key);
}

/* ---------- the allocator's settings ---------- */

static int
get_int(const SeSettingsLayer *p, const SeSettingsLayer *t, const char *key)
{
	int64		v = 0;

	(void) parse_int_strict(se_csettings_get(p, t, key), &v);
	return (int) v;
}

static double
get_float(const SeSettingsLayer *p, const SeSettingsLayer *t, const char *key)
{
	return strtod(se_csettings_get(p, t, key), NULL);
}

static int
enum_index(const char *const *values, const char *v)
{
	int			k;

	for (k = 0; values[k]; k++)
		if (strcmp(values[k], v) == 0)
			return k;
	return 0;
}

/* split "a, b,c" into trimmed, non-empty values */
static int
split_list(const char *s, const char ***out)
{
	char	   *copy = pstrdup(s ? s : "");
	char	   *tok,
			   *save = NULL;
	int			n = 0;

	*out = palloc(sizeof(char *) * (strlen(copy) / 2 + 2));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *e;

		while (*tok == ' ')
			tok++;
		e = tok + strlen(tok);
		while (e > tok && e[-1] == ' ')
			*--e = '\0';
		if (*tok)
			(*out)[n++] = tok;
	}
	(*out)[n] = NULL;
	return n;
}

/* the filters of one kind: layer keys "<prefix><kind>.<attr>" */
static SeAllocFilter *
collect_filters(const SeSettingsLayer *l, const char *prefix, const char *kind, int *n)
{
	const char *kp = psprintf("%s%s.", prefix, kind);
	size_t		plen = strlen(kp);
	SeAllocFilter *f = palloc0(sizeof(SeAllocFilter) * (l->n + 1));
	int			i;

	*n = 0;
	for (i = 0; i < l->n; i++)
		if (strncmp(l->keys[i], kp, plen) == 0 && l->keys[i][plen])
		{
			SeAllocFilter *x = &f[*n];

			x->attr = l->keys[i] + plen;
			x->nvalues = split_list(l->values[i], &x->values);
			if (x->nvalues > 0)
				(*n)++;
		}
	return f;
}

void
se_csettings_filters(const SeSettingsLayer *l, const char *prefix, SeAllocFilters *f)
{
	f->include = collect_filters(l, prefix, "include", &f->ninclude);
	f->exclude = collect_filters(l, prefix, "exclude", &f->nexclude);
	f->require = collect_filters(l, prefix, "require", &f->nrequire);
}

void
se_csettings_alloc(const SeSettingsLayer *p, const SeSettingsLayer *t, SeAllocSettings *s)
{
	double		frac;
	int64		bytes;
	int			a;
	const char *ncr;

	se_alloc_settings_default(s);
	s->enable = (SeAllocEnable) enum_index(enable_values, se_csettings_get(p, t, A "enable"));
	s->rebalance_enable = (SeRebalanceEnable)
		enum_index(rebalance_values, se_csettings_get(p, t, "cluster.routing.rebalance.enable"));
	s->balance_shard = (float) get_float(p, t, A "balance.shard");
	s->balance_index = (float) get_float(p, t, A "balance.index");
	s->threshold = (float) get_float(p, t, A "balance.threshold");
	s->cluster_concurrent_rebalance = get_int(p, t, A "cluster_concurrent_rebalance");
	/* node_concurrent_recoveries sets both directions unless they are set */
	ncr = layer_get(t, A "node_concurrent_recoveries") ? layer_get(t, A "node_concurrent_recoveries")
		: layer_get(p, A "node_concurrent_recoveries");
	s->node_concurrent_incoming_recoveries = get_int(p, t, A "node_concurrent_incoming_recoveries");
	s->node_concurrent_outgoing_recoveries = get_int(p, t, A "node_concurrent_outgoing_recoveries");
	if (ncr)
	{
		int64		v = 2;

		(void) parse_int_strict(ncr, &v);
		if (!layer_get(t, A "node_concurrent_incoming_recoveries") &&
			!layer_get(p, A "node_concurrent_incoming_recoveries"))
			s->node_concurrent_incoming_recoveries = (int) v;
		if (!layer_get(t, A "node_concurrent_outgoing_recoveries") &&
			!layer_get(p, A "node_concurrent_outgoing_recoveries"))
			s->node_concurrent_outgoing_recoveries = (int) v;
	}
	s->node_initial_primaries_recoveries = get_int(p, t, A "node_initial_primaries_recoveries");
	s->total_shards_per_node = get_int(p, t, A "total_shards_per_node");
	s->same_shard_host = strcmp(se_csettings_get(p, t, A "same_shard.host"), "true") == 0;
	s->disk_threshold_enabled = strcmp(se_csettings_get(p, t, A "disk.threshold_enabled"), "true") == 0;
	(void) parse_watermark(se_csettings_get(p, t, A "disk.watermark.low"), &frac, &bytes);
	s->low_used = frac >= 0 ? frac : 1.0;
	s->low_free_bytes = bytes > 0 ? bytes : 0;
	(void) parse_watermark(se_csettings_get(p, t, A "disk.watermark.high"), &frac, &bytes);
	s->high_used = frac >= 0 ? frac : 1.0;
	s->high_free_bytes = bytes > 0 ? bytes : 0;
	(void) parse_watermark(se_csettings_get(p, t, A "disk.watermark.flood_stage"), &frac, &bytes);
	s->flood_used = frac >= 0 ? frac : 1.0;
	s->flood_free_bytes = bytes > 0 ? bytes : 0;

	s->nawareness = split_list(se_csettings_get(p, t, A "awareness.attributes"), &s->awareness);
	s->awareness_force = palloc0(sizeof(char **) * (s->nawareness + 1));
	for (a = 0; a < s->nawareness; a++)
	{
		const char *v = se_csettings_get(p, t, psprintf(A "awareness.force.%s.values",
														 s->awareness[a]));

		if (v && split_list(v, &s->awareness_force[a]) == 0)
			s->awareness_force[a] = NULL;
	}
	/* the cluster's filters: persistent ones, transient ones winning */
	{
		SeSettingsLayer merged = layer_copy(p);
		int			i;

		for (i = 0; i < t->n; i++)
			layer_set(&merged, t->keys[i], t->values[i]);
		se_csettings_filters(&merged, A, &s->filters);
	}
}
