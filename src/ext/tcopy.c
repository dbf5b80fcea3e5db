/*
 * tcopy.c
 *		Module entry point: the GUCs, then each subsystem's initialisation.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"
#include "tcopy/copy.h"
#include "tcopy/commands.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* the GUC variables are defined in the modules that read them */
static char *tcopy_test_pause_at = NULL;

static const struct config_enum_entry tcopy_encoder_options[] = {
	{"wire", TCOPY_ENCODER_WIRE, false},
	{"protobuf", TCOPY_ENCODER_PROTOBUF, false},
	{NULL, 0, false}
};

static const struct config_enum_entry tcopy_simd_options[] = {
	{"auto", TCOPY_SIMD_AUTO, false},
	{"avx2", TCOPY_SIMD_AVX2, false},
	{"sse2", TCOPY_SIMD_SSE2, false},
	{"scalar", TCOPY_SIMD_SCALAR, false},
	{NULL, 0, false}
};

static const struct config_enum_entry tcopy_alloc_mode_options[] = {
	{"arena", TCOPY_ALLOC_ARENA, false},
	{"malloc", TCOPY_ALLOC_MALLOC, false},
	{NULL, 0, false}
};

/* tcopy.test_pause_at: '', or one of the pause points. */
static bool
tcopy_check_test_pause_at(char **newval, void **extra, GucSource source)
{
	if (strcmp(*newval, "") == 0 || strcmp(*newval, "after-prepare") == 0 ||
		strcmp(*newval, "before-publish") == 0)
		return true;
	GUC_check_errdetail("Valid values are \"\", \"after-prepare\" and \"before-publish\".");
	return false;
}

static void
tcopy_assign_test_pause_at(const char *newval, void *extra)
{
	if (strcmp(newval, "after-prepare") == 0)
		tcopy_test_pause_point = TCOPY_PAUSE_AFTER_PREPARE;
	else if (strcmp(newval, "before-publish") == 0)
		tcopy_test_pause_point = TCOPY_PAUSE_BEFORE_PUBLISH;
	else
		tcopy_test_pause_point = TCOPY_PAUSE_NONE;
}

/*
 * Define the tcopy.* settings.  The ones that tune the client side of a
 * load may be changed by any user for a session: they guard nothing.
 */
static void
tcopy_define_gucs(void)
{
	DefineCustomBoolVariable("tcopy.copy_hook",
							 "Loads COPY FROM into tcopy foreign tables through tcopy's fast path.",
							 "When off, such a COPY is left to PostgreSQL, which writes "
							 "through the foreign-data wrapper's insert path.",
							 &tcopy_copy_hook_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.pushdown_aggregates",
							 "Lets the tserver compute the aggregates and groups of a query on a tcopy table.",
							 "When off, every row is read into PostgreSQL, which aggregates "
							 "(docs/scans.md#aggregates).",
							 &tcopy_pushdown_aggregates,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.raw_fields",
							 "Converts COPY's text fields of common types straight to wire values.",
							 "When off, every field goes through its type's input function "
							 "into a Datum first, as PostgreSQL's COPY does; the result is "
							 "the same.",
							 &tcopy_raw_fields,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.fast_reader",
							 "Reads COPY's text and csv rows with tcopy's vectorized reader.",
							 "When off, PostgreSQL's own COPY reader splits every row, as "
							 "it does for what tcopy's reader declines; the rows and "
							 "errors are the same.",
							 &tcopy_fast_reader,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("tcopy.simd",
							 "Sets the vector instructions of tcopy's COPY reader.",
							 "\"auto\" takes the best the CPU has (AVX2, else SSE2 on "
							 "x86-64, else scalar code); the others cap it there, "
							 "for tests and measurements.  The rows are the same.",
							 &tcopy_simd,
							 TCOPY_SIMD_AUTO,
							 tcopy_simd_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("tcopy.encoder",
							 "Sets how write batches are encoded.",
							 "\"wire\" writes rows in the tserver's stored form straight "
							 "into the output buffer; \"protobuf\" builds protobuf-c Row "
							 "messages and packs them.",
							 &tcopy_encoder,
							 TCOPY_ENCODER_WIRE,
							 tcopy_encoder_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("tcopy.alloc_mode",
							 "Sets how write batches allocate their protobuf messages (encoder protobuf).",
							 "\"arena\" allocates them from one arena per batch, reset once "
							 "the batch is sent; \"malloc\" allocates and frees each "
							 "object, for comparison.",
							 &tcopy_alloc_mode,
							 TCOPY_ALLOC_ARENA,
							 tcopy_alloc_mode_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.batch_rows",
							"Sets the number of rows after which a write batch is sent.",
							"The foreign table's or server's option batch_rows overrides it.",
							&tcopy_batch_rows,
							TC_BATCH_ROWS_DEFAULT,
							1, TC_BATCH_ROWS_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.batch_size",
							"Sets the size of row data after which a write batch is sent.",
							"The foreign table's or server's option batch_size overrides it.",
							&tcopy_batch_kb,
							TC_BATCH_KB_DEFAULT,
							1, TC_BATCH_KB_MAX,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.copy_batch_memory",
							"Sets the row data a COPY into a partitioned table holds in its partitions' batches.",
							"Each partition the COPY writes to gets an equal share, "
							"no less than 64kB, no more than its batch size.",
							&tcopy_copy_batch_memory_kb,
							64 * 1024,
							1024, MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.copy_workers",
							"Sets the parallel workers that parse a COPY FROM into a tcopy table.",
							"0 parses in the backend alone.  The COPY option workers overrides it.",
							&tcopy_copy_workers,
							2,
							0, 64,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.copy_parallel_threshold",
							"Sets the input below which a COPY is parsed by the backend alone.",
							"The backend reads this much of the input before it starts workers.",
							&tcopy_copy_parallel_threshold_kb,
							4 * 1024,
							0, 256 * 1024,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.copy_chunk_bytes",
							"Sets the input a parallel COPY hands to a worker at a time.",
							"A chunk ends at the first row end past this size.",
							&tcopy_copy_chunk_bytes,
							1024 * 1024,
							1, 64 * 1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.copy_streams",
							 "Lets a parallel COPY's workers send their rows to the tserver themselves.",
							 "Each worker joins the write session with a connection of its own; "
							 "off: the leader relays every batch (docs/parallel.md).",
							 &tcopy_copy_streams,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.copy_map_files",
							 "Lets a parallel COPY's workers read a file's chunks themselves.",
							 "The leader maps the file to find where rows end, and each worker "
							 "reads its chunks from the file; off: the leader reads the file "
							 "into the input ring (docs/parallel.md).",
							 &tcopy_copy_map_files,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.max_frame_mb",
							"Sets the largest frame exchanged with a tserver, in megabytes.",
							"A row must fit in one frame, and so must a row read back.  "
							"Raise it with the tserver's --max-frame-mb, to the same value.",
							&tcopy_max_frame_mb,
							TC_FRAME_MAX_DEFAULT / (1024 * 1024),
							1, 4095,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.batches_in_flight",
							"Sets the number of write batches in flight to a tserver.",
							"A batch beyond the window waits for the oldest one's "
							"acknowledgement.",
							&tcopy_window,
							TC_CLIENT_WINDOW_DEFAULT,
							1, TC_CLIENT_WINDOW_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.connect_timeout",
							"Sets the longest time connecting to a tserver may take.",
							"Connecting and the handshake; 0 waits as long as it takes "
							"(a cancel still ends it).",
							&tcopy_connect_timeout,
							10,
							0, INT_MAX / 1000,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("tcopy.recovery_interval",
							"Sets how often the background worker resolves the prepared sessions nobody finished.",
							"It also runs at startup; 0 turns it off (tcopy.recover_prepared_sessions() "
							"still works).  The worker runs when tcopy is in shared_preload_libraries.",
							&tcopy_recovery_interval,
							10000,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("tcopy.test_pause_at",
							   "Stops commits at a point of the two-phase commit, for tests.",
							   "\"after-prepare\" stops at pre-commit once the sessions are "
							   "prepared and recorded; \"before-publish\" once the commit "
							   "record is written.  The backend logs \"tcopy: paused at\" "
							   "the point and sleeps until it is killed.",
							   &tcopy_test_pause_at,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   tcopy_check_test_pause_at, tcopy_assign_test_pause_at, NULL);

	DefineCustomIntVariable("tcopy.test_pause_ms",
							"Sets how long a pause of tcopy.test_pause_at lasts, for tests.",
							"0 pauses until the backend is killed; otherwise the commit goes on "
							"after that long.",
							&tcopy_test_pause_ms,
							0,
							0, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("tcopy.test_legacy_forms",
							 "Writes records, reg* values and arrays of enums as tcopy 1.2 did, for tests.",
							 "Their text output under the session's settings, which tcopy "
							 "still reads: the tests of reading tables 1.2 wrote use it.",
							 &tcopy_test_legacy_forms,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("tcopy");
}

void
_PG_init(void)
{
	tcopy_define_gucs();
	tcopy_set_fdw_handler(tcopy_fdw_handler);
	TcopyExtensionInit();
	TcopyCodecCacheInit();
	TcopyXactInit();
	TcopyTruncatedInit();
	TcopyHookInit();
	TcopyRecoveryWorkerInit();
	TcopySsiInit();
	TcopyScanInit();
	TcopyUpsertInit();
}
