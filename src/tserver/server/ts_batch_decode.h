/*
 * ts_batch_decode.h
 *		A decoder of the WRITE frame's payload (Tcopy__WriteBatch) written
 *		for that one message, in place of protobuf-c's generic unpack.
 *
 * WRITE frames are nearly all the tserver decodes during a load, and
 * protobuf-c's descriptor-driven unpack spends a message allocation, a
 * scan record and several arrays on every row.  ts_batch_decode fills the
 * same structs (so that ts_session_write and the codec take them as they
 * are) from a handful of allocations per frame: the rows' arrays are
 * slices of six arrays sized by a first, counting pass over the bytes, and
 * the blobs point into the payload itself (zero copy).
 *
 * It accepts exactly what tcopy__write_batch__unpack of the protobuf-c
 * this is built against (1.4) accepts, and decodes it to the same values:
 * test/unit/test_batch_decode.c and the differential fuzzer
 * test/fuzz/fuzz_batch_decode.c hold it to that.
 */
#ifndef TS_BATCH_DECODE_H
#define TS_BATCH_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "tcopy.pb-c.h"

typedef enum TsBatchDecodeResult
{
	TS_BATCH_DECODE_OK = 0,
	TS_BATCH_DECODE_MALFORMED,	/* protobuf-c would return NULL as well */
	TS_BATCH_DECODE_NO_MEMORY	/* the allocator refused */
} TsBatchDecodeResult;

/*
 * Decode the WriteBatch in data[len] into *batch.  Its rows, the Row
 * structs and their ints, floats, blobs and nulls arrays come from
 * allocator (six requests at most, together at most 48 bytes per byte of
 * data, never freed here: an arena reset after the frame is meant); the blobs'
 * data point into data, which must outlive the batch.  Unknown fields are
 * skipped, not kept.  On failure *batch is left initialised and empty.
 */
TsBatchDecodeResult ts_batch_decode(const uint8_t *data, size_t len,
									ProtobufCAllocator *allocator,
									Tcopy__WriteBatch *batch);

#endif							/* TS_BATCH_DECODE_H */
