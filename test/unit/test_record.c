/*
 * test_record.c
 *		Unit tests of rows in the stored form: what the client writes
 *		(tc_record.c) is byte for byte what the tserver's codec writes for
 *		the same row (ts_key_encode, ts_value_encode), and the tserver's
 *		check of a received record (ts_record_check) accepts exactly such
 *		bytes.
 *
 * Random schemas (every kind, keys of up to three columns, none) and rows
 * (NULLs, integer and float edges, NaNs of any payload, -0, strings with
 * zero bytes and char(n) padding).  Each record is then mutated (a byte
 * changed, dropped or added): whatever the check accepts must decode and
 * encode again to the very same bytes, so the tserver never stores a form
 * its own codec would not have written.  tc_wire_row_bound, the protobuf
 * encoder's measure, is held to what protobuf-c packs for the same rows.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_arena.h"
#include "tc_record.h"
#include "tc_test.h"
#include "ts_codec.h"

#define MAX_COLS 48
#define MAX_BLOB 400			/* a blob's bytes, and its blanks */
#define TABLE_ID 7

/* REQUIRE in a function returning bool */
#define REQUIRE_B(cond) \
	do { \
		bool		require_ok_ = (cond); \
		\
		CHECK(require_ok_); \
		if (!require_ok_) \
			return false; \
	} while (0)

typedef struct TestSchema
{
	Tcopy__Schema schema;
	Tcopy__Column columns[MAX_COLS];
	Tcopy__Column *pointers[MAX_COLS];
	uint32_t	key[TS_MAX_KEY_COLUMNS];
	bool		is_key[MAX_COLS];
	TsLayout	layout;
	TcRecordLayout record;
	uint32_t	slots[TS_MAX_KEY_COLUMNS];
} TestSchema;

/*
 * How large random schemas and rows are: the small profile (up to 12
 * columns, 3 key columns, strings of up to 40 bytes) or the wide one
 * (up to 48 columns, 32 key columns, strings of up to 400 bytes and 400
 * blanks, some all zero bytes, so that values pass 128 bytes and key
 * strings double).
 */
typedef struct Profile
{
	uint32_t	max_cols;
	uint32_t	max_key;
	uint32_t	max_blob;
	uint32_t	max_pad;
	bool		zeros;			/* some strings all zero bytes */
} Profile;

static const Profile small_profile = {12, 3, 40, 4, false};
static const Profile wide_profile = {MAX_COLS, TS_MAX_KEY_COLUMNS, MAX_BLOB, MAX_BLOB, true};

typedef struct TestRow
{
	int64_t		ints[MAX_COLS];
	double		floats[MAX_COLS];
	TcWireBlob	blobs[MAX_COLS];
	uint32_t	nulls[MAX_COLS];
	uint8_t		bytes[MAX_COLS][MAX_BLOB];	/* blob data, and the pb side's
											 * padded copy */
	uint8_t		padded[MAX_COLS][2 * MAX_BLOB];
	ProtobufCBinaryData pb_blobs[MAX_COLS];
	TcWireRow	wire;
	Tcopy__Row	pb;
} TestRow;

static void
random_schema(TestSchema *t, const Profile *profile)
{
	uint32_t	ncols = (uint32_t) (tc_test_rng() % (profile->max_cols + 1));
	uint32_t	nkey = ncols == 0 ? 0 :
		(uint32_t) (tc_test_rng() % ((ncols < profile->max_key ? ncols : profile->max_key) + 1));
	TsError		err;

	memset(t, 0, sizeof(*t));
	tcopy__schema__init(&t->schema);
	for (uint32_t c = 0; c < ncols; c++)
	{
		tcopy__column__init(&t->columns[c]);
		t->columns[c].name = "c";
		t->columns[c].kind = (Tcopy__Kind) (TCOPY__KIND__KIND_BOOL + tc_test_rng() % 4);
		t->pointers[c] = &t->columns[c];
	}
	for (uint32_t k = 0; k < nkey;)
	{
		uint32_t	c = (uint32_t) (tc_test_rng() % ncols);

		if (t->is_key[c])
			continue;
		t->is_key[c] = true;
		t->key[k++] = c;
	}
	t->schema.columns = t->pointers;
	t->schema.n_columns = ncols;
	t->schema.key = t->key;
	t->schema.n_key = nkey;
	REQUIRE(ts_layout_init(&t->layout, &t->schema, &err) == 0);
	t->record.ncolumns = t->layout.ncolumns;
	t->record.kinds = t->layout.kinds;
	t->record.is_key = t->layout.is_key;
	t->record.nkey = t->layout.nkey;
	t->record.key_columns = t->layout.key_columns;
	tc_record_layout_derive(&t->record, t->slots);
}

static int64_t
random_int(void)
{
	static const int64_t edges[] = {0, 1, -1, 63, -64, 64, 127, 128, INT32_MAX, INT32_MIN,
	INT64_MAX, INT64_MIN};

	if (tc_test_rng() % 3 == 0)
		return edges[tc_test_rng() % (sizeof(edges) / sizeof(edges[0]))];
	return (int64_t) tc_test_rng() >> (tc_test_rng() % 64);
}

static double
random_float(void)
{
	uint64_t	bits;
	double		f;

	switch (tc_test_rng() % 6)
	{
		case 0:
			return NAN;
		case 1:
			/* a NaN of another payload or sign */
			bits = UINT64_C(0x7FF0000000000001) | (tc_test_rng() & UINT64_C(0x800FFFFFFFFFFFFF));
			memcpy(&f, &bits, 8);
			return f;
		case 2:
			return tc_test_rng() % 2 ? -0.0 : INFINITY * (tc_test_rng() % 2 ? 1 : -1);
		default:
			return ((double) (int64_t) tc_test_rng()) / (double) (tc_test_rng() | 1);
	}
}

static void
random_row(const TestSchema *t, TestRow *r, const Profile *profile)
{
	memset(&r->wire, 0, sizeof(r->wire));
	tcopy__row__init(&r->pb);
	r->wire.ints = r->ints;
	r->wire.floats = r->floats;
	r->wire.blobs = r->blobs;
	r->wire.nulls = r->nulls;
	for (uint32_t c = 0; c < t->schema.n_columns; c++)
	{
		if (!t->is_key[c] && tc_test_rng() % 4 == 0)
		{
			r->nulls[r->wire.n_nulls++] = c;
			continue;
		}
		switch (t->columns[c].kind)
		{
			case TCOPY__KIND__KIND_BOOL:
				r->ints[r->wire.n_ints++] = (int64_t) (tc_test_rng() % 2);
				break;
			case TCOPY__KIND__KIND_INT:
				r->ints[r->wire.n_ints++] = random_int();
				break;
			case TCOPY__KIND__KIND_FLOAT:
				r->floats[r->wire.n_floats++] = random_float();
				break;
			default:
				{
					uint32_t	b = r->wire.n_blobs++;
					uint32_t	len = (uint32_t) (tc_test_rng() % (profile->max_blob + 1));
					uint32_t	pad = tc_test_rng() % 3 == 0 ?
						(uint32_t) (tc_test_rng() % (profile->max_pad + 1)) : 0;
					bool		zeros = profile->zeros && tc_test_rng() % 4 == 0;

					for (uint32_t i = 0; i < len; i++)
						r->bytes[b][i] = zeros || tc_test_rng() % 3 == 0 ? 0 :
							(uint8_t) tc_test_rng();
					memcpy(r->padded[b], r->bytes[b], len);
					memset(r->padded[b] + len, ' ', pad);
					r->blobs[b].data = r->bytes[b];
					r->blobs[b].len = len;
					r->blobs[b].pad = pad;
					r->pb_blobs[b].data = r->padded[b];
					r->pb_blobs[b].len = len + pad;
					break;
				}
		}
	}
	r->pb.ints = r->ints;
	r->pb.n_ints = r->wire.n_ints;
	r->pb.floats = r->floats;
	r->pb.n_floats = r->wire.n_floats;
	r->pb.blobs = r->pb_blobs;
	r->pb.n_blobs = r->wire.n_blobs;
	r->pb.nulls = r->nulls;
	r->pb.n_nulls = r->wire.n_nulls;
}

/* Split a record into key and value: false when its lengths do not fit. */
static bool
split_record(const uint8_t *rec, size_t len, const uint8_t **key, size_t *keylen,
			 const uint8_t **value, size_t *valuelen)
{
	const uint8_t *p = rec;
	const uint8_t *end = rec + len;
	uint64_t	n;

	if (!tc_varint_get(&p, end, &n) || n > (uint64_t) (end - p))
		return false;
	*key = p;
	*keylen = (size_t) n;
	p += n;
	if (!tc_varint_get(&p, end, &n) || n != (uint64_t) (end - p))
		return false;
	*value = p;
	*valuelen = (size_t) n;
	return true;
}

/*
 * What the tserver's codec makes of key and value: decoded, then encoded
 * again into *key_out (without the table id) and *value_out.  False when
 * they do not decode.
 */
static bool
codec_round_trip(const TestSchema *t, const uint8_t *key, size_t keylen,
				 const uint8_t *value, size_t valuelen, TcBuf *key_out, TcBuf *value_out)
{
	TcBuf		full = {0};
	TsValue		values[MAX_COLS];
	int64_t		ints[MAX_COLS];
	double		floats[MAX_COLS];
	ProtobufCBinaryData blobs[MAX_COLS];
	uint32_t	nulls[MAX_COLS];
	Tcopy__Row	row = TCOPY__ROW__INIT;
	TcArena		scratch;
	bool		ok;

	tc_arena_init(&scratch, 4096);
	REQUIRE_B(tc_buf_reserve(&full, 4 + keylen + 8));
	memset(full.data, 0, 4);
	memcpy(full.data + 4, key, keylen);
	full.len = 4 + keylen;
	if (t->layout.nkey == 0)
	{
		memset(full.data + full.len, 0, 8);	/* a row id */
		full.len += 8;
	}
	ok = ts_row_decode(&t->layout, full.data, full.len, value, valuelen, values, &scratch);
	if (ok)
	{
		row.ints = ints;
		row.floats = floats;
		row.blobs = blobs;
		row.nulls = nulls;
		for (uint32_t c = 0; c < t->schema.n_columns; c++)
		{
			if (values[c].isnull)
				nulls[row.n_nulls++] = c;
			else if (t->columns[c].kind == TCOPY__KIND__KIND_FLOAT)
				floats[row.n_floats++] = values[c].f;
			else if (t->columns[c].kind == TCOPY__KIND__KIND_BYTES)
			{
				blobs[row.n_blobs].data = (uint8_t *) values[c].p;
				blobs[row.n_blobs++].len = values[c].len;
			}
			else
				ints[row.n_ints++] = values[c].i;
		}
		key_out->len = value_out->len = 0;
		if (t->layout.nkey > 0)
		{
			REQUIRE_B(ts_key_encode(&t->layout, TABLE_ID, &row, key_out));
			memmove(key_out->data, key_out->data + 4, key_out->len - 4);
			key_out->len -= 4;
		}
		REQUIRE_B(ts_value_encode(&t->layout, &row, value_out));
	}
	tc_buf_free(&full);
	tc_arena_free(&scratch);
	return ok;
}

/* What check_row met: values of 128 bytes or more, keys after a NULL. */
static size_t long_values;
static size_t keys_after_null;

/* The client's record of r is the codec's, and the check accepts it. */
static void
check_row(const TestSchema *t, const TestRow *r, bool with_value, TcBuf *rec)
{
	TcBuf		want_key = {0};
	TcBuf		want_value = {0};
	const uint8_t *key,
			   *value;
	size_t		keylen,
				valuelen,
				n,
				n_pb;
	const uint8_t *end;
	uint8_t    *exact;

	n = tc_record_size(&t->record, &r->wire, with_value);
	REQUIRE(n > 0);
	CHECK(n <= tc_record_bound(&r->wire));
	/* the protobuf encoder's measure: the Row message, its tag and length */
	n_pb = tcopy__row__get_packed_size(&r->pb);
	CHECK(1 + tc_varint_size(n_pb) + n_pb <= tc_wire_row_bound(&r->wire));
	rec->len = 0;
	REQUIRE(tc_buf_reserve(rec, tc_record_bound(&r->wire)));
	end = tc_record_put(rec->data, &t->record, &r->wire, with_value);
	REQUIRE(end != NULL);
	rec->len = (size_t) (end - rec->data);
	CHECK_EQ_UINT(rec->len, n);
	/* into exactly its size (the writer's room near a frame's end) */
	exact = malloc(n);
	REQUIRE(exact != NULL);
	end = tc_record_put(exact, &t->record, &r->wire, with_value);
	CHECK(end == exact + n);
	CHECK_MEM(exact, n, rec->data, rec->len);
	free(exact);
	REQUIRE(split_record(rec->data, rec->len, &key, &keylen, &value, &valuelen));
	long_values += valuelen >= 128;
	for (uint32_t k = 0; k < t->layout.nkey; k++)
		if (r->wire.n_nulls > 0 && r->wire.nulls[0] < t->layout.key_columns[k])
		{
			keys_after_null++;
			break;
		}

	if (t->layout.nkey > 0)
	{
		REQUIRE(ts_key_encode(&t->layout, TABLE_ID, &r->pb, &want_key));
		CHECK_MEM(key, keylen, want_key.data + 4, want_key.len - 4);
	}
	else
		CHECK_EQ_UINT(keylen, 0);
	if (with_value)
	{
		REQUIRE(ts_value_encode(&t->layout, &r->pb, &want_value));
		CHECK_MEM(value, valuelen, want_value.data, want_value.len);
	}
	else
		CHECK_EQ_UINT(valuelen, 0);
	CHECK(ts_record_check(&t->layout, key, keylen, value, valuelen, with_value) == NULL);
	tc_buf_free(&want_key);
	tc_buf_free(&want_value);
}

/*
 * Mutate rec's key or value: whatever the check accepts decodes and encodes
 * again to the same bytes.  Returns whether the mutation was accepted.
 */
static bool
check_mutation(const TestSchema *t, const TcBuf *rec, TcBuf *key_out, TcBuf *value_out)
{
	const uint8_t *key,
			   *value;
	size_t		keylen,
				valuelen;
	static uint8_t k[1 << 17],
				v[1 << 17];
	uint8_t    *part;
	size_t	   *len;
	size_t		at;
	bool		accepted;

	REQUIRE_B(split_record(rec->data, rec->len, &key, &keylen, &value, &valuelen));
	REQUIRE_B(keylen < sizeof(k) - 1 && valuelen < sizeof(v) - 1);
	memcpy(k, key, keylen);
	memcpy(v, value, valuelen);
	part = tc_test_rng() % 2 ? k : v;
	len = part == k ? &keylen : &valuelen;
	at = *len > 0 ? (size_t) (tc_test_rng() % *len) : 0;
	switch (tc_test_rng() % 3)
	{
		case 0:
			if (*len > 0)
				part[at] = tc_test_rng() % 4 == 0 ? part[at] ^ 0x80 : (uint8_t) tc_test_rng();
			break;
		case 1:
			if (*len > 0)
			{
				memmove(part + at, part + at + 1, *len - at - 1);
				(*len)--;
			}
			break;
		default:
			memmove(part + at + 1, part + at, *len - at);
			part[at] = (uint8_t) (tc_test_rng() % 3 == 0 ? 0 : tc_test_rng());
			(*len)++;
			break;
	}
	accepted = ts_record_check(&t->layout, k, keylen, v, valuelen, true) == NULL;
	if (accepted)
	{
		CHECK(codec_round_trip(t, k, keylen, v, valuelen, key_out, value_out));
		CHECK_MEM(key_out->data, key_out->len, k, keylen);
		CHECK_MEM(value_out->data, value_out->len, v, valuelen);
	}
	return accepted;
}

/*
 * Random rows of profile's size: each record the codec's, the check's
 * acceptances canonical.
 */
static void
random_rounds(const Profile *profile, int rounds, int rows)
{
	TestSchema *t = calloc(1, sizeof(TestSchema));
	TestRow    *r = calloc(1, sizeof(TestRow));
	TcBuf		rec = {0};
	TcBuf		key_out = {0};
	TcBuf		value_out = {0};
	size_t		mutations = 0,
				accepted = 0;

	REQUIRE(t != NULL && r != NULL);
	for (int round = 0; round < rounds; round++)
	{
		random_schema(t, profile);
		for (int i = 0; i < rows; i++)
		{
			random_row(t, r, profile);
			check_row(t, r, false, &rec);
			check_row(t, r, true, &rec);
			for (int m = 0; m < 10; m++)
			{
				mutations++;
				accepted += check_mutation(t, &rec, &key_out, &value_out);
			}
		}
		ts_layout_free(&t->layout);
	}
	/* both outcomes were tried: some mutations are values still canonical */
	CHECK(accepted > 0 && accepted < mutations);
	tc_buf_free(&rec);
	tc_buf_free(&key_out);
	tc_buf_free(&value_out);
	free(t);
	free(r);
}

static void
test_random(void)
{
	random_rounds(&small_profile, 300, 30);
}

/*
 * Wide rows: values of 128 bytes and more (the length's varint widened
 * after the value is written), keys of up to 32 columns, often after a
 * NULL (the key's slow walk), key strings all zero bytes (escaped to
 * twice their size) and long char(n) blanks: the record fits its bound
 * and its exact size.
 */
static void
test_wide(void)
{
	long_values = keys_after_null = 0;
	random_rounds(&wide_profile, 150, 10);
	CHECK(long_values > 100 && keys_after_null > 100);
}

/* What the check refuses, one case each, on kv (id int key, b bool, n int, s bytes). */
static void
test_refused(void)
{
	TestSchema *t = calloc(1, sizeof(TestSchema));
	TsError		err;
	static const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BOOL,
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES};
	const uint8_t key[8] = {0x80, 0, 0, 0, 0, 0, 0, 5};
	const uint8_t good[] = {1, 1, 1, 0x04, 1, 2, 'h', 'i'};
	static const struct
	{
		const char *value;
		size_t		len;
		const char *why;
	}			cases[] = {
		{"\x01\x01\x01\x04\x01\x02hi\x00", 9, "longer"},
		{"\x01\x01\x01\x04\x01\x03hi", 8, "string value"},
		{"\x01\x01\x01\x04", 4, "without all its columns"},
		{"\x02\x01\x01\x04\x01\x02hi", 8, "tag"},
		{"\x01\x02\x01\x04\x01\x02hi", 8, "bool"},
		{"\x01\x01\x01\x84\x00\x01\x02hi", 9, "shortest varint"},
	};

	REQUIRE(t != NULL);
	tcopy__schema__init(&t->schema);
	for (int c = 0; c < 4; c++)
	{
		tcopy__column__init(&t->columns[c]);
		t->columns[c].name = "c";
		t->columns[c].kind = kinds[c];
		t->pointers[c] = &t->columns[c];
	}
	t->key[0] = 0;
	t->schema.columns = t->pointers;
	t->schema.n_columns = 4;
	t->schema.key = t->key;
	t->schema.n_key = 1;
	REQUIRE(ts_layout_init(&t->layout, &t->schema, &err) == 0);

	CHECK(ts_record_check(&t->layout, key, 8, good, sizeof(good), true) == NULL);
	CHECK(ts_record_check(&t->layout, key, 8, NULL, 0, false) == NULL);
	CHECK(ts_record_check(&t->layout, key, 8, good, sizeof(good), false) != NULL);
	CHECK(ts_record_check(&t->layout, key, 7, good, sizeof(good), true) != NULL);
	CHECK(ts_record_check(&t->layout, key, 0, good, sizeof(good), true) != NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const char *why = ts_record_check(&t->layout, key, 8, (const uint8_t *) cases[i].value,
										  cases[i].len, true);

		CHECK(why != NULL && strstr(why, cases[i].why) != NULL);
	}
	ts_layout_free(&t->layout);
	free(t);
}

/* A float key's NaN: only the canonical one; a bytes key: only as escaped. */
static void
test_refused_keys(void)
{
	TestSchema *t = calloc(1, sizeof(TestSchema));
	TsError		err;
	uint8_t		key[8];
	uint64_t	canonical = tc_record_float_key_bits(NAN);

	REQUIRE(t != NULL);
	tcopy__schema__init(&t->schema);
	tcopy__column__init(&t->columns[0]);
	t->columns[0].name = "f";
	t->columns[0].kind = TCOPY__KIND__KIND_FLOAT;
	t->pointers[0] = &t->columns[0];
	t->schema.columns = t->pointers;
	t->schema.n_columns = 1;
	t->schema.key = t->key;
	t->schema.n_key = 1;
	REQUIRE(ts_layout_init(&t->layout, &t->schema, &err) == 0);
	tc_record_put_be64(key, canonical);
	CHECK(ts_record_check(&t->layout, key, 8, NULL, 0, true) == NULL);
	tc_record_put_be64(key, canonical + 1);
	CHECK(ts_record_check(&t->layout, key, 8, NULL, 0, true) != NULL);
	ts_layout_free(&t->layout);

	t->columns[0].kind = TCOPY__KIND__KIND_BYTES;
	REQUIRE(ts_layout_init(&t->layout, &t->schema, &err) == 0);
	CHECK(ts_record_check(&t->layout, (const uint8_t *) "a\0\xff" "b\0\x01", 6, NULL, 0, true) == NULL);
	CHECK(ts_record_check(&t->layout, (const uint8_t *) "a\0\x02" "b\0\x01", 6, NULL, 0, true) != NULL);
	CHECK(ts_record_check(&t->layout, (const uint8_t *) "ab\0", 3, NULL, 0, true) != NULL);
	CHECK(ts_record_check(&t->layout, (const uint8_t *) "ab\0\x01x", 5, NULL, 0, true) != NULL);
	/* an empty key as an empty blob comes: NULL (UBSan: no memchr(NULL), no NULL + 0) */
	CHECK(ts_record_check(&t->layout, NULL, 0, NULL, 0, true) != NULL);
	ts_layout_free(&t->layout);
	free(t);
}

int
main(void)
{
	TC_RUN(test_random);
	TC_RUN(test_wide);
	TC_RUN(test_refused);
	TC_RUN(test_refused_keys);
	return tc_test_summary();
}
