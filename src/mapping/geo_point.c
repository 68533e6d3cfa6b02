/*-------------------------------------------------------------------------
 *
 * geo_point.c
 *	  The geo_point field type: its input formats, Lucene's encoding of a
 *	  point in doc values, distances, distance units and geohashes.
 *
 * A point is stored as Lucene's LatLonDocValuesField stores it: latitude
 * and longitude each quantised to a 32-bit int (GeoEncodingUtils: floor of
 * the degrees over 180/2^32 resp. 360/2^32), latitude in the high half of
 * one int64, longitude in the low half.  Every query, sort and aggregation
 * reads the decoded (quantised) point, so distances and sort values are
 * those of ES.  Distances are Lucene's SloppyMath haversine (a sort key of
 * the haversine with its last 3 bits cleared, then the metres) with ES's
 * mean earth radius, or ES's plane approximation.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "mapping/mapping.h"

#define LAT_DECODE	(1.0 / (4294967296.0 / 180.0))
#define LON_DECODE	(1.0 / (4294967296.0 / 360.0))

static const char geohash_chars[] = "0123456789bcdefghjkmnpqrstuvwxyz";

int64
se_geo_encode(double lat, double lon)
{
	int32		ilat;
	int32		ilon;

	if (lat >= 90.0)
		lat = nextafter(90.0, 0.0);
	if (lon >= 180.0)
		lon = nextafter(180.0, 0.0);
	ilat = (int32) floor(lat / LAT_DECODE);
	ilon = (int32) floor(lon / LON_DECODE);
	return (int64) (((uint64) (uint32) ilat << 32) | (uint64) (uint32) ilon);
}

void
se_geo_decode(int64 v, double *lat, double *lon)
{
	*lat = (double) (int32) (uint32) ((uint64) v >> 32) * LAT_DECODE;
	*lon = (double) (int32) (uint32) ((uint64) v & 0xFFFFFFFF) * LON_DECODE;
}

double
se_geo_arc_meters(double lat1, double lon1, double lat2, double lon2)
{
	double		x1 = lat1 * (M_PI / 180.0);
	double		x2 = lat2 * (M_PI / 180.0);
	double		h1 = 1.0 - cos(x1 - x2);
	double		h2 = 1.0 - cos((lon1 - lon2) * (M_PI / 180.0));
	double		h = h1 + cos(x1) * cos(x2) * h2;
	union
	{
		double		d;
		uint64		u;
	}			key;

	/* the sort key keeps no more precision than Lucene's */
	key.d = h;
	key.u &= ~UINT64CONST(7);
	return SE_EARTH_MEAN_RADIUS * 2.0 * asin(Min(1.0, sqrt(key.d * 0.5)));
}

double
se_geo_plane_meters(double lat1, double lon1, double lat2, double lon2)
{
	double		x = (lon2 - lon1) * (M_PI / 180.0) * cos(((lat2 + lat1) / 2.0) * (M_PI / 180.0));
	double		y = (lat2 - lat1) * (M_PI / 180.0);

	return sqrt(x * x + y * y) * SE_EARTH_MEAN_RADIUS;
}

bool
se_geo_point_valid(const SeGeoPoint *p)
{
	return p->lat >= -90.0 && p->lat <= 90.0 && p->lon >= -180.0 && p->lon <= 180.0;
}

/* ES's GeoUtils.centeredModulus */
static double
centered_modulus(double dividend, double divisor)
{
	double		r = fmod(dividend, divisor);

	if (r <= 0)
		r += divisor;
	if (r > divisor / 2)
		r -= divisor;
	return r;
}

void
se_geo_normalize(SeGeoPoint *p)
{
	bool		norm_lat = p->lat > 90.0 || p->lat < -90.0;
	bool		norm_lon = norm_lat || p->lon > 180.0 || p->lon < -180.0;

	if (norm_lat)
	{
		bool		shift = true;

		p->lat = centered_modulus(p->lat, 360.0);
		if (p->lat < -90.0)
			p->lat = -180.0 - p->lat;
		else if (p->lat > 90.0)
			p->lat = 180.0 - p->lat;
		else
			shift = false;
		if (shift)
			p->lon += 180.0;
	}
	if (norm_lon)
		p->lon = centered_modulus(p->lon, 360.0);
}

/* ---------------------------------------------------------------------
 * Geohashes
 * ---------------------------------------------------------------------
 */
bool
se_geohash_cell(const char *s, int len, double *min_lat, double *max_lat,
				double *min_lon, double *max_lon)
{
	double		lat0 = -90.0,
				lat1 = 90.0,
				lon0 = -180.0,
				lon1 = 180.0;
	bool		even = true;	/* the first bit halves longitude */
	int			i,
				b;

	if (len <= 0)
		return false;
	for (i = 0; i < len; i++)
	{
		const char *c = strchr(geohash_chars, s[i]);

		if (s[i] == '\0' || c == NULL)
			return false;
		for (b = 4; b >= 0; b--)
		{
			int			bit = ((c - geohash_chars) >> b) & 1;

			if (even)
			{
				double		mid = (lon0 + lon1) / 2;

				if (bit)
					lon0 = mid;
				else
					lon1 = mid;
			}
			else
			{
				double		mid = (lat0 + lat1) / 2;

				if (bit)
					lat0 = mid;
				else
					lat1 = mid;
			}
			even = !even;
		}
	}
	*min_lat = lat0;
	*max_lat = lat1;
	*min_lon = lon0;
	*max_lon = lon1;
	return true;
}

/*
 * The geohash of an encoded point (se_geo_encode), as ES's Geohash does it:
 * the bits of the quantised longitude and latitude (sign bit flipped, so
 * that they count up from -180 and -90) interleaved from the longitude's
 * top bit, five a character.  Exact on doc values: no rounding between the
 * stored point and its cell.
 */
void
se_geohash_of_encoded(int64 v, int precision, char *out)
{
	uint32		ulat = (uint32) ((uint64) v >> 32) ^ 0x80000000;
	uint32		ulon = (uint32) ((uint64) v & 0xFFFFFFFF) ^ 0x80000000;
	int			bit = 0;
	int			i,
				b;

	for (i = 0; i < precision; i++)
	{
		int			ch = 0;

		for (b = 0; b < 5; b++, bit++)
		{
			/* even bits from the longitude, odd ones from the latitude */
			uint32		word = (bit & 1) ? ulat : ulon;

			ch = (ch << 1) | ((word >> (31 - bit / 2)) & 1);
		}
		out[i] = geohash_chars[ch];
	}
	out[precision] = '\0';
}

void
se_geohash_encode(double lat, double lon, int precision, char *out)
{
	se_geohash_of_encoded(se_geo_encode(lat, lon), precision, out);
}

/* ---------------------------------------------------------------------
 * Input formats
 * ---------------------------------------------------------------------
 */

/* A JSON number or numeric string as a double. */
static bool
json_double(const SeJson *v, double *out)
{
	char	   *end;

	if (v->type == SE_JSON_NUMBER)
	{
		*out = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING && v->u.s.len > 0)
	{
		*out = strtod(v->u.s.str, &end);
		return end == v->u.s.str + v->u.s.len && !isnan(*out);
	}
	return false;
}

static bool
check_z(double z, bool ignore_z, SeError *err)
{
	StringInfoData s;

	if (ignore_z)
		return true;
	initStringInfo(&s);
	se_append_java_double(&s, z);
	se_error_set(err, 400, "parse_exception",
				 "Exception parsing coordinates: found Z value [%s] but [ignore_z_value] parameter is [false]",
				 s.data);
	pfree(s.data);
	return false;
}

/* [lon, lat] or [lon, lat, z] */
static bool
parse_coordinates(const SeJson *v, bool ignore_z, SeGeoPoint *p, SeError *err)
{
	double		c[3];
	int			i;

	if (v->u.a.count > 3)
	{
		se_error_set(err, 400, "parse_exception",
					 "[geo_point] field type does not accept > 3 dimensions");
		return false;
	}
	for (i = 0; i < v->u.a.count; i++)
		if (v->u.a.items[i]->type != SE_JSON_NUMBER || !json_double(v->u.a.items[i], &c[i]))
		{
			se_error_set(err, 400, "parse_exception", "numeric value expected");
			return false;
		}
	if (v->u.a.count < 2)
	{
		se_error_set(err, 400, "parse_exception",
					 v->u.a.count == 0 ? "geo_point expected" : "field [lat] missing");
		return false;
	}
	if (v->u.a.count == 3 && !check_z(c[2], ignore_z, err))
		return false;
	p->lon = c[0];
	p->lat = c[1];
	return true;
}

static bool
parse_geohash(const char *s, int len, SeGeoPoint *p, SeError *err)
{
	double		lat0,
				lat1,
				lon0,
				lon1;

	uint64		latbits = 0,
				lonbits = 0;
	int			nlat = 0,
				nlon = 0;
	int			i,
				b;

	if (len > 12 || !se_geohash_cell(s, len, &lat0, &lat1, &lon0, &lon1))
	{
		se_error_set(err, 400, "parse_exception",
					 "unsupported symbol in geohash [%.*s]", len, s);
		return false;
	}

	/*
	 * ES takes a geohash as its cell's lower left corner, computed from the
	 * cell's bits left-aligned in 31 bits over 2^31/180 (2^31/360) steps.
	 */
	for (i = 0; i < len; i++)
	{
		int			c = strchr(geohash_chars, s[i]) - geohash_chars;

		for (b = 4; b >= 0; b--)
		{
			if (((i * 5 + (4 - b)) & 1) == 0)
				lonbits = (lonbits << 1) | ((c >> b) & 1), nlon++;
			else
				latbits = (latbits << 1) | ((c >> b) & 1), nlat++;
		}
	}
	p->lat = (double) (latbits << (31 - nlat)) / ((double) (UINT64CONST(1) << 31) / 180.0) - 90;
	p->lon = (double) (lonbits << (31 - nlon)) / ((double) (UINT64CONST(1) << 31) / 360.0) - 180;
	return true;
}

static bool
number_token(const char **pp, double *out)
{
	const char *p = *pp;
	char	   *end;

	while (*p == ' ' || *p == '\t')
		p++;
	*out = strtod(p, &end);
	if (end == p || isnan(*out))
		return false;
	*pp = end;
	return true;
}

/* "lat,lon", "lat,lon,z", "POINT (lon lat)" or a geohash */
static bool
parse_point_string(const char *s, int len, bool ignore_z, SeGeoPoint *p, SeError *err)
{
	double		c[3];
	int			n = 0;
	const char *q = s;

	if (memchr(s, ',', len) != NULL)
	{
		int			commas = 0;
		int			i;

		for (i = 0; i < len; i++)
			commas += s[i] == ',';
		if (commas > 2)
		{
			se_error_set(err, 400, "parse_exception",
						 "failed to parse [%.*s], expected 2 or 3 coordinates but found: [%d]",
						 len, s, commas + 1);
			return false;
		}
		for (n = 0; n <= commas; n++)
		{
			if (!number_token(&q, &c[n]))
			{
				se_error_set(err, 400, "parse_exception",
							 n == 0 ? "latitude must be a number" :
							 n == 1 ? "longitude must be a number" : "Z value must be a number");
				return false;
			}
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q != (n < commas ? ',' : '\0'))
			{
				se_error_set(err, 400, "parse_exception",
							 n == 0 ? "latitude must be a number" :
							 n == 1 ? "longitude must be a number" : "Z value must be a number");
				return false;
			}
			q++;
		}
		if (commas == 2 && !check_z(c[2], ignore_z, err))
			return false;
		p->lat = c[0];
		p->lon = c[1];
		return true;
	}
	if (len >= 5 && pg_strncasecmp(s, "POINT", 5) == 0)
	{
		q = s + 5;
		while (*q == ' ')
			q++;
		if (*q == '(')
		{
			q++;
			while (n < 3 && number_token(&q, &c[n]))
				n++;
			while (*q == ' ')
				q++;
			if (*q == ')' && n >= 2)
			{
				q++;
				while (*q == ' ')
					q++;
				if (*q == '\0')
				{
					if (n == 3 && !check_z(c[2], ignore_z, err))
						return false;
					p->lon = c[0];
					p->lat = c[1];
					return true;
				}
			}
		}
		se_error_set(err, 400, "parse_exception",
					 "Failed to parse WKT: expected a POINT of two coordinates, got [%.*s]", len, s);
		return false;
	}
	return parse_geohash(s, len, p, err);
}

static bool
parse_point_object(const SeJson *v, bool ignore_z, SeGeoPoint *p, SeError *err)
{
	const SeJson *lat = NULL;
	const SeJson *lon = NULL;
	const SeJson *z = NULL;
	const SeJson *hash = NULL;
	const SeJson *type = NULL;
	const SeJson *coords = NULL;
	int			i;

	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *m = v->u.o.members[i].value;

		if (strcmp(k, "lat") == 0)
			lat = m;
		else if (strcmp(k, "lon") == 0)
			lon = m;
		else if (strcmp(k, "z") == 0)
			z = m;
		else if (strcmp(k, "geohash") == 0)
			hash = m;
		else if (strcmp(k, "type") == 0)
			type = m;
		else if (strcmp(k, "coordinates") == 0)
			coords = m;
		else
		{
			se_error_set(err, 400, "parse_exception",
						 "field must be either [lat], [lon], [geohash], [type] or [coordinates]");
			return false;
		}
	}
	if (type != NULL || coords != NULL)
	{
		if (lat || lon || hash)
		{
			se_error_set(err, 400, "parse_exception",
						 "field must be either lat/lon, geohash string or type/coordinates");
			return false;
		}
		if (type == NULL || type->type != SE_JSON_STRING ||
			pg_strcasecmp(type->u.s.str, "Point") != 0)
		{
			se_error_set(err, 400, "parse_exception",
						 type == NULL ? "field [type] missing" : "[type] for geo_point can only be 'Point'");
			return false;
		}
		if (coords == NULL || coords->type != SE_JSON_ARRAY)
		{
			se_error_set(err, 400, "parse_exception",
						 coords == NULL ? "field [coordinates] missing" : "numeric value expected");
			return false;
		}
		return parse_coordinates(coords, ignore_z, p, err);
	}
	if (hash != NULL)
	{
		if (lat || lon)
		{
			se_error_set(err, 400, "parse_exception",
						 "field must be either lat/lon or geohash");
			return false;
		}
		if (hash->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "parse_exception", "geohash must be a string");
			return false;
		}
		return parse_geohash(hash->u.s.str, hash->u.s.len, p, err);
	}
	if (lat == NULL || lon == NULL)
	{
		se_error_set(err, 400, "parse_exception", "field [%s] missing",
					 lat == NULL ? "lat" : "lon");
		return false;
	}
	if (!json_double(lat, &p->lat))
	{
		se_error_set(err, 400, "parse_exception", "latitude must be a number");
		return false;
	}
	if (!json_double(lon, &p->lon))
	{
		se_error_set(err, 400, "parse_exception", "longitude must be a number");
		return false;
	}
	if (z != NULL)
	{
		double		zv;

		if (!json_double(z, &zv))
		{
			se_error_set(err, 400, "parse_exception", "z must be a number");
			return false;
		}
		if (!check_z(zv, ignore_z, err))
			return false;
	}
	return true;
}

bool
se_geo_parse_point(const SeJson *v, bool ignore_z, SeGeoPoint *p, SeError *err)
{
	switch (v->type)
	{
		case SE_JSON_OBJECT:
			return parse_point_object(v, ignore_z, p, err);
		case SE_JSON_ARRAY:
			return parse_coordinates(v, ignore_z, p, err);
		case SE_JSON_STRING:
			return parse_point_string(v->u.s.str, v->u.s.len, ignore_z, p, err);
		default:
			se_error_set(err, 400, "parse_exception", "geo_point expected");
			return false;
	}
}

bool
se_geo_is_single_point_array(const SeJson *v)
{
	return v->type == SE_JSON_ARRAY && v->u.a.count > 0 &&
		v->u.a.items[0]->type == SE_JSON_NUMBER;
}

/* ---------------------------------------------------------------------
 * Distance units (ES's DistanceUnit)
 * ---------------------------------------------------------------------
 */
static const struct
{
	const char *name;
	double		meters;
}			distance_units[] = {
	{"in", 0.0254}, {"inch", 0.0254},
	{"yd", 0.9144}, {"yards", 0.9144},
	{"ft", 0.3048}, {"feet", 0.3048},
	{"km", 1000.0}, {"kilometers", 1000.0},
	{"NM", 1852.0}, {"nmi", 1852.0}, {"nauticalmiles", 1852.0},
	{"mm", 0.001}, {"millimeters", 0.001},
	{"cm", 0.01}, {"centimeters", 0.01},
	{"mi", 1609.344}, {"miles", 1609.344},
	{"m", 1.0}, {"meters", 1.0},
};

bool
se_geo_unit(const char *name, double *meters)
{
	int			i;

	for (i = 0; i < lengthof(distance_units); i++)
		if (strcmp(distance_units[i].name, name) == 0)
		{
			*meters = distance_units[i].meters;
			return true;
		}
	return false;
}

bool
se_geo_parse_distance(const char *s, double default_unit, double *meters)
{
	int			len = strlen(s);
	int			best = -1;
	int			blen = 0;
	int			i;
	char	   *num;
	char	   *end;
	double		d;

	/* the longest unit name the text ends with */
	for (i = 0; i < lengthof(distance_units); i++)
	{
		int			ul = strlen(distance_units[i].name);

		if (ul <= len && ul > blen && strcmp(s + len - ul, distance_units[i].name) == 0)
		{
			best = i;
			blen = ul;
		}
	}
	num = pnstrdup(s, len - blen);
	d = strtod(num, &end);
	if (end == num || *end != '\0' || isnan(d))
	{
		pfree(num);
		return false;
	}
	pfree(num);
	*meters = d * (best >= 0 ? distance_units[best].meters : default_unit);
	return true;
}
