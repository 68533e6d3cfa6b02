/*-------------------------------------------------------------------------
 *
 * geo_query.c
 *	  Queries on geo_point fields: geo_distance and geo_bounding_box, and
 *	  the geo half of distance_feature and of the _geo_distance sort.
 *
 * geo_point fields have no terms: a query walks the segment's doc values
 * (Lucene's quantised points, mapping/geo_point.c) and sets the bits of
 * the docs with a point inside.  geo_distance keeps a point whose
 * haversine distance to the centre (on the decoded point, as Lucene's
 * distance query) is at most the distance; distance_type is accepted and,
 * as in ES 8, does not change the query.  geo_bounding_box compares the
 * encoded ints with the box's encoded edges (lower edges rounded up, as
 * Lucene's box query); left > right crosses the dateline.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/search_int.h"

#define LAT_DECODE	(1.0 / (4294967296.0 / 180.0))
#define LON_DECODE	(1.0 / (4294967296.0 / 360.0))

/* validation_method: STRICT (default), IGNORE_MALFORMED, COERCE */
static bool
parse_validation(const char *qname, const SeJson *v, SeGeoValidation *out, SeError *err)
{
	if (v->type == SE_JSON_STRING)
	{
		if (pg_strcasecmp(v->u.s.str, "strict") == 0)
			*out = SE_GEO_STRICT;
		else if (pg_strcasecmp(v->u.s.str, "ignore_malformed") == 0)
			*out = SE_GEO_IGNORE_MALFORMED;
		else if (pg_strcasecmp(v->u.s.str, "coerce") == 0)
			*out = SE_GEO_COERCE;
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "No enum constant org.elasticsearch.index.query.GeoValidationMethod.%s",
						 v->u.s.str);
			return false;
		}
		return true;
	}
	se_error_set(err, 400, "parsing_exception", "[%s] [validation_method] must be a string", qname);
	return false;
}

static bool
parse_point(const char *qname, const SeJson *v, SeGeoPoint *p, SeError *err)
{
	SeError		inner;

	se_error_init(&inner);
	if (se_geo_parse_point(v, true, p, &inner))
		return true;
	se_error_set(err, 400, "parsing_exception", "[%s] %s", qname,
				 inner.reason ? inner.reason : "failed to parse point");
	if (inner.reason)
		pfree(inner.reason);
	return false;
}

bool
se_geo_parse_unit(const SeJson *v, double *meters, SeError *err)
{
	if (v->type == SE_JSON_STRING && se_geo_unit(v->u.s.str, meters))
		return true;
	se_error_set(err, 400, "illegal_argument_exception", "No distance unit match [%s]",
				 v->type == SE_JSON_STRING ? v->u.s.str : "?");
	return false;
}

bool
se_geo_parse_distance_type(const SeJson *v, bool *arc, SeError *err)
{
	if (v->type == SE_JSON_STRING &&
		(pg_strcasecmp(v->u.s.str, "arc") == 0 || pg_strcasecmp(v->u.s.str, "plane") == 0))
	{
		*arc = pg_strcasecmp(v->u.s.str, "arc") == 0;
		return true;
	}
	se_error_set(err, 400, "illegal_argument_exception", "No geo distance for [%s]",
				 v->type == SE_JSON_STRING ? v->u.s.str : "?");
	return false;
}

/* The one field key of a query (or sort): a second one is ES's error. */
static bool
take_field(const char *what, char **field, const char *k, SeError *err)
{
	if (*field != NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] field name already set to [%s] but found [%s]", what, *field, k);
		return false;
	}
	*field = pstrdup(k);
	return true;
}

/* boost, _name, ignore_unmapped, validation_method: true when k was one */
static bool
common_param(const char *qname, SeQuery *q, SeGeoQuery *g, const char *k,
			 const SeJson *v, bool *ok, SeError *err)
{
	*ok = true;
	if (strcmp(k, "boost") == 0 && v->type == SE_JSON_NUMBER)
		q->boost = (float) v->u.n.d;
	else if (strcmp(k, "_name") == 0)
		 /* accepted */ ;
	else if (strcmp(k, "ignore_unmapped") == 0)
	{
		if (!se_query_json_bool(v, &g->ignore_unmapped))
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] failed to parse [ignore_unmapped]", qname);
			*ok = false;
		}
	}
	else if (strcmp(k, "validation_method") == 0)
		*ok = parse_validation(qname, v, &g->validation, err);
	else
		return false;
	return true;
}

static SeQuery *
new_geo_query(SeGeoQueryKind kind)
{
	SeQuery    *q = se_query_new(SE_Q_GEO);

	q->geo = palloc0(sizeof(SeGeoQuery));
	q->geo->kind = kind;
	return q;
}

SeQuery *
se_geo_distance_parse(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	SeGeoQuery *g;
	const SeJson *distance = NULL;
	const SeJson *point = NULL;
	double		unit = 1.0;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[geo_distance] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_geo_query(SE_GEO_DISTANCE);
	g = q->geo;
	g->arc = true;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		ok;

		if (common_param("geo_distance", q, g, k, v, &ok, err))
		{
			if (!ok)
				return NULL;
		}
		else if (strcmp(k, "distance") == 0)
			distance = v;
		else if (strcmp(k, "unit") == 0)
		{
			if (!se_geo_parse_unit(v, &unit, err))
				return NULL;
		}
		else if (strcmp(k, "distance_type") == 0)
		{
			if (!se_geo_parse_distance_type(v, &g->arc, err))
				return NULL;
		}
		else if (!take_field("geo_distance", &g->field, k, err))
			return NULL;
		else
			point = v;
	}
	if (distance == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "geo_distance requires 'distance' to be specified");
		return NULL;
	}
	if (distance->type == SE_JSON_NUMBER)
		g->radius = (distance->u.n.is_int ? (double) distance->u.n.i : distance->u.n.d) * unit;
	else if (distance->type != SE_JSON_STRING ||
			 !se_geo_parse_distance(distance->u.s.str, unit, &g->radius))
	{
		se_error_set(err, 400, "parse_exception", "failed to parse distance [%s]",
					 distance->type == SE_JSON_STRING ? distance->u.s.str : "?");
		return NULL;
	}
	if (!(g->radius > 0))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "distance must be greater than zero");
		return NULL;
	}
	if (point == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[geo_distance] requires a geo_point field and its point");
		return NULL;
	}
	if (!parse_point("geo_distance", point, &g->center, err))
		return NULL;
	return q;
}

/* One corner of a box; a geohash stands for its cell's corner of that name. */
static bool
parse_corner(const SeJson *v, bool top, bool left, double *lat, double *lon, SeError *err)
{
	SeGeoPoint	p;

	if (v->type == SE_JSON_STRING && memchr(v->u.s.str, ',', v->u.s.len) == NULL &&
		pg_strncasecmp(v->u.s.str, "POINT", 5) != 0)
	{
		double		lat0,
					lat1,
					lon0,
					lon1;

		if (!se_geohash_cell(v->u.s.str, v->u.s.len, &lat0, &lat1, &lon0, &lon1))
		{
			se_error_set(err, 400, "parsing_exception",
						 "[geo_bounding_box] unsupported symbol in geohash [%s]", v->u.s.str);
			return false;
		}
		*lat = top ? lat1 : lat0;
		*lon = left ? lon0 : lon1;
		return true;
	}
	if (!parse_point("geo_bounding_box", v, &p, err))
		return false;
	*lat = p.lat;
	*lon = p.lon;
	return true;
}

static bool
json_num(const SeJson *v, double *out)
{
	if (v->type == SE_JSON_NUMBER)
	{
		*out = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		char	   *end;

		*out = strtod(v->u.s.str, &end);
		return end != v->u.s.str && *end == '\0';
	}
	return false;
}

/* "BBOX (minLon, maxLon, maxLat, minLat)" */
static bool
parse_bbox_wkt(const char *s, SeGeoQuery *g, SeError *err)
{
	double		c[4];
	const char *p = s;
	int			n;

	while (*p == ' ')
		p++;
	if (pg_strncasecmp(p, "BBOX", 4) == 0)
	{
		p += 4;
		while (*p == ' ')
			p++;
		if (*p == '(')
		{
			p++;
			for (n = 0; n < 4; n++)
			{
				char	   *end;

				c[n] = strtod(p, &end);
				if (end == p)
					break;
				p = end;
				while (*p == ' ')
					p++;
				if (*p != (n < 3 ? ',' : ')'))
					break;
				p++;
			}
			if (n == 4)
			{
				g->left = c[0];
				g->right = c[1];
				g->top = c[2];
				g->bottom = c[3];
				return true;
			}
		}
	}
	se_error_set(err, 400, "parsing_exception",
				 "[geo_bounding_box] failed to parse WKT bounding box [%s]", s);
	return false;
}

static bool
parse_box(const SeJson *box, SeGeoQuery *g, SeError *err)
{
	bool		has[4] = {false, false, false, false};	/* top bottom left right */
	int			i;

	if (box->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[geo_bounding_box] failed to parse bounding box. Expected start object but found [%s]",
					 se_json_type_name(box->type));
		return false;
	}
	for (i = 0; i < box->u.o.count; i++)
	{
		const char *k = box->u.o.members[i].key;
		const SeJson *v = box->u.o.members[i].value;
		double		lat,
					lon;

		if (strcmp(k, "wkt") == 0 && v->type == SE_JSON_STRING)
		{
			if (!parse_bbox_wkt(v->u.s.str, g, err))
				return false;
			has[0] = has[1] = has[2] = has[3] = true;
		}
		else if (strcmp(k, "top_left") == 0 || strcmp(k, "bottom_right") == 0 ||
				 strcmp(k, "top_right") == 0 || strcmp(k, "bottom_left") == 0)
		{
			bool		top = k[0] == 't';
			bool		left = strstr(k, "left") != NULL;

			if (!parse_corner(v, top, left, &lat, &lon, err))
				return false;
			if (top)
				g->top = lat;
			else
				g->bottom = lat;
			if (left)
				g->left = lon;
			else
				g->right = lon;
			has[top ? 0 : 1] = true;
			has[left ? 2 : 3] = true;
		}
		else if (strcmp(k, "top") == 0 || strcmp(k, "bottom") == 0 ||
				 strcmp(k, "left") == 0 || strcmp(k, "right") == 0)
		{
			double		d;
			int			which = k[0] == 't' ? 0 : k[0] == 'b' ? 1 : k[0] == 'l' ? 2 : 3;

			if (!json_num(v, &d))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[geo_bounding_box] [%s] must be a number", k);
				return false;
			}
			if (which == 0)
				g->top = d;
			else if (which == 1)
				g->bottom = d;
			else if (which == 2)
				g->left = d;
			else
				g->right = d;
			has[which] = true;
		}
		else
		{
			se_error_set(err, 400, "elasticsearch_parse_exception",
						 "failed to parse bounding box. unexpected field [%s]", k);
			return false;
		}
	}
	if (!has[0] || !has[1] || !has[2] || !has[3])
	{
		se_error_set(err, 400, "elasticsearch_parse_exception",
					 "failed to parse bounding box. %s is missing",
					 !has[0] ? "top" : !has[1] ? "bottom" : !has[2] ? "left" : "right");
		return false;
	}
	return true;
}

SeQuery *
se_geo_bounding_box_parse(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	SeGeoQuery *g;
	const SeJson *box = NULL;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[geo_bounding_box] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_geo_query(SE_GEO_BOX);
	g = q->geo;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		ok;

		if (common_param("geo_bounding_box", q, g, k, v, &ok, err))
		{
			if (!ok)
				return NULL;
		}
		else if (strcmp(k, "type") == 0)
			 /* ES 8 ignores it (indexed / memory) */ ;
		else if (!take_field("geo_bounding_box", &g->field, k, err))
			return NULL;
		else
			box = v;
	}
	if (box == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Field name must not be empty.");
		return NULL;
	}
	if (!parse_box(box, g, err))
		return NULL;
	return q;
}

static void
lat_error(SeError *err, const char *what, double v, const char *qname)
{
	StringInfoData s;

	initStringInfo(&s);
	se_append_java_double(&s, v);
	se_error_set(err, 400, "query_shard_exception", "illegal %s value [%s] for [%s]",
				 what, s.data, qname);
	pfree(s.data);
}

static bool
check_point(SeGeoQuery *g, SeGeoPoint *p, const char *qname, SeError *err)
{
	if (g->validation == SE_GEO_STRICT)
	{
		if (p->lat < -90 || p->lat > 90)
		{
			lat_error(err, "latitude", p->lat, qname);
			return false;
		}
		if (p->lon < -180 || p->lon > 180)
		{
			lat_error(err, "longitude", p->lon, qname);
			return false;
		}
	}
	else if (g->validation == SE_GEO_COERCE)
		se_geo_normalize(p);
	return true;
}

/*
 * The shard's view of a geo query: checks the field and the points (per
 * validation_method); false with err set on an error.  *none: nothing can
 * match (an unmapped field with ignore_unmapped).
 */
bool
se_geo_query_bind(SeGeoQuery *g, const SeMappedField *f, bool *none, SeError *err)
{
	const char *qname = g->kind == SE_GEO_DISTANCE ? "geo_distance" : "geo_bounding_box";

	*none = false;
	if (f == NULL || f->type == SE_FT_OBJECT)
	{
		if (g->ignore_unmapped)
		{
			*none = true;
			return true;
		}
		se_error_set(err, 400, "query_shard_exception",
					 "failed to find geo field [%s]", g->field);
		return false;
	}
	if (f->type != SE_FT_GEO_POINT)
	{
		se_error_set(err, 400, "query_shard_exception",
					 "Field [%s] is of unsupported type [%s] for [%s] query",
					 f->path, se_field_type_name(f->type), qname);
		return false;
	}
	if (g->kind == SE_GEO_DISTANCE)
		return check_point(g, &g->center, qname, err);
	else
	{
		SeGeoPoint	tl = {g->top, g->left};
		SeGeoPoint	br = {g->bottom, g->right};

		if (!check_point(g, &tl, qname, err) || !check_point(g, &br, qname, err))
			return false;
		if (g->validation == SE_GEO_STRICT && g->top < g->bottom)
		{
			StringInfoData a;

			initStringInfo(&a);
			se_append_java_double(&a, g->top);
			appendStringInfoString(&a, " vs. ");
			se_append_java_double(&a, g->bottom);
			se_error_set(err, 400, "query_shard_exception",
						 "top is below bottom corner: %s", a.data);
			pfree(a.data);
			return false;
		}
		g->top = tl.lat;
		g->left = tl.lon;
		g->bottom = br.lat;
		g->right = br.lon;
	}
	return true;
}

/* Lucene's encodeLatitudeCeil / encodeLongitudeCeil */
static int64
encode_ceil(double v, double decode, double max)
{
	double		e = ceil(v / decode);

	if (v >= max)
		return (int64) floor(nextafter(max, 0) / decode);
	return (int64) e;
}

static int64
encode_floor(double v, double decode, double max)
{
	if (v >= max)
		v = nextafter(max, 0);
	return (int64) floor(v / decode);
}

/* Set the bits of the docs of segment r with a point (field f) in g. */
bool
se_geo_set_bits(const SeGeoQuery *g, SeSegmentReader *r, int f, uint64 *bits, int32 max_doc)
{
	bool		any = false;
	int64		lat_lo = 0,
				lat_hi = 0,
				lon_lo = 0,
				lon_hi = 0;
	bool		cross = false;
	double		band = 0;
	int32		doc;

	if (se_segment_field_dv_type(r, f) != SE_DV_NUMERIC)
		return false;

	/*
	 * A point farther in latitude than the distance (as an arc of a
	 * meridian, a lower bound of the haversine), with a margin of 1e-6
	 * degrees, is out without the trigonometry.
	 */
	if (g->kind == SE_GEO_DISTANCE)
		band = g->radius / SE_EARTH_MEAN_RADIUS * (180.0 / M_PI) + 1e-6;
	if (g->kind == SE_GEO_BOX)
	{
		lat_lo = encode_ceil(g->bottom, LAT_DECODE, 90.0);
		lat_hi = encode_floor(g->top, LAT_DECODE, 90.0);
		lon_lo = encode_ceil(g->left, LON_DECODE, 180.0);
		lon_hi = encode_floor(g->right, LON_DECODE, 180.0);
		cross = g->right < g->left;
	}
	for (doc = 0; doc < max_doc; doc++)
	{
		const int64 *vals;
		int			n = se_segment_numeric_values(r, f, doc, &vals);
		int			i;

		if ((doc & 1023) == 0)
			SE_SEARCH_TICK(16);
		for (i = 0; i < n; i++)
		{
			bool		hit;

			if (g->kind == SE_GEO_DISTANCE)
			{
				double		lat,
							lon;

				se_geo_decode(vals[i], &lat, &lon);
				hit = fabs(lat - g->center.lat) <= band &&
					se_geo_arc_meters(g->center.lat, g->center.lon, lat, lon) <= g->radius;
			}
			else
			{
				int64		ilat = (int32) (uint32) ((uint64) vals[i] >> 32);
				int64		ilon = (int32) (uint32) ((uint64) vals[i] & 0xFFFFFFFF);

				hit = ilat >= lat_lo && ilat <= lat_hi &&
					(cross ? (ilon >= lon_lo || ilon <= lon_hi)
					 : (ilon >= lon_lo && ilon <= lon_hi));
			}
			if (hit)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
				break;
			}
		}
	}
	return any;
}

/* distance_feature on a geo_point: pivot / (pivot + distance of the closest point) */
double
se_geo_distance_feature_score(const SeFnWeight *f, SeSegmentReader *r, int field, int32 doc)
{
	const int64 *vals;
	int			n = field >= 0 ? se_segment_numeric_values(r, field, doc, &vals) : 0;
	double		best = -1;
	int			i;

	for (i = 0; i < n; i++)
	{
		double		lat,
					lon,
					d;

		se_geo_decode(vals[i], &lat, &lon);
		d = se_geo_arc_meters(f->origin_lat, f->origin_lon, lat, lon);
		if (best < 0 || d < best)
			best = d;
	}
	if (best < 0)
		return 0.0;
	return (float) (f->scale / (f->scale + best));
}

bool
se_geo_distance_feature_bind(const SeScoreFunction *q, const SeMappedField *f,
							 SeFnWeight *fw, SeError *err)
{
	SeGeoPoint	origin;

	if (!parse_point("distance_feature", q->origin, &origin, err))
		return false;
	if (!se_geo_parse_distance(q->offset->u.s.str, 1.0, &fw->scale))
	{
		se_error_set(err, 400, "parse_exception", "failed to parse distance [%s]",
					 q->offset->u.s.str);
		return false;
	}
	if (!(fw->scale > 0))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "pivotDistance must be > 0, got %g", fw->scale);
		return false;
	}
	fw->geo = true;
	fw->origin_lat = origin.lat;
	fw->origin_lon = origin.lon;
	fw->field = pstrdup(f->path);
	return true;
}

/* ---------------------------------------------------------------------
 * The _geo_distance sort
 * ---------------------------------------------------------------------
 */

/* One origin, or an array of them, into g. */
static bool
sort_points(const SeJson *v, SeGeoSort *g, SeError *err)
{
	int			n = (v->type == SE_JSON_ARRAY && !se_geo_is_single_point_array(v)) ?
		v->u.a.count : 1;
	int			i;

	g->points = repalloc(g->points, sizeof(SeGeoPoint) * (g->npoints + n));
	for (i = 0; i < n; i++)
	{
		const SeJson *p = n == 1 && !(v->type == SE_JSON_ARRAY && !se_geo_is_single_point_array(v)) ?
			v : v->u.a.items[i];

		if (!parse_point("_geo_distance", p, &g->points[g->npoints], err))
			return false;
		g->npoints++;
	}
	return true;
}

bool
se_geo_sort_parse(const SeJson *body, SeSortSpec *s, SeError *err)
{
	SeGeoSort  *g;
	int			i;

	memset(s, 0, sizeof(*s));
	s->kind = SE_SORT_FIELD;
	s->missing = SE_MISSING_LAST;
	s->mode = SE_SORT_MODE_DEFAULT;
	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[_geo_distance] expected an object");
		return false;
	}
	s->geo = g = palloc0(sizeof(SeGeoSort));
	g->points = palloc(sizeof(SeGeoPoint));
	g->unit = 1.0;
	g->arc = true;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "order") == 0 && v->type == SE_JSON_STRING)
		{
			if (strcmp(v->u.s.str, "asc") == 0)
				s->desc = false;
			else if (strcmp(v->u.s.str, "desc") == 0)
				s->desc = true;
			else
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Unknown SortOrder [%s]", v->u.s.str);
				return false;
			}
		}
		else if (strcmp(k, "unit") == 0)
		{
			if (!se_geo_parse_unit(v, &g->unit, err))
				return false;
		}
		else if (strcmp(k, "distance_type") == 0)
		{
			if (!se_geo_parse_distance_type(v, &g->arc, err))
				return false;
		}
		else if (strcmp(k, "mode") == 0 && v->type == SE_JSON_STRING)
		{
			g->mode_set = true;
			if (strcmp(v->u.s.str, "min") == 0)
				g->mode = SE_GEO_SORT_MIN;
			else if (strcmp(v->u.s.str, "max") == 0)
				g->mode = SE_GEO_SORT_MAX;
			else if (strcmp(v->u.s.str, "avg") == 0)
				g->mode = SE_GEO_SORT_AVG;
			else if (strcmp(v->u.s.str, "median") == 0)
				g->mode = SE_GEO_SORT_MEDIAN;
			else if (strcmp(v->u.s.str, "sum") == 0)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "sort_mode [sum] isn't supported for sorting by geo distance");
				return false;
			}
			else
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Unknown SortMode [%s]", v->u.s.str);
				return false;
			}
		}
		else if (strcmp(k, "ignore_unmapped") == 0)
		{
			if (!se_query_json_bool(v, &g->ignore_unmapped))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[_geo_distance] failed to parse [ignore_unmapped]");
				return false;
			}
		}
		else if (strcmp(k, "validation_method") == 0)
		{
			if (!parse_validation("_geo_distance", v, &g->validation, err))
				return false;
		}
		else if (strcmp(k, "nested") == 0)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[_geo_distance] nested sorting is not supported here");
			return false;
		}
		else if (s->field != NULL && strcmp(s->field, k) != 0)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[_geo_distance] sort field name already set to [%s] but found [%s]",
						 s->field, k);
			return false;
		}
		else
		{
			s->field = pstrdup(k);
			if (!sort_points(v, g, err))
				return false;
		}
	}
	if (s->field == NULL || g->npoints == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "No geo points provided for _geo_distance sort.");
		return false;
	}
	for (i = 0; i < g->npoints; i++)
	{
		SeGeoPoint *p = &g->points[i];

		if (g->validation == SE_GEO_COERCE)
			se_geo_normalize(p);
		else if (g->validation == SE_GEO_STRICT && !se_geo_point_valid(p))
		{
			StringInfoData a;
			bool		lat = p->lat < -90 || p->lat > 90;

			initStringInfo(&a);
			se_append_java_double(&a, lat ? p->lat : p->lon);
			se_error_set(err, 400, "illegal_argument_exception",
						 "illegal %s value [%s] for [GeoDistanceSort]",
						 lat ? "latitude" : "longitude", a.data);
			return false;
		}
	}
	return true;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

double
se_geo_sort_value(const SeGeoSort *g, bool desc, const int64 *vals, int n)
{
	SeGeoSortMode mode = g->mode_set ? g->mode : desc ? SE_GEO_SORT_MAX : SE_GEO_SORT_MIN;
	int			count = n * g->npoints;
	double		stack[16];
	double	   *d = count <= lengthof(stack) ? stack : palloc(sizeof(double) * count);
	double		result;
	int			i,
				j,
				c = 0;

	for (i = 0; i < n; i++)
	{
		double		lat,
					lon;

		se_geo_decode(vals[i], &lat, &lon);
		for (j = 0; j < g->npoints; j++)
		{
			const SeGeoPoint *o = &g->points[j];
			double		m = g->arc ? se_geo_arc_meters(lat, lon, o->lat, o->lon) :
				se_geo_plane_meters(lat, lon, o->lat, o->lon);

			d[c++] = m / g->unit;
		}
	}
	if (mode == SE_GEO_SORT_MEDIAN || mode == SE_GEO_SORT_MIN || mode == SE_GEO_SORT_MAX)
		qsort(d, c, sizeof(double), cmp_double);
	switch (mode)
	{
		case SE_GEO_SORT_MIN:
			result = d[0];
			break;
		case SE_GEO_SORT_MAX:
			result = d[c - 1];
			break;
		case SE_GEO_SORT_AVG:
			result = 0;
			for (i = 0; i < c; i++)
				result += d[i];
			result /= c;
			break;
		default:
			result = (c & 1) ? d[c / 2] : (d[c / 2 - 1] + d[c / 2]) / 2;
			break;
	}
	if (d != stack)
		pfree(d);
	return result;
}

/* A decay's distance parameter: a distance string or metres. */
static bool
decay_distance(const SeJson *v, const char *what, double *meters, SeError *err)
{
	if (v->type == SE_JSON_NUMBER)
	{
		*meters = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING && se_geo_parse_distance(v->u.s.str, 1.0, meters))
		return true;
	se_error_set(err, 400, "parse_exception", "failed to parse [%s] of a geo decay function", what);
	return false;
}

/*
 * gauss/exp/linear on a geo_point (ES's GeoFieldDataScoreFunction): the
 * arc distance in metres of the doc's points to origin; scale and offset
 * distances.
 */
bool
se_geo_decay_bind(const SeScoreFunction *q, const SeMappedField *f, SeFnWeight *fw,
				  SeError *err)
{
	SeGeoPoint	origin;

	if (q->origin == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception", "[origin] must be set for geo fields.");
		return false;
	}
	if (!parse_point("decay function", q->origin, &origin, err) ||
		!decay_distance(q->scale, "scale", &fw->scale, err) ||
		(q->offset != NULL && !decay_distance(q->offset, "offset", &fw->offset, err)))
		return false;
	if (!(fw->scale > 0))
	{
		se_error_set(err, 400, "illegal_argument_exception", "scale must be greater than 0");
		return false;
	}
	fw->geo = true;
	fw->origin_lat = origin.lat;
	fw->origin_lon = origin.lon;
	fw->field = pstrdup(f->path);
	return true;
}
