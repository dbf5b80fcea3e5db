/*
 * codec_cache.c
 *		What each statement on a tcopy table needs of its catalogs, kept per
 *		backend: the codec its scans read with (per table and user), and the
 *		key columns the planner bounds and orders by (per table).
 *
 * A key-point SELECT or UPDATE planned and begun from the catalogs each
 * time spent more CPU reading them than a heap table spends on the whole
 * statement (issue 46): the table's, server's and user mapping's options,
 * each column's type and conversion, the key's columns.  They are kept
 * here, as postgres_fdw keeps its connections, until an invalidation
 * says that something they were read from changed:
 *	- the relation (relcache: columns, their options, a rename, a DROP);
 *	- its options (FOREIGNTABLEREL), its server's (FOREIGNSERVEROID, and
 *	  the wrapper's), a user mapping's (USERMAPPINGOID: one made, altered
 *	  or dropped, for the user or PUBLIC);
 *	- a type (TYPEOID: its I/O functions, its name, which the schema sent
 *	  to the tserver carries), a schema (NAMESPACEOID: the qualified type
 *	  names), an operator class (CLAOID: which types a key images).
 * A relation's invalidation forgets its entries; any other forgets
 * every entry, as they are rare.  The callbacks run when the backend
 * accepts invalidations, as it does when the statement locks its tables,
 * before the planner or the scans look here, so a statement sees the
 * catalogs as of its locks, as it did when it read them itself.
 *
 * A shared codec is read-only: the scans and direct modifies that share
 * it never change it; an INSERT's writer, which does (the columns a row
 * names, on_conflict, the key images of a row), gets a copy of the struct
 * whose columns are the shared codec's.  Tables with
 * columns stored in forms.c's forms (enums, records) are not kept: a
 * form holds enum labels and record types, which change by statements
 * no cheap invalidation tells of.  A codec in use is pinned by the memory
 * context of whoever uses it (a scan's: the statement's), so that an
 * invalidation in the middle of a statement frees it only when the last
 * user's context goes.
 */

#include "postgres.h"

#include "utils/catcache.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"

/* A codec kept for sharing, and who holds it. */
typedef struct TcopySharedCodec
{
	MemoryContext cxt;			/* holds this struct and the codec */
	TcopyRelCodec *codec;
	int			pins;			/* memory contexts that hold it */
	bool		cached;			/* still in the cache; false: freed at the
								 * last unpin */
} TcopySharedCodec;

typedef struct TcopyCodecKey
{
	Oid			relid;
	Oid			userid;			/* whose user mapping */
} TcopyCodecKey;

typedef struct TcopyCodecEntry
{
	TcopyCodecKey key;			/* hash key */
	TcopySharedCodec *shared;
	int			batch_rows;		/* the settings the options were resolved */
	int			batch_kb;		/* under (tcopy.batch_rows, batch_size) */
} TcopyCodecEntry;

/* One user's pin on a shared codec: a reset callback of its context. */
typedef struct TcopyCodecPin
{
	MemoryContextCallback callback;
	TcopySharedCodec *shared;
} TcopyCodecPin;

typedef struct TcopyKeyEntry
{
	Oid			relid;			/* hash key */
	List	   *key_attnums;	/* in CacheMemoryContext */
	bool		key_bytes;
} TcopyKeyEntry;

/* in CacheMemoryContext; NULL until first used */
static HTAB *tcopy_codecs = NULL;
static HTAB *tcopy_keys = NULL;

/*
 * Bumped by every invalidation: what was read from the catalogs while it
 * changed is used once, not kept.
 */
static uint64 tcopy_cache_generation = 0;

/* Free a shared codec that is out of the cache, if nobody holds it. */
static void
codec_release_if_unused(TcopySharedCodec *shared)
{
	if (!shared->cached && shared->pins == 0)
		MemoryContextDelete(shared->cxt);
}

/* Reset callback of a pin's context: one user fewer. */
static void
codec_unpin(void *arg)
{
	TcopyCodecPin *pin = (TcopyCodecPin *) arg;

	pin->shared->pins--;
	codec_release_if_unused(pin->shared);
}

/*
 * Forget the entries of relation relid (every entry when InvalidOid); a
 * codec still held is freed by its last user.
 */
static void
codec_cache_forget(Oid relid)
{
	HASH_SEQ_STATUS status;

	tcopy_cache_generation++;
	if (tcopy_codecs != NULL)
	{
		TcopyCodecEntry *entry;

		hash_seq_init(&status, tcopy_codecs);
		while ((entry = hash_seq_search(&status)) != NULL)
		{
			if (OidIsValid(relid) && entry->key.relid != relid)
				continue;
			entry->shared->cached = false;
			codec_release_if_unused(entry->shared);
			(void) hash_search(tcopy_codecs, &entry->key, HASH_REMOVE, NULL);
		}
	}
	if (tcopy_keys != NULL)
	{
		TcopyKeyEntry *entry;

		hash_seq_init(&status, tcopy_keys);
		while ((entry = hash_seq_search(&status)) != NULL)
		{
			if (OidIsValid(relid) && entry->relid != relid)
				continue;
			list_free(entry->key_attnums);
			(void) hash_search(tcopy_keys, &entry->relid, HASH_REMOVE, NULL);
		}
	}
}

static void
codec_cache_relcache_callback(Datum arg, Oid relid)
{
	codec_cache_forget(relid);
}

static void
codec_cache_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	codec_cache_forget(InvalidOid);
}

void
TcopyCodecCacheInit(void)
{
	CacheRegisterRelcacheCallback(codec_cache_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNTABLEREL, codec_cache_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, codec_cache_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNDATAWRAPPEROID, codec_cache_syscache_callback,
								  (Datum) 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, codec_cache_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(TYPEOID, codec_cache_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, codec_cache_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(CLAOID, codec_cache_syscache_callback, (Datum) 0);
}

/* Whether a codec may be kept: no column in a form (see the file comment). */
static bool
codec_is_cacheable(const TcopyRelCodec *codec)
{
	for (int c = 0; c < codec->ncolumns; c++)
	{
		if (codec->columns[c].conv == TCOPY_CONV_FORM)
			return false;
	}
	return true;
}

/* Hold shared until CurrentMemoryContext is reset or deleted. */
static void
codec_pin(TcopySharedCodec *shared)
{
	TcopyCodecPin *pin = palloc(sizeof(TcopyCodecPin));

	pin->shared = shared;
	pin->callback.func = codec_unpin;
	pin->callback.arg = pin;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &pin->callback);
	shared->pins++;
}

/* A backend-local hash table in CacheMemoryContext, keyed by keysize bytes. */
static HTAB *
cache_hash(const char *name, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = CacheMemoryContext;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

TcopyRelCodec *
tcopy_rel_codec_shared(Relation rel, Oid userid)
{
	TcopyCodecKey key;
	TcopyCodecEntry *entry;
	TcopySharedCodec *shared;
	MemoryContext cxt;
	MemoryContext oldcontext;
	uint64		generation = tcopy_cache_generation;

	if (tcopy_codecs == NULL)
		tcopy_codecs = cache_hash("tcopy codecs", sizeof(TcopyCodecKey),
								  sizeof(TcopyCodecEntry));
	memset(&key, 0, sizeof(key));
	key.relid = RelationGetRelid(rel);
	key.userid = userid;
	entry = hash_search(tcopy_codecs, &key, HASH_FIND, NULL);
	if (entry != NULL &&
		(entry->batch_rows != tcopy_batch_rows || entry->batch_kb != tcopy_batch_kb))
	{
		/* the settings the options default to changed */
		entry->shared->cached = false;
		codec_release_if_unused(entry->shared);
		(void) hash_search(tcopy_codecs, &key, HASH_REMOVE, NULL);
		entry = NULL;
	}
	if (entry != NULL)
	{
		codec_pin(entry->shared);
		return entry->shared->codec;
	}

	/*
	 * Built under the caller's context, so that an ERROR frees it; moved
	 * under CacheMemoryContext once kept.
	 */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "tcopy codec", ALLOCSET_SMALL_SIZES);
	oldcontext = MemoryContextSwitchTo(cxt);
	shared = palloc0(sizeof(TcopySharedCodec));
	shared->cxt = cxt;
	shared->codec = tcopy_rel_codec(rel, userid);
	MemoryContextSwitchTo(oldcontext);
	if (generation != tcopy_cache_generation || !codec_is_cacheable(shared->codec))
		return shared->codec;	/* the caller's alone */

	MemoryContextSetParent(cxt, CacheMemoryContext);
	entry = hash_search(tcopy_codecs, &key, HASH_ENTER, NULL);
	entry->shared = shared;
	entry->batch_rows = tcopy_batch_rows;
	entry->batch_kb = tcopy_batch_kb;
	shared->cached = true;
	codec_pin(shared);
	return shared->codec;
}

TcopyRelCodec *
tcopy_rel_codec_writable(Relation rel, Oid userid)
{
	TcopyRelCodec *shared = tcopy_rel_codec_shared(rel, userid);
	TcopyRelCodec *codec = palloc(sizeof(TcopyRelCodec));

	/* the columns, schema and options' strings stay the shared codec's */
	*codec = *shared;
	initStringInfo(&codec->image_buf);
	codec->root_relid = InvalidOid;
	codec->inserted_cols = NULL;
	return codec;
}

List *
tcopy_rel_key_attnums(Relation rel, bool *key_bytes)
{
	Oid			relid = RelationGetRelid(rel);
	TcopyKeyEntry *entry;
	List	   *key_attnums;
	uint64		generation = tcopy_cache_generation;

	if (tcopy_keys == NULL)
		tcopy_keys = cache_hash("tcopy table keys", sizeof(Oid), sizeof(TcopyKeyEntry));
	entry = hash_search(tcopy_keys, &relid, HASH_FIND, NULL);
	if (entry != NULL)
	{
		*key_bytes = entry->key_bytes;
		return list_copy(entry->key_attnums);
	}

	key_attnums = tcopy_table_key_attnums(rel, key_bytes);
	if (generation == tcopy_cache_generation)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(CacheMemoryContext);

		entry = hash_search(tcopy_keys, &relid, HASH_ENTER, NULL);
		entry->key_attnums = list_copy(key_attnums);
		entry->key_bytes = *key_bytes;
		MemoryContextSwitchTo(oldcontext);
	}
	return key_attnums;
}
