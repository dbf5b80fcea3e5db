/*
 * tcopy.c
 *		Module entry point: the GUCs, then each subsystem's initialisation.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "tcopy.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* GUC variables, read by the subsystems through tcopy.h */
bool		tcopy_copy_hook_enabled = true;
int			tcopy_encoder = TCOPY_ENCODER_WIRE;
int			tcopy_alloc_mode = TCOPY_ALLOC_ARENA;
bool		tcopy_raw_fields = true;
int			tcopy_batch_rows = TC_BATCH_ROWS_DEFAULT;
int			tcopy_batch_kb = TC_BATCH_KB_DEFAULT;
int			tcopy_window = 4;

static const struct config_enum_entry tcopy_encoder_options[] = {
	{"wire", TCOPY_ENCODER_WIRE, false},
	{"protobuf", TCOPY_ENCODER_PROTOBUF, false},
	{NULL, 0, false}
};

static const struct config_enum_entry tcopy_alloc_mode_options[] = {
	{"arena", TCOPY_ALLOC_ARENA, false},
	{"malloc", TCOPY_ALLOC_MALLOC, false},
	{NULL, 0, false}
};

/*
 * Define the tcopy.* settings.  All of them may be changed by any user for
 * a session: they tune the client side of a load and guard nothing.
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

	DefineCustomEnumVariable("tcopy.encoder",
							 "Sets how write batches are encoded.",
							 "\"wire\" writes protobuf's wire format straight into the "
							 "output buffer; \"protobuf\" builds protobuf-c messages and "
							 "packs them (the reference, same bytes).",
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

	MarkGUCPrefixReserved("tcopy");
}

void
_PG_init(void)
{
	tcopy_define_gucs();
	TcopyXactInit();
	TcopyHookInit();
}
