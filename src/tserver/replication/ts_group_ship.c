/*
 * ts_group_ship.c
 *		A spilled session's SST files shipped to every member of the
 *		replica group through the log (docs/replication.md): each file in
 *		1 MB ENTRY_FILE chunks, SHIP_WINDOW submitted together; and the
 *		shipping thread that ships a session's files in the background as
 *		each is finished, in the order they were queued, while the session
 *		writes the next.
 *
 * A session waits for its files (ts_group_ship_wait) before the entry that
 * records or publishes them (its prepare), and before it removes them.
 */
#include "ts_group_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_key.h"
#include "ts_log.h"

#define SHIP_WINDOW 8			/* file chunks submitted together */
#define SHIP_SLOT (FILE_HEADER + PATH_MAX_LEN + FILE_CHUNK)

/* A file queued for the shipping thread. */
typedef struct ShipJob
{
	char	   *path;
	TsGroupShipping *shipping;
	struct ShipJob *next;
} ShipJob;

const char *
ts_group_staged_name(TsGroup *group, const char *path, TsError *err)
{
	const char *staging = group->store->staging_dir;
	size_t		len = strlen(staging);

	if (strncmp(path, staging, len) == 0 && path[len] == '/' &&
		ts_group_path_valid(path + len + 1, strlen(path + len + 1)))
		return path + len + 1;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
				 "\"%s\" is not a session's file in the staging directory", path);
	return NULL;
}

/* Files being shipped: up to SHIP_WINDOW chunks built, then submitted together. */
typedef struct Shipment
{
	uint8_t    *entries;		/* SHIP_WINDOW slots of SHIP_SLOT bytes */
	const void *data[SHIP_WINDOW];
	size_t		lens[SHIP_WINDOW];
	size_t		n;
} Shipment;

/* Submit the chunks built; 0 once applied here, or -1 with err. */
static int
ship_flush(TsGroup *group, Shipment *ship, TsError *err)
{
	size_t		n = ship->n;

	ship->n = 0;
	if (n == 0)
		return 0;
	return ts_group_outcome(group, ts_raft_submit_all(group->raft, ship->data, ship->lens, n), err);
}

/* Ship one file in chunks; 0, or -1 with err. */
static int
ship_file(TsGroup *group, Shipment *ship, const char *path, TsError *err)
{
	const char *name = ts_group_staged_name(group, path, err);
	size_t		namelen = name != NULL ? strlen(name) : 0;
	int			fd = name != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	uint64_t	offset = 0;
	bool		last = false;
	int			rc = 0;

	if (name != NULL && fd < 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not open \"%s\": %s",
					 path, strerror(errno));
	if (fd < 0)
		return -1;
	while (!last && rc == 0)
	{
		uint8_t    *entry = ship->entries + ship->n * SHIP_SLOT;
		uint8_t    *chunk = entry + FILE_HEADER + namelen;
		size_t		got = 0;

		while (got < FILE_CHUNK)
		{
			ssize_t		r = read(fd, chunk + got, FILE_CHUNK - got);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
							 "could not read \"%s\": %s", path, strerror(errno));
				rc = -1;
				break;
			}
			if (r == 0)
			{
				last = true;
				break;
			}
			got += (size_t) r;
		}
		if (rc != 0)
			break;
		entry[0] = ENTRY_FILE;
		ts_put_be64(entry + 1, group->id);
		ts_put_be64(entry + 9, offset);
		entry[17] = last;
		entry[18] = (uint8_t) (namelen >> 8);
		entry[19] = (uint8_t) namelen;
		memcpy(entry + FILE_HEADER, name, namelen);
		ship->data[ship->n] = entry;
		ship->lens[ship->n] = FILE_HEADER + namelen + got;
		offset += got;
		if (++ship->n == SHIP_WINDOW)
			rc = ship_flush(group, ship, err);
	}
	close(fd);
	return rc;
}

int
ts_group_ship_files(TsGroup *group, char *const *paths, size_t n, TsError *err)
{
	Shipment	ship = {.n = 0};
	int			rc = 0;

	ship.entries = malloc((size_t) SHIP_WINDOW * SHIP_SLOT);
	if (ship.entries == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = ship_file(group, &ship, paths[i], err);
	if (rc == 0)
		rc = ship_flush(group, &ship, err);
	free(ship.entries);
	return rc;
}

/* ---- in the background ---- */

void
ts_group_shipping_init(TsGroupShipping *shipping)
{
	memset(shipping, 0, sizeof(*shipping));
	pthread_mutex_init(&shipping->lock, NULL);
	pthread_cond_init(&shipping->done, NULL);
}

void
ts_group_shipping_destroy(TsGroupShipping *shipping)
{
	pthread_cond_destroy(&shipping->done);
	pthread_mutex_destroy(&shipping->lock);
}

/* One of shipping's files is done, rc saying how (err if it failed). */
static void
shipping_done(TsGroupShipping *shipping, int rc, const TsError *err)
{
	pthread_mutex_lock(&shipping->lock);
	if (rc != 0 && !shipping->failed)
	{
		shipping->failed = true;
		shipping->err = *err;
	}
	shipping->pending--;
	pthread_cond_broadcast(&shipping->done);
	pthread_mutex_unlock(&shipping->lock);
}

void
ts_group_ship_async(TsGroup *group, const char *path, TsGroupShipping *shipping)
{
	ShipJob    *job = malloc(sizeof(ShipJob));
	TsError		err;
	bool		queued = false;

	pthread_mutex_lock(&shipping->lock);
	shipping->pending++;
	pthread_mutex_unlock(&shipping->lock);
	if (job != NULL && (job->path = strdup(path)) != NULL)
	{
		job->shipping = shipping;
		job->next = NULL;
		pthread_mutex_lock(&group->ship_lock);
		if (group->shipper_started && !atomic_load(&group->stopping))
		{
			if (group->ship_tail != NULL)
				group->ship_tail->next = job;
			else
				group->ship_head = job;
			group->ship_tail = job;
			queued = true;
			pthread_cond_signal(&group->ship_cond);
		}
		pthread_mutex_unlock(&group->ship_lock);
	}
	if (queued)
		return;
	if (job != NULL)
		free(job->path);
	free(job);
	ts_error_set(&err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not queue \"%s\" for the replica group (out of memory, or stopping)",
				 path);
	shipping_done(shipping, -1, &err);
}

int
ts_group_ship_wait(TsGroupShipping *shipping, TsError *err)
{
	int			rc;

	pthread_mutex_lock(&shipping->lock);
	while (shipping->pending > 0)
		pthread_cond_wait(&shipping->done, &shipping->lock);
	rc = shipping->failed ? -1 : 0;
	if (rc != 0)
		*err = shipping->err;
	pthread_mutex_unlock(&shipping->lock);
	return rc;
}

/* The shipping thread: each queued file in turn; at the stop, the rest fail. */
static void *
shipper_main(void *arg)
{
	TsGroup    *group = arg;

	for (;;)
	{
		ShipJob    *job;
		TsError		err;
		int			rc;

		pthread_mutex_lock(&group->ship_lock);
		while (group->ship_head == NULL && !atomic_load(&group->stopping))
			pthread_cond_wait(&group->ship_cond, &group->ship_lock);
		job = group->ship_head;
		if (job != NULL && (group->ship_head = job->next) == NULL)
			group->ship_tail = NULL;
		pthread_mutex_unlock(&group->ship_lock);
		if (job == NULL)
			break;				/* stopping, nothing left */
		memset(&err, 0, sizeof(err));
		pthread_mutex_lock(&job->shipping->lock);
		rc = job->shipping->failed ? -1 : 0;	/* the session fails anyway */
		pthread_mutex_unlock(&job->shipping->lock);
		if (rc == 0 && atomic_load(&group->stopping))
		{
			ts_error_set(&err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "the replica group's member is stopping");
			rc = -1;
		}
		else if (rc == 0)
			rc = ts_group_ship_files(group, &job->path, 1, &err);
		shipping_done(job->shipping, rc, &err);
		free(job->path);
		free(job);
	}
	return NULL;
}

int
ts_group_shipper_start(TsGroup *group, TsError *err)
{
	if (pthread_create(&group->shipper, NULL, shipper_main, group) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not start the replica group's shipping thread: %s",
					 strerror(errno));
		return -1;
	}
	pthread_mutex_lock(&group->ship_lock);
	group->shipper_started = true;
	pthread_mutex_unlock(&group->ship_lock);
	return 0;
}

void
ts_group_shipper_stop(TsGroup *group)
{
	bool		started;

	pthread_mutex_lock(&group->ship_lock);
	started = group->shipper_started;
	pthread_cond_broadcast(&group->ship_cond);
	pthread_mutex_unlock(&group->ship_lock);
	if (started)
		pthread_join(group->shipper, NULL);
	pthread_cond_destroy(&group->ship_cond);
	pthread_mutex_destroy(&group->ship_lock);
}
