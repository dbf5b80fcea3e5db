/*
 * test_frame.c
 *		Unit tests of tc_frame: frame headers, size and type checks, whole
 *		frames built by tc_frame_append, and the frame reader both ends
 *		use (frames split across reads, many frames to a read, a header
 *		checked before its payload arrives, EOF between and inside frames).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_auth.h"
#include "tc_frame.h"
#include "tc_frame_reader.h"
#include "tc_test.h"
#include "tcopy.pb-c.h"

/* put then get gives back type and length, and the bytes are as specified */
static void
test_header_round_trip(void)
{
	static const uint32_t lengths[] = {0, 1, 127, 128, 255, 256, 65535, 65536,
	0x00FFFFFF, 0x01000000, TC_FRAME_MAX_DEFAULT - 1, TC_FRAME_MAX_DEFAULT};
	uint8_t		header[TC_FRAME_HEADER_SIZE];
	int			mismatches = 0;

	CHECK_EQ_INT(TC_FRAME_HEADER_SIZE, 5);

	for (int type = TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO;
		 type <= TCOPY__FRAME_TYPE__FRAME_ERROR; type++)
		for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
		{
			Tcopy__FrameType got_type = TCOPY__FRAME_TYPE__FRAME_NONE;
			uint32_t	got_len = 12345;
			const char *why = NULL;

			tc_frame_put_header(header, (Tcopy__FrameType) type, lengths[i]);
			if (!tc_frame_get_header(header, TC_FRAME_MAX_DEFAULT, &got_type,
									 &got_len, &why) ||
				got_type != (Tcopy__FrameType) type || got_len != lengths[i])
				mismatches++;
		}
	CHECK_EQ_INT(mismatches, 0);

	/* wire layout: big-endian length, then the type byte */
	{
		static const uint8_t want[] = {0x01, 0x02, 0x03, 0x04, 0x02};

		tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_HELLO, 0x01020304);
		CHECK_MEM(header, 5, want, 5);
	}
	{
		static const uint8_t want[] = {0x00, 0x00, 0x00, 0x00, 0x14};

		tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_ERROR, 0);
		CHECK_MEM(header, 5, want, 5);
	}
	{
		static const uint8_t want[] = {0xFF, 0xFF, 0xFF, 0xF0, 0x08};

		tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 0xFFFFFFF0u);
		CHECK_MEM(header, 5, want, 5);
	}
}

/* a length over the receiver's limit is refused, the limit itself is not */
static void
test_length_limit(void)
{
	uint8_t		header[TC_FRAME_HEADER_SIZE];
	Tcopy__FrameType type;
	uint32_t	len;
	const char *why = NULL;

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 1000);
	CHECK(tc_frame_get_header(header, 1000, &type, &len, &why));
	CHECK_EQ_UINT(len, 1000);
	why = NULL;
	CHECK(!tc_frame_get_header(header, 999, &type, &len, &why));
	CHECK(why != NULL && why[0] != '\0');

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 0xFFFFFFF0u);
	why = NULL;
	CHECK(!tc_frame_get_header(header, TC_FRAME_MAX_DEFAULT, &type, &len, &why));
	CHECK(why != NULL && why[0] != '\0');

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 0xFFFFFFFFu);
	CHECK(!tc_frame_get_header(header, UINT32_MAX - 1, &type, &len, &why));

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, TC_FRAME_MAX_DEFAULT + 1);
	CHECK(!tc_frame_get_header(header, TC_FRAME_MAX_DEFAULT, &type, &len, &why));

	/* a limit of 0 admits only empty payloads */
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, 0);
	CHECK(tc_frame_get_header(header, 0, &type, &len, &why));
	CHECK_EQ_UINT(len, 0);
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, 1);
	CHECK(!tc_frame_get_header(header, 0, &type, &len, &why));
}

/* type bytes outside FrameType are refused */
static void
test_unknown_type(void)
{
	static const int bad_types[] = {0, TC_FRAME_TYPE_LAST + 1, TC_FRAME_TYPE_LAST + 2, 99, 127, 128, 200, 255};
	uint8_t		header[TC_FRAME_HEADER_SIZE] = {0, 0, 0, 4, 0};

	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++)
	{
		Tcopy__FrameType type;
		uint32_t	len;
		const char *why = NULL;

		header[4] = (uint8_t) bad_types[i];
		CHECK(!tc_frame_get_header(header, TC_FRAME_MAX_DEFAULT, &type, &len, &why));
		CHECK(why != NULL && why[0] != '\0');
	}

	/* names: known types have theirs, unknown ones still get a string */
	CHECK(strstr(tc_frame_type_name(TCOPY__FRAME_TYPE__FRAME_HELLO), "HELLO") != NULL);
	CHECK(strstr(tc_frame_type_name(TCOPY__FRAME_TYPE__FRAME_ERROR), "ERROR") != NULL);
	CHECK(strstr(tc_frame_type_name(TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH), "SCAN_BATCH") != NULL);
	CHECK(tc_frame_type_name((Tcopy__FrameType) 99) != NULL);
	CHECK(tc_frame_type_name((Tcopy__FrameType) 0) != NULL);
}

/* Read one frame at *pos of buf; NULL-safe checks by the caller. */
static bool
next_frame(const TcBuf *buf, size_t *pos, Tcopy__FrameType *type,
		   const uint8_t **payload, uint32_t *len)
{
	const char *why;

	if (buf->len - *pos < TC_FRAME_HEADER_SIZE)
		return false;
	if (!tc_frame_get_header(buf->data + *pos, TC_FRAME_MAX_DEFAULT, type, len, &why))
		return false;
	if (buf->len - *pos - TC_FRAME_HEADER_SIZE < *len)
		return false;
	*payload = buf->data + *pos + TC_FRAME_HEADER_SIZE;
	*pos += TC_FRAME_HEADER_SIZE + *len;
	return true;
}

/* frames appended one after another parse back to the messages */
static void
test_frame_append(void)
{
	TcBuf		buf = {0};
	Tcopy__Hello hello = TCOPY__HELLO__INIT;
	Tcopy__Error error = TCOPY__ERROR__INIT;
	Tcopy__StatsRequest stats = TCOPY__STATS_REQUEST__INIT;
	uint8_t		auth[TC_AUTH_SIZE];
	size_t		pos = 0;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;

	for (int i = 0; i < TC_AUTH_SIZE; i++)
		auth[i] = (uint8_t) (i * 7);
	hello.version = TC_PROTOCOL_VERSION;
	hello.client = "test_frame";
	hello.auth.data = auth;
	hello.auth.len = sizeof(auth);
	error.code = TCOPY__ERROR_CODE__ERROR_BAD_ROW;
	error.message = "row 3 has 2 ints, expected 3";

	/* something already in the buffer stays */
	REQUIRE(tc_buf_reserve(&buf, 3));
	memcpy(buf.data, "abc", 3);
	buf.len = 3;
	pos = 3;

	REQUIRE(tc_frame_append(&buf, TCOPY__FRAME_TYPE__FRAME_HELLO, &hello.base));
	REQUIRE(tc_frame_append(&buf, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, &stats.base));
	REQUIRE(tc_frame_append(&buf, TCOPY__FRAME_TYPE__FRAME_ERROR, &error.base));
	CHECK(buf.len <= buf.cap);
	CHECK_MEM(buf.data, 3, "abc", 3);
	CHECK_EQ_UINT(buf.len, 3 + 3 * TC_FRAME_HEADER_SIZE +
				  tcopy__hello__get_packed_size(&hello) +
				  tcopy__error__get_packed_size(&error));

	REQUIRE(next_frame(&buf, &pos, &type, &payload, &len));
	CHECK_EQ_INT(type, TCOPY__FRAME_TYPE__FRAME_HELLO);
	{
		Tcopy__Hello *got = tcopy__hello__unpack(NULL, len, payload);

		REQUIRE(got != NULL);
		CHECK_EQ_UINT(got->version, TC_PROTOCOL_VERSION);
		CHECK_EQ_STR(got->client, "test_frame");
		CHECK_MEM(got->auth.data, got->auth.len, auth, sizeof(auth));
		tcopy__hello__free_unpacked(got, NULL);
	}

	REQUIRE(next_frame(&buf, &pos, &type, &payload, &len));
	CHECK_EQ_INT(type, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST);
	CHECK_EQ_UINT(len, 0);

	REQUIRE(next_frame(&buf, &pos, &type, &payload, &len));
	CHECK_EQ_INT(type, TCOPY__FRAME_TYPE__FRAME_ERROR);
	{
		Tcopy__Error *got = tcopy__error__unpack(NULL, len, payload);

		REQUIRE(got != NULL);
		CHECK_EQ_INT(got->code, TCOPY__ERROR_CODE__ERROR_BAD_ROW);
		CHECK_EQ_STR(got->message, error.message);
		tcopy__error__free_unpacked(got, NULL);
	}
	CHECK_EQ_UINT(pos, buf.len);

	/* a cleared buffer keeps its capacity and is reused without growing */
	{
		size_t		cap = buf.cap;

		buf.len = 0;
		REQUIRE(tc_frame_append(&buf, TCOPY__FRAME_TYPE__FRAME_HELLO, &hello.base));
		CHECK_EQ_UINT(buf.cap, cap);
	}
	tc_buf_free(&buf);
	CHECK(buf.data == NULL);
	CHECK_EQ_UINT(buf.len, 0);
	CHECK_EQ_UINT(buf.cap, 0);
}

/*
 * tc_frame_around_packed: the frame built around a ScanBatch's packed rows
 * in place is byte for byte tc_frame_append's, whatever the lengths (a
 * varint of 1 to 3 bytes) and the other fields; NULL for a batch that is
 * not of packed rows alone.  The memory around the rows is exactly the
 * room the header promises (ASan sees a write past it).
 */
static void
test_frame_around_packed(void)
{
	static const size_t lens[] = {1, 5, 127, 128, 300, 16383, 16384, 70000};
	static const uint32_t counts[] = {0, 1, 127, 128, 100000};
	static const uint64_t filtered[] = {0, 3, UINT64_C(1) << 40};
	int			differ = 0;
	int			built = 0;

	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
			for (size_t f = 0; f < sizeof(filtered) / sizeof(filtered[0]); f++)
				for (int done = 0; done < 2; done++)
				{
					size_t		total = TC_FRAME_PACKED_HEADROOM + lens[l] + TC_FRAME_PACKED_TAILROOM;
					uint8_t    *space = malloc(total);
					Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
					TcBuf		want = {0};
					uint8_t    *frame;
					size_t		len = 0;

					REQUIRE(space != NULL);
					memset(space, 0xAA, total);
					for (size_t j = 0; j < lens[l]; j++)
						space[TC_FRAME_PACKED_HEADROOM + j] = (uint8_t) (j * 31 + l);
					batch.packed.data = space + TC_FRAME_PACKED_HEADROOM;
					batch.packed.len = lens[l];
					batch.n_packed = counts[c];
					batch.filtered = filtered[f];
					batch.done = done;
					REQUIRE(tc_frame_append(&want, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH,
											&batch.base));
					frame = tc_frame_around_packed(&batch, &len);
					if (frame == NULL || frame < space || frame + len > space + total ||
						len != want.len || memcmp(frame, want.data, len) != 0)
						differ++;
					else
						built++;
					tc_buf_free(&want);
					free(space);
				}
	CHECK_EQ_INT(differ, 0);
	CHECK_EQ_INT(built, 8 * 5 * 3 * 2);

	/* not packed rows alone: NULL */
	{
		uint8_t		space[TC_FRAME_PACKED_HEADROOM + 4 + TC_FRAME_PACKED_TAILROOM];
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
		Tcopy__Row	row = TCOPY__ROW__INIT;
		Tcopy__Row *rows[1] = {&row};
		size_t		len;

		batch.packed.data = space + TC_FRAME_PACKED_HEADROOM;
		batch.packed.len = 0;
		batch.done = true;
		CHECK(tc_frame_around_packed(&batch, &len) == NULL);
		batch.packed.len = 4;
		batch.n_rows = 1;
		batch.rows = rows;
		CHECK(tc_frame_around_packed(&batch, &len) == NULL);
	}
}

/* a frame larger than the buffer's first capacity: the buffer grows */
static void
test_frame_append_large(void)
{
	TcBuf		buf = {0};
	Tcopy__Row	row = TCOPY__ROW__INIT;
	ProtobufCBinaryData blob;
	size_t		big = 5 * 1024 * 1024 + 3;
	uint8_t    *bytes = malloc(big);
	size_t		pos = 0;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;

	REQUIRE(bytes != NULL);
	for (size_t i = 0; i < big; i++)
		bytes[i] = (uint8_t) (i * 31 + 7);
	blob.data = bytes;
	blob.len = big;
	row.n_blobs = 1;
	row.blobs = &blob;

	if (tc_frame_append(&buf, TCOPY__FRAME_TYPE__FRAME_WRITE, &row.base) &&
		next_frame(&buf, &pos, &type, &payload, &len))
	{
		Tcopy__Row *got = tcopy__row__unpack(NULL, len, payload);

		CHECK_EQ_INT(type, TCOPY__FRAME_TYPE__FRAME_WRITE);
		CHECK(got != NULL && got->n_blobs == 1);
		if (got != NULL && got->n_blobs == 1)
			CHECK_MEM(got->blobs[0].data, got->blobs[0].len, bytes, big);
		if (got)
			tcopy__row__free_unpacked(got, NULL);
	}
	else
		CHECK(!"large frame appended and read back");
	tc_buf_free(&buf);
	free(bytes);
}

/* Read frames from fd until one is ready or the reader wants more and fd is dry. */
static TcFrameNext
reader_next_from(TcFrameReader *reader, int fd, uint32_t max, Tcopy__FrameType *type,
				 const uint8_t **payload, uint32_t *len, ssize_t *last_read)
{
	const char *why;
	TcFrameNext next;

	*last_read = 1;
	while ((next = tc_frame_reader_next(reader, max, type, payload, len, &why)) ==
		   TC_FRAME_NEXT_MORE)
	{
		*last_read = tc_frame_reader_read(reader, fd);
		if (*last_read <= 0)
			break;
	}
	return next;
}

static void
test_reader(void)
{
	int			fds[2];
	TcFrameReader reader;
	uint8_t		header[TC_FRAME_HEADER_SIZE];
	uint8_t	   *big = calloc(1, 200000);
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;
	ssize_t		n;

	REQUIRE(big != NULL);
	REQUIRE(pipe(fds) == 0);
	REQUIRE(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
	REQUIRE(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
	tc_frame_reader_init(&reader);

	/* nothing yet: MORE, and the read says EAGAIN */
	CHECK_EQ_INT(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n),
				 TC_FRAME_NEXT_MORE);
	CHECK(n < 0 && errno == EAGAIN);

	/* a header alone, then its payload in two pieces */
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_ACK, 6);
	REQUIRE(write(fds[1], header, 5) == 5);
	CHECK_EQ_INT(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n),
				 TC_FRAME_NEXT_MORE);
	CHECK_EQ_UINT(tc_frame_reader_pending(&reader), 11);
	CHECK_EQ_UINT(tc_frame_reader_buffered(&reader), 5);
	REQUIRE(write(fds[1], "abc", 3) == 3);
	CHECK_EQ_INT(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n),
				 TC_FRAME_NEXT_MORE);
	REQUIRE(write(fds[1], "def", 3) == 3);
	REQUIRE(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n) ==
			TC_FRAME_NEXT_READY);
	CHECK_EQ_INT(type, TCOPY__FRAME_TYPE__FRAME_ACK);
	CHECK_EQ_UINT(len, 6);
	CHECK(memcmp(payload, "abcdef", 6) == 0);
	CHECK_EQ_UINT(tc_frame_reader_buffered(&reader), 0);

	/* three frames in one write come out of one read */
	for (int i = 0; i < 3; i++)
	{
		tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 1);
		REQUIRE(write(fds[1], header, 5) == 5);
		REQUIRE(write(fds[1], &"xyz"[i], 1) == 1);
	}
	for (int i = 0; i < 3; i++)
	{
		REQUIRE(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n) ==
				TC_FRAME_NEXT_READY);
		CHECK_EQ_UINT(len, 1);
		CHECK(payload[0] == (uint8_t) "xyz"[i]);
		if (i > 0)
			CHECK(n == 1);		/* no read since the first: still the last one's */
	}

	/* a payload larger than the read-ahead, then a frame over the limit */
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 200000);
	REQUIRE(write(fds[1], header, 5) == 5);
	{
		size_t		written = 0;

		while (written < 200000)
		{
			ssize_t		w = write(fds[1], big + written, 200000 - written);

			if (w > 0)
				written += (size_t) w;
			else if (reader_next_from(&reader, fds[0], 1u << 20, &type, &payload, &len, &n) !=
					 TC_FRAME_NEXT_MORE)
				break;
		}
	}
	REQUIRE(reader_next_from(&reader, fds[0], 1u << 20, &type, &payload, &len, &n) ==
			TC_FRAME_NEXT_READY);
	CHECK_EQ_UINT(len, 200000);

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, 1001);
	REQUIRE(write(fds[1], header, 5) == 5);
	CHECK_EQ_INT(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n),
				 TC_FRAME_NEXT_BAD);
	CHECK(memcmp(tc_frame_reader_header(&reader), header, 5) == 0);
	tc_frame_reader_free(&reader);

	/* EOF in the middle of a frame leaves its bytes buffered */
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_ACK, 4);
	REQUIRE(write(fds[1], header, 5) == 5);
	close(fds[1]);
	CHECK_EQ_INT(reader_next_from(&reader, fds[0], 1000, &type, &payload, &len, &n),
				 TC_FRAME_NEXT_MORE);
	CHECK(n == 0);
	CHECK_EQ_UINT(tc_frame_reader_buffered(&reader), 5);

	tc_frame_reader_free(&reader);
	close(fds[0]);
	free(big);
}

int
main(void)
{
	TC_RUN(test_header_round_trip);
	TC_RUN(test_length_limit);
	TC_RUN(test_unknown_type);
	TC_RUN(test_frame_append);
	TC_RUN(test_frame_append_large);
	TC_RUN(test_frame_around_packed);
	TC_RUN(test_reader);
	return tc_test_summary();
}
