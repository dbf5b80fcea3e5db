/*
 * ts_group.h
 *		A tserver as one member of a replica group (docs/replication.md):
 *		its Raft member, every write of its store through the group's log,
 *		and whether it serves clients (the leader only, once its state holds
 *		every committed entry).
 *
 * The member applies the group's log to its store whatever its role.  A
 * follower serves nothing: each client is told who leads.  A member that
 * becomes leader first commits an empty entry (libraft 0.15 has no
 * leader no-op), so that every entry of earlier terms is applied, then
 * reloads what the store keeps in memory (tables, prepared sessions) from
 * RocksDB, and only then serves.  A leader that loses its leadership
 * stops serving and calls restart: the tserver restarts itself
 * (ts_main.c), so that no session, claim or cache of its time as leader
 * outlives it.
 */
#ifndef TS_GROUP_H
#define TS_GROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ts_raft.h"
#include "ts_storage.h"

typedef struct TsGroup TsGroup;

typedef struct TsGroupConfig
{
	TsRaftConfig raft;			/* its machine is the group's own */
	void		(*restart) (void *arg); /* restart the tserver, not returning:
										 * a leader demoted, a state fetched */
	void	   *restart_arg;

	/*
	 * What the group asks of the layers above it (set by ts_main.c, as
	 * ts_storage_set_replicator is by the group): taking the lead, forget
	 * what the store keeps in memory of sessions and reload it from
	 * RocksDB; for a CLEAN entry, remove the staging of every session but
	 * the prepared ones.  Each 0, or -1 with err.
	 */
	int			(*reload) (TsStore *store, TsError *err);
	int			(*clean_staging) (TsStore *store, TsError *err);
} TsGroupConfig;

/*
 * Make store a member of the group config describes: its writes go
 * through the group's log from now on, and the member starts (replaying its
 * log into the store).  NULL with err.
 */
TsGroup    *ts_group_start(TsStore *store, const TsGroupConfig *config, TsError *err);

/*
 * Whether the member serves a client that connected while it served as
 * epoch (0: a client not yet served); with false, err says who leads.
 */
bool		ts_group_serving(TsGroup *group, uint64_t epoch, TsError *err);

/*
 * Ship a spilled session's files (absolute paths in its staging directory)
 * to every member through the log, before the entry that records or
 * publishes the session: each SST file as it is finished (ts_sst_sink.c),
 * a prepared session's sentinel at its prepare.  0 once applied here, or
 * -1 with err.
 */
int			ts_group_ship_files(TsGroup *group, char *const *paths, size_t n, TsError *err);

/*
 * A session's files being shipped in the background (ts_group_ship_async):
 * how many are left, and the first failure.
 */
typedef struct TsGroupShipping
{
	pthread_mutex_t lock;
	pthread_cond_t done;
	unsigned	pending;
	bool		failed;
	TsError		err;
} TsGroupShipping;

void		ts_group_shipping_init(TsGroupShipping *shipping);
void		ts_group_shipping_destroy(TsGroupShipping *shipping);

/*
 * Ship the file at path (copied) as ts_group_ship_files does, on the
 * group's shipping thread, after every file queued before it: the caller
 * goes on (a session writes its next SST file meanwhile).  Its outcome
 * goes into shipping.
 */
void		ts_group_ship_async(TsGroup *group, const char *path, TsGroupShipping *shipping);

/*
 * Wait until every file queued with shipping is shipped: 0, or -1 with the
 * first failure in err.  Before the entry that records or publishes the
 * files, and before they are removed.
 */
int			ts_group_ship_wait(TsGroupShipping *shipping, TsError *err);

/*
 * Ingest shipped files (absolute paths here) on every member, in one call
 * each, in their order of precedence.  0, or -1 with err.
 */
int			ts_group_ingest(TsGroup *group, char *const *paths, size_t n, TsError *err);

/*
 * Have every other member remove the staging directory name (a session's
 * that was published or discarded); a failure is logged only (the next
 * leader's CLEAN removes it).
 */
void		ts_group_drop_dir(TsGroup *group, const char *name);

/*
 * Commit an empty entry through the group: once it returns 0, this member
 * led the group after every write acknowledged before the call, so that a
 * read that follows sees them all (libraft 0.15 has no leader lease: a
 * leader cut off from the others could otherwise serve stale rows until it
 * noticed).  -1 with err (ERROR_NOT_LEADER) when it no longer leads.
 */
int			ts_group_barrier(TsGroup *group, TsError *err);

/*
 * Change the group's membership from its leader (ts_raft_change), then (or
 * for TS_GROUP_STATUS only) fill status; 0, or -1 with err.
 */
int			ts_group_change(TsGroup *group, int change, uint64_t id, const char *address,
							TsRaftStatus *status, TsError *err);
#define TS_GROUP_STATUS (-1)

/* The current serving epoch, 0 while not serving. */
uint64_t	ts_group_epoch(TsGroup *group);

/*
 * Put a state fetched from another member (ts_group_catchup.c) in place of
 * the store's own in data_dir, if one is there: at a member's start,
 * before its store opens.  0, or -1 with err.
 */
int			ts_group_catchup_finish(const char *data_dir, TsError *err);

/* Stop the member; the store's writes fail from then on. */
void		ts_group_stop(TsGroup *group);

#endif							/* TS_GROUP_H */
