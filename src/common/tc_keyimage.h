/*
 * tc_keyimage.h
 *		Key images: byte strings whose memcmp order is the order of a
 *		Postgres type's default btree operator class, and which are equal
 *		exactly when that class calls the values equal, for the types whose
 *		stored form tells equal values apart (numeric's display scale,
 *		float's signed zero, interval's months, days and microseconds).
 *		docs/values.md, "Keys", gives the formats and why a key carries an
 *		image beside the value as written.
 *
 * No Postgres header reaches this file: the extension computes images from
 * bytes it already holds (a value's send format), and the unit tests check
 * them against reference comparators without a server.  Inputs come from
 * Postgres' own send functions, but are checked all the same: a malformed
 * one is refused, never read past.
 */
#ifndef TC_KEYIMAGE_H
#define TC_KEYIMAGE_H

#include <stddef.h>
#include <stdint.h>

#define TC_KEYIMAGE_FLOAT8_SIZE 8
#define TC_KEYIMAGE_INTERVAL_SIZE 16
/* bytes of interval_send's output: time int64, day int32, month int32 */
#define TC_KEYIMAGE_INTERVAL_SEND_SIZE 16

/*
 * The longest numeric image for a send format of ndigits digits: class
 * byte, weight, two bytes a digit, terminator.
 */
#define TC_KEYIMAGE_NUMERIC_MAX(ndigits) (1 + 2 + 2 * (size_t) (ndigits) + 2)

extern void tc_keyimage_float8(double value, uint8_t out[TC_KEYIMAGE_FLOAT8_SIZE]);
extern int	tc_keyimage_numeric(const uint8_t *send, size_t len,
								uint8_t *out, size_t outcap, size_t *outlen);
extern int	tc_keyimage_interval(const uint8_t *send, size_t len,
								 uint8_t out[TC_KEYIMAGE_INTERVAL_SIZE]);
extern size_t tc_keyimage_bpchar_len(const uint8_t *bytes, size_t len);

#endif							/* TC_KEYIMAGE_H */
