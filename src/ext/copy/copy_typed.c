/*
 * copy_typed.c
 *		COPY fields of bool, date, timestamp, timestamptz and uuid straight to
 *		their Datums, for the common spelling of each: what the type's input
 *		function would return, without its parser.
 *
 * Each converter takes only a strict subset of what the input function
 * accepts, the form COPY TO and most programs write, and returns false for
 * anything else: the caller (copy_fields.c) then calls the input function,
 * which gives its own value or its own error.  So a converter can never
 * accept what Postgres refuses, or word an error differently; it need only
 * compute the same value for what it accepts, which these do by Postgres'
 * own arithmetic (date2j, the microsecond timestamp):
 *
 *   bool			"t", "f", "true", "false"
 *   date			"YYYY-MM-DD", a year from 0001 (ISO order whatever
 *					DateStyle says: a field of four digits first is a year)
 *   timestamp		"YYYY-MM-DD HH:MM:SS" and up to six digits of fraction,
 *					hours 00-23, seconds 00-59, no typmod (timestamp(p)
 *					rounds)
 *   timestamptz	the same and an offset "+HH" or "+HH:MM" (either sign,
 *					hours up to 14): no time zone rules are involved
 *   uuid			"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in hex of either case
 *   float8		"[-]digits[.digits]", 15 significant digits at most
 *   float4		the same, 7 significant digits at most
 *   numeric		"[-]digits[.digits]" that its numeric(p,s) holds without
 *					rounding: straight to numeric_send's bytes
 *
 * The field's length must be known (tcopy's reader knows it).
 * test/ext/210_reader_diff.pl loads values of these types, in and out of
 * these forms, and compares with Postgres' COPY into a heap twin.
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "tcopy/copy.h"

/* n decimal digits at s into *v */
static inline bool
digits(const char *s, int n, int *v)
{
	int			r = 0;

	for (int i = 0; i < n; i++)
	{
		uint32		d = (uint32) ((unsigned char) s[i] - '0');

		if (d > 9)
			return false;
		r = r * 10 + (int) d;
	}
	*v = r;
	return true;
}

bool
tcopy_typed_bool(const char *s, int64 len, Datum *value)
{
	if (len == 1 && (s[0] == 't' || s[0] == 'f'))
		*value = BoolGetDatum(s[0] == 't');
	else if (len == 4 && memcmp(s, "true", 4) == 0)
		*value = BoolGetDatum(true);
	else if (len == 5 && memcmp(s, "false", 5) == 0)
		*value = BoolGetDatum(false);
	else
		return false;
	return true;
}

/* "YYYY-MM-DD" at s into days since 2000-01-01 */
static inline bool
ymd_days(const char *s, int *days)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			y,
				m,
				d;

	if (s[4] != '-' || s[7] != '-' ||
		!digits(s, 4, &y) || !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d))
		return false;
	if (y < 1 || m < 1 || m > 12 || d < 1)
		return false;
	if (d > mdays[m - 1] + (m == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
		return false;
	*days = date2j(y, m, d) - POSTGRES_EPOCH_JDATE;
	return true;
}

bool
tcopy_typed_date(const char *s, int64 len, Datum *value)
{
	int			days;

	if (len != 10 || !ymd_days(s, &days))
		return false;
	*value = DateADTGetDatum((DateADT) days);
	return true;
}

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" at s; *used its length */
static inline bool
local_timestamp(const char *s, int64 len, int64 *ts, int *used)
{
	int			days,
				h,
				mi,
				sec,
				frac = 0;
	int			n = 19;

	if (len < 19 || !ymd_days(s, &days) || s[10] != ' ' || s[13] != ':' || s[16] != ':' ||
		!digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec) ||
		h > 23 || mi > 59 || sec > 59)
		return false;
	if (len > 19 && s[19] == '.')
	{
		int			scale = 100000;

		n = 20;
		while (n < len && n < 26 && (uint32) ((unsigned char) s[n] - '0') <= 9)
		{
			frac += (s[n] - '0') * scale;
			scale /= 10;
			n++;
		}
		if (n == 20 || (n < len && (uint32) ((unsigned char) s[n] - '0') <= 9))
			return false;		/* no digit, or more than six */
	}
	*ts = (int64) days * USECS_PER_DAY +
		((int64) ((h * MINS_PER_HOUR + mi) * SECS_PER_MINUTE + sec)) * USECS_PER_SEC + frac;
	*used = n;
	return true;
}

bool
tcopy_typed_timestamp(const char *s, int64 len, Datum *value)
{
	int64		ts;
	int			used;

	if (!local_timestamp(s, len, &ts, &used) || used != len)
		return false;
	*value = TimestampGetDatum(ts);
	return true;
}

bool
tcopy_typed_timestamptz(const char *s, int64 len, Datum *value)
{
	int64		ts;
	int			used;
	int			oh,
				om = 0;
	const char *z;

	if (!local_timestamp(s, len, &ts, &used))
		return false;
	z = s + used;
	if (len - used == 3)
		;
	else if (len - used == 6 && z[3] == ':' && digits(z + 4, 2, &om) && om <= 59)
		;
	else
		return false;
	if ((z[0] != '+' && z[0] != '-') || !digits(z + 1, 2, &oh) || oh > 14)
		return false;
	/* local time at an offset east of UTC: UTC is local minus the offset */
	ts -= (z[0] == '+' ? 1 : -1) * ((int64) (oh * MINS_PER_HOUR + om) * SECS_PER_MINUTE) * USECS_PER_SEC;
	*value = TimestampTzGetDatum(ts);
	return true;
}

static inline int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
tcopy_typed_uuid(const char *s, int64 len, pg_uuid_t *uuid)
{
	int			b = 0;

	if (len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
		return false;
	for (int i = 0; i < 36; i += 2)
	{
		int			hi,
					lo;

		if (i == 8 || i == 13 || i == 18 || i == 23)
			i++;
		hi = hex_digit(s[i]);
		lo = hex_digit(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		uuid->data[b++] = (unsigned char) (hi << 4 | lo);
	}
	return b == UUID_LEN;
}

/*
 * "[-]digits[.digits]" (a point with digits on either side or both) with
 * at most max_significant digits from the first that is not zero: the
 * digits as an integer, how many follow the point, and the sign.
 */
static inline bool
plain_decimal(const char *s, int64 len, int max_significant, uint64 *sig, int *frac,
			  bool *neg)
{
	bool		dot = false;
	int			significant = 0;
	int			ndigits = 0;

	*neg = len > 0 && s[0] == '-';
	*sig = 0;
	*frac = 0;
	for (int64 i = *neg; i < len; i++)
	{
		uint32		d = (uint32) ((unsigned char) s[i] - '0');

		if (d <= 9)
		{
			if (*sig != 0 || d != 0)
				significant++;
			if (significant > max_significant)
				return false;
			*sig = *sig * 10 + d;
			ndigits++;
			*frac += dot;
		}
		else if (s[i] == '.' && !dot)
			dot = true;
		else
			return false;
	}
	return ndigits > 0;
}

/*
 * float8: a plain decimal of at most 15 significant digits and 22 after
 * the point.  The digits as an integer (below 2^53) and the power of ten
 * are both exact doubles, so one division is the correctly rounded value
 * of the decimal, which is what strtod (float8in_internal) returns
 * (Clinger's fast path).
 */
bool
tcopy_typed_float8(const char *s, int64 len, double *value)
{
	static const double pow10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
	};
	uint64		sig;
	int			frac;
	bool		neg;
	double		v;

	if (!plain_decimal(s, len, 15, &sig, &frac, &neg) || frac > 22)
		return false;
	v = (double) sig / pow10[frac];
	*value = neg ? -v : v;
	return true;
}

/*
 * float4: the same with at most 7 significant digits and 10 after the
 * point, in single precision: the digits (below 2^24) and the power of ten
 * (5^10 < 2^24) are exact floats, so one float division is strtof's
 * correctly rounded value (float4in's).
 */
bool
tcopy_typed_float4(const char *s, int64 len, float *value)
{
	static const float pow10f[] = {
		1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f
	};
	uint64		sig;
	int			frac;
	bool		neg;
	float		v;

	if (!plain_decimal(s, len, 7, &sig, &frac, &neg) || frac > 10)
		return false;
	v = (float) sig / pow10f[frac];
	*value = neg ? -v : v;
	return true;
}

#define NUMERIC_SEND_POS	0x0000
#define NUMERIC_SEND_NEG	0x4000

static inline uint8 *
put_int16(uint8 *p, int v)
{
	p[0] = (uint8) ((v >> 8) & 0xff);
	p[1] = (uint8) (v & 0xff);
	return p + 2;
}

/*
 * numeric: "[-]digits[.digits]" that fits typmod's numeric(p,s) without
 * rounding (at most s digits after the point, at most p - s before it,
 * leading zeros aside), or any such number without a typmod, into the bytes
 * numeric_send writes for what numeric_in makes of it: base-10000 digits
 * without leading or trailing zero groups, their weight, the sign (a zero
 * is positive), and the display scale (typmod's s, or the digits given
 * after the point).  buf holds TCOPY_TYPED_NUMERIC_MAX bytes.
 */
bool
tcopy_typed_numeric(const char *s, int64 len, int32 typmod, uint8 *buf, uint32 *buflen)
{
	int16		groups[(TCOPY_TYPED_NUMERIC_MAX - 8) / 2 + 2];
	bool		neg = len > 0 && s[0] == '-';
	const char *ip = s + neg;
	const char *fp = NULL;
	int			ilen = 0,
				flen = 0;
	int			dscale;
	int			ngroups = 0,
				first = 0,
				weight;
	int64		i = neg;
	uint8	   *p;

	while (i < len && (uint32) ((unsigned char) s[i] - '0') <= 9)
		i++, ilen++;
	if (i < len && s[i] == '.')
	{
		fp = s + ++i;
		while (i < len && (uint32) ((unsigned char) s[i] - '0') <= 9)
			i++, flen++;
		if (flen == 0)
			return false;
	}
	if (i != len || ilen == 0)
		return false;
	while (ilen > 0 && *ip == '0')
		ip++, ilen--;
	dscale = flen;
	if (typmod >= (int32) VARHDRSZ)
	{
		int32		tm = typmod - VARHDRSZ;
		int			precision = (tm >> 16) & 0xffff;
		int			scale = ((tm & 0x7ff) ^ 1024) - 1024;	/* PG 15: may be < 0 */

		if (scale < 0 || flen > scale || ilen > precision - scale)
			return false;
		dscale = scale;
	}
	if ((ilen + 3) / 4 + (flen + 3) / 4 > (TCOPY_TYPED_NUMERIC_MAX - 8) / 2)
		return false;
	/* the integer part's groups, aligned on the point, then the fraction's */
	for (int at = ilen % 4 ? ilen % 4 - 4 : 0; at < ilen; at += 4)
	{
		int			g = 0;

		for (int k = at; k < at + 4; k++)
			g = g * 10 + (k >= 0 ? ip[k] - '0' : 0);
		groups[ngroups++] = (int16) g;
	}
	weight = ngroups - 1;
	for (int at = 0; at < flen; at += 4)
	{
		int			g = 0;

		for (int k = at; k < at + 4; k++)
			g = g * 10 + (k < flen ? fp[k] - '0' : 0);
		groups[ngroups++] = (int16) g;
	}
	/* make_result: no leading or trailing zero groups; zero is positive */
	while (first < ngroups && groups[first] == 0)
		first++, weight--;
	while (ngroups > first && groups[ngroups - 1] == 0)
		ngroups--;
	if (ngroups == first)
	{
		weight = 0;
		neg = false;
	}
	p = put_int16(buf, ngroups - first);
	p = put_int16(p, weight);
	p = put_int16(p, neg ? NUMERIC_SEND_NEG : NUMERIC_SEND_POS);
	p = put_int16(p, dscale);
	for (int g = first; g < ngroups; g++)
		p = put_int16(p, groups[g]);
	*buflen = (uint32) (p - buf);
	return true;
}
