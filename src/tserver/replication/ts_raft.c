/*
 * ts_raft.c
 *		One member of a Raft group over Debian's libraft 0.15 (ts_raft.h).
 *
 * libraft is single-threaded: after raft_start, every raft_* call and
 * every state-machine callback runs on the libuv loop given to it, here on
 * a thread of the member's own (raft_thread_main).  Other threads reach it
 * through a queue and one uv_async_t: ts_raft_submit queues its entry
 * (a Submit on its own stack), wakes the loop and waits on its condition
 * variable; the loop drains the whole queue (wakeups coalesce) and calls
 * raft_apply once per entry (with several buffers, 0.15 calls back after
 * the first entry is applied, not the last).  raft_apply refusing an entry
 * appended nothing: the submitter may go elsewhere (TS_RAFT_NOT_LEADER);
 * its callback with RAFT_LEADERSHIPLOST means the entry may still be
 * committed by the next leader (TS_RAFT_UNKNOWN).
 *
 * What other threads read of the member (role, leader, applied index) is
 * copied under status_lock by a uv_check handle, after every loop
 * iteration: libraft's getters are not thread-safe.
 *
 * Snapshots: libraft 0.15 keeps a snapshot in memory and sends it whole,
 * so the machine's snapshot is a description (docs/replication.md: a
 * manifest naming the state, fetched out of band).  The machine gives the
 * bytes; they are copied into a raft_malloc'd buffer that libraft frees.
 *
 * The raft port is ts_raft_transport.c's, in TLS with the group's
 * certificates (ts_raft_tls.c) and keyed by the group's secret: libraft's
 * own transport lets anyone who reaches the port speak Raft, in the clear.
 */
#include "ts_raft.h"

#include <errno.h>
#include <pthread.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "tc_auth.h"
#include "ts_clock.h"
#include "ts_log.h"

/*
 * An entry (buf) or a change of membership (change_kind >= 0) on its way:
 * on the submitter's stack until done.
 */
typedef struct Submit
{
	struct raft_apply req;
	struct raft_buffer buf;
	struct raft_change change;
	int			change_kind;	/* a TsRaftChange, or -1: an entry */
	bool		then_standby;	/* an added member, a spare until assigned */
	uint64_t	member_id;
	char		member_address[TS_RAFT_ADDRESS_MAX];
	int			status;			/* libraft's, when it failed */
	TsRaft	   *raft;
	TsRaftOutcome outcome;
	uint64_t	index;
	bool		done;
	pthread_cond_t done_cond;
	struct Submit *next;
} Submit;

struct TsRaft
{
	TsRaftConfig config;
	struct uv_loop_s loop;
	struct raft_uv_transport transport;
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft raft;
	uv_async_t submit_async;
	uv_async_t stop_async;
	uv_check_t status_check;
	pthread_t	thread;

	pthread_mutex_t lock;		/* the queue, the Submits' outcomes, status */
	Submit	   *queue_head;
	Submit	   *queue_tail;
	bool		closing;		/* no more submissions */
	TsRaftStatus status;

	/* ts_raft_hold_snapshots: until then, no snapshot (so no truncation) */
	_Atomic uint64_t hold_until_us;
	_Atomic uint64_t held_bytes;	/* submitted meanwhile */
	bool		holding;		/* on the raft thread: the threshold raised */
};

/*
 * A hold ends early once this much was submitted during it: libraft 0.15
 * keeps the whole log in memory.
 */
#define HOLD_BYTES_MAX ((uint64_t) 1 << 30)

#define CONNECT_RETRY_MS 200	/* libraft's default is 1 s: a member back
								 * from a restart is reached sooner */

/* ---- the state machine, on the raft thread ---- */

/*
 * An entry on the log: its length (8 bytes, little-endian), its bytes,
 * zeros up to a multiple of 8.  libraft 0.15 writes an entry's bytes into
 * its segment files as they are and expects the next batch at a multiple
 * of 8 (an entry of 35 bytes made a segment unreadable at the next start).
 */
#define ENTRY_HEADER 8

static size_t
entry_size(size_t len)
{
	return ENTRY_HEADER + ((len + 7) & ~(size_t) 7);
}

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	TsRaft	   *raft = fsm->data;
	/* 0.15 raises last_applied after apply returns: this entry's index */
	uint64_t	index = raft_last_applied(&raft->raft) + 1;
	uint64_t	len = 0;
	const unsigned char *bytes = buf->base;

	for (int i = 0; i < 8 && buf->len >= ENTRY_HEADER; i++)
		len |= (uint64_t) bytes[i] << (8 * i);
	if (buf->len < ENTRY_HEADER || len > buf->len - ENTRY_HEADER)
	{
		ts_log(TS_LOG_WARNING, "raft member %llu: entry %llu of %zu bytes is malformed",
			   (unsigned long long) raft->config.id, (unsigned long long) index, buf->len);
		return RAFT_MALFORMED;
	}
	*result = (void *) (uintptr_t) index;
	return raft->config.machine.apply(raft->config.machine.arg, index, bytes + ENTRY_HEADER,
									  (size_t) len);
}

static int
fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	TsRaft	   *raft = fsm->data;
	TcBuf		out = {0};
	struct raft_buffer *buf;

	if (raft->config.machine.snapshot(raft->config.machine.arg, raft,
									  raft_last_applied(&raft->raft), &out) != 0)
	{
		tc_buf_free(&out);
		return RAFT_BUSY;		/* taken later */
	}
	buf = raft_malloc(sizeof(*buf));
	if (buf == NULL || (buf->base = raft_malloc(out.len > 0 ? out.len : 1)) == NULL)
	{
		raft_free(buf);
		tc_buf_free(&out);
		return RAFT_NOMEM;
	}
	memcpy(buf->base, out.data, out.len);
	buf->len = out.len;
	tc_buf_free(&out);
	*bufs = buf;
	*n_bufs = 1;
	return 0;
}

static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	TsRaft	   *raft = fsm->data;

	if (raft->config.machine.restore(raft->config.machine.arg, raft, buf->base, buf->len) != 0)
		return RAFT_CORRUPT;
	raft_free(buf->base);		/* ours on success */
	return 0;
}

unsigned
ts_raft_members_now(TsRaft *raft, TsRaftMember *members, unsigned max, uint64_t *leader_id)
{
	const struct raft_configuration *conf = &raft->raft.configuration;
	unsigned	n = 0;
	raft_id		id = 0;
	const char *address = NULL;

	raft_leader(&raft->raft, &id, &address);
	*leader_id = id;

	for (unsigned i = 0; i < conf->n && n < max; i++)
	{
		if (strlen(conf->servers[i].address) >= TS_RAFT_ADDRESS_MAX)
			continue;
		members[n].id = conf->servers[i].id;
		strcpy(members[n].address, conf->servers[i].address);
		members[n].voter = conf->servers[i].role == RAFT_VOTER;
		n++;
	}
	return n;
}

int
ts_raft_fetch_open(TsRaft *raft, uint64_t id, const char *address, unsigned timeout_ms,
				   TsError *err)
{
	char		why[256];
	int			fd = ts_raft_fetch_connect(&raft->transport, id, address, timeout_ms, why,
										   sizeof(why));

	if (fd < 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "%s", why);
	return fd;
}

/* ---- submissions, on the raft thread ---- */

/* Say an entry's outcome to its waiting submitter. */
static void
submit_done(TsRaft *raft, Submit *submit, TsRaftOutcome outcome, uint64_t index)
{
	pthread_mutex_lock(&raft->lock);
	submit->outcome = outcome;
	submit->index = index;
	submit->done = true;
	pthread_cond_signal(&submit->done_cond);
	pthread_mutex_unlock(&raft->lock);
}

/* Committed and applied here (0), or leadership lost, or a failed write. */
static void
apply_cb(struct raft_apply *req, int status, void *result)
{
	Submit	   *submit = req->data;

	submit_done(submit->raft, submit,
				status == 0 ? TS_RAFT_APPLIED :
				status == RAFT_LEADERSHIPLOST ? TS_RAFT_UNKNOWN : TS_RAFT_FAILED,
				status == 0 ? (uint64_t) (uintptr_t) result : 0);
}

/* A change of membership committed (0), or not. */
static void
change_cb(struct raft_change *req, int status)
{
	Submit	   *submit = req->data;

	/*
	 * libraft 0.15 adds a member as a spare, which is sent nothing: made a
	 * standby, it is sent the log (or a snapshot) and catches up before
	 * it is promoted.
	 */
	if (status == 0 && submit->then_standby)
	{
		submit->then_standby = false;
		status = raft_assign(&submit->raft->raft, &submit->change, submit->member_id,
							 RAFT_STANDBY, change_cb);
		if (status == 0)
			return;
	}
	submit->status = status;
	submit_done(submit->raft, submit,
				status == 0 ? TS_RAFT_APPLIED :
				status == RAFT_NOTLEADER || status == RAFT_LEADERSHIPLOST ?
				TS_RAFT_NOT_LEADER : TS_RAFT_FAILED, 0);
}

/* Hand a change of membership to libraft; its return code. */
static int
submit_change(TsRaft *raft, Submit *submit)
{
	submit->change.data = submit;
	switch ((TsRaftChange) submit->change_kind)
	{
		case TS_RAFT_ADD:
			submit->then_standby = true;
			return raft_add(&raft->raft, &submit->change, submit->member_id,
							submit->member_address, change_cb);
		case TS_RAFT_PROMOTE:
			return raft_assign(&raft->raft, &submit->change, submit->member_id, RAFT_VOTER,
							   change_cb);
		case TS_RAFT_REMOVE:
			return raft_remove(&raft->raft, &submit->change, submit->member_id, change_cb);
	}
	return RAFT_INVALID;
}

/* Take the whole queue and hand each entry to libraft. */
static void
submit_async_cb(uv_async_t *handle)
{
	TsRaft	   *raft = handle->data;
	Submit	   *submit;

	pthread_mutex_lock(&raft->lock);
	submit = raft->queue_head;
	raft->queue_head = raft->queue_tail = NULL;
	pthread_mutex_unlock(&raft->lock);
	while (submit != NULL)
	{
		Submit	   *next = submit->next;
		int			rv;

		if (submit->change_kind >= 0)
			rv = submit_change(raft, submit);
		else
		{
			submit->req.data = submit;
			rv = raft_apply(&raft->raft, &submit->req, &submit->buf, 1, apply_cb);
		}
		if (rv != 0)
		{
			/* nothing appended: the buffer is still ours */
			raft_free(submit->buf.base);
			submit->status = rv;
			submit_done(raft, submit, rv == RAFT_NOTLEADER ? TS_RAFT_NOT_LEADER : TS_RAFT_FAILED, 0);
		}
		submit = next;
	}
}

/* ---- status, stop, the thread ---- */

/*
 * Raise the snapshot threshold while a hold lasts, and set it back after:
 * libraft takes a snapshot once the log since the last is that long, and
 * truncates the log behind it.
 */
static void
hold_check(TsRaft *raft)
{
	uint64_t	until = atomic_load(&raft->hold_until_us);
	bool		hold = until != 0 && ts_monotonic_us() < until &&
		atomic_load(&raft->held_bytes) < HOLD_BYTES_MAX;

	if (raft->holding && !hold && atomic_load(&raft->held_bytes) >= HOLD_BYTES_MAX)
		ts_log(TS_LOG_WARNING, "raft member %llu: snapshots held for a member catching up "
			   "are taken again: %llu MB of entries came meanwhile",
			   (unsigned long long) raft->config.id,
			   (unsigned long long) (atomic_load(&raft->held_bytes) >> 20));
	/* over (unless a new one began meanwhile), whether or not it took effect */
	if (!hold && until != 0)
		atomic_compare_exchange_strong(&raft->hold_until_us, &until, 0);
	if (hold == raft->holding)
		return;
	raft->holding = hold;
	ts_log(TS_LOG_INFO, "raft member %llu: snapshots %s", (unsigned long long) raft->config.id,
		   hold ? "held while a member catches up" : "taken again");
	raft_set_snapshot_threshold(&raft->raft, hold ? UINT32_MAX :
								raft->config.snapshot_threshold ? raft->config.snapshot_threshold : 1024);
}

/*
 * After every loop iteration: what other threads may read of the member,
 * and a hold of snapshots begun or ended.
 */
static void
status_check_cb(uv_check_t *handle)
{
	TsRaft	   *raft = handle->data;
	raft_id		leader_id;
	const char *leader_address;
	TsRaftStatus status = {0};

	hold_check(raft);

	switch (raft_state(&raft->raft))
	{
		case RAFT_FOLLOWER:
			status.role = TS_RAFT_FOLLOWER;
			break;
		case RAFT_CANDIDATE:
			status.role = TS_RAFT_CANDIDATE;
			break;
		case RAFT_LEADER:
			status.role = TS_RAFT_LEADER;
			break;
		default:
			status.role = TS_RAFT_UNAVAILABLE;
	}
	raft_leader(&raft->raft, &leader_id, &leader_address);
	status.leader_id = leader_id;
	if (leader_id != 0 && leader_address != NULL)
		snprintf(status.leader_address, sizeof(status.leader_address), "%s", leader_address);
	status.applied = raft_last_applied(&raft->raft);
	status.term = raft->raft.current_term;
	for (unsigned i = 0; i < raft->raft.configuration.n && i < TS_RAFT_MEMBERS_MAX; i++)
	{
		const struct raft_server *server = &raft->raft.configuration.servers[i];

		status.members[i].id = server->id;
		snprintf(status.members[i].address, sizeof(status.members[i].address), "%s",
				 server->address);
		status.members[i].voter = server->role == RAFT_VOTER;
		status.nmembers = i + 1;
	}
	ts_raft_transport_stats(&raft->transport, &status.transport);
	pthread_mutex_lock(&raft->lock);
	raft->status = status;
	pthread_mutex_unlock(&raft->lock);
}

static void
handle_closed(uv_handle_t *handle)
{
	(void) handle;
}

/* libraft closed: close the rest, and the loop ends. */
static void
raft_closed(struct raft *r)
{
	TsRaft	   *raft = r->data;

	raft_uv_close(&raft->io);
	ts_raft_transport_close(&raft->transport);
	uv_close((uv_handle_t *) &raft->submit_async, handle_closed);
	uv_close((uv_handle_t *) &raft->stop_async, handle_closed);
	uv_close((uv_handle_t *) &raft->status_check, handle_closed);
}

/* Stop: fail what is queued, then close libraft (in flight: LEADERSHIPLOST). */
static void
stop_async_cb(uv_async_t *handle)
{
	TsRaft	   *raft = handle->data;
	Submit	   *submit;

	pthread_mutex_lock(&raft->lock);
	raft->closing = true;
	submit = raft->queue_head;
	raft->queue_head = raft->queue_tail = NULL;
	pthread_mutex_unlock(&raft->lock);
	while (submit != NULL)
	{
		Submit	   *next = submit->next;

		raft_free(submit->buf.base);
		submit_done(raft, submit, TS_RAFT_FAILED, 0);
		submit = next;
	}
	raft_close(&raft->raft, raft_closed);
}

static void *
raft_thread_main(void *arg)
{
	TsRaft	   *raft = arg;

	pthread_setname_np(pthread_self(), "ts-raft");
	uv_run(&raft->loop, UV_RUN_DEFAULT);
	return NULL;
}

/* Parse "ID@ADDRESS,..." into conf; 0, or -1 with err. */
static int
parse_members(const char *text, struct raft_configuration *conf, TsError *err)
{
	const char *at = text;

	while (*at != '\0')
	{
		const char *end = strchr(at, ',');
		size_t		len = end != NULL ? (size_t) (end - at) : strlen(at);
		char		item[TS_RAFT_ADDRESS_MAX + 32];
		char	   *sep;
		char	   *stop;
		unsigned long long id;

		if (len == 0 || len >= sizeof(item))
			goto bad;
		memcpy(item, at, len);
		item[len] = '\0';
		sep = strchr(item, '@');
		if (sep == NULL || sep == item || sep[1] == '\0' || strlen(sep + 1) >= TS_RAFT_ADDRESS_MAX)
			goto bad;
		*sep = '\0';
		errno = 0;
		id = strtoull(item, &stop, 10);
		if (errno != 0 || *stop != '\0' || id == 0 ||
			raft_configuration_add(conf, id, sep + 1, RAFT_VOTER) != 0)
			goto bad;
		at += len;
		if (*at == ',')
			at++;
	}
	return 0;

bad:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "the raft members \"%s\" are not \"ID@ADDRESS,...\" with distinct ids above 0",
				 text);
	return -1;
}

/*
 * A member's credentials: its group's secret (into secret[TS_RAFT_SECRET_MAX
 * + 1], *secret_len bytes) and, unless config says cleartext in so many
 * words, its raft port's TLS context (*tls).  0, or -1 with err and
 * nothing kept.
 */
static int
raft_credentials_load(const TsRaftConfig *config, char *secret, size_t *secret_len,
					  struct ssl_ctx_st **tls, TsError *err)
{
	char		why[512];

	*tls = NULL;
	if (config->secret_file == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the raft member %llu has no secret file: its group's members prove themselves to each other with it",
					 (unsigned long long) config->id);
		return -1;
	}
	if (ts_raft_secret_load(config->secret_file, secret, secret_len, why, sizeof(why)) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the raft member %llu cannot use its secret: %s",
					 (unsigned long long) config->id, why);
		return -1;
	}
	/* TLS, unless told in so many words not to */
	if (!config->cleartext &&
		(config->tls_cert == NULL || config->tls_key == NULL || config->tls_ca == NULL))
	{
		tc_auth_forget(secret, TS_RAFT_SECRET_MAX + 1);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the raft member %llu has no TLS certificate: give --raft-tls-cert, "
					 "--raft-tls-key and --raft-tls-ca, or --raft-insecure-cleartext",
					 (unsigned long long) config->id);
		return -1;
	}
	if (!config->cleartext &&
		(*tls = ts_raft_tls_context(config->tls_cert, config->tls_key, config->tls_ca,
									why, sizeof(why))) == NULL)
	{
		tc_auth_forget(secret, TS_RAFT_SECRET_MAX + 1);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the raft member %llu cannot use its TLS files: %s",
					 (unsigned long long) config->id, why);
		return -1;
	}
	return 0;
}

TsRaft *
ts_raft_start(const TsRaftConfig *config, TsError *err)
{
	TsRaft	   *raft;
	int			rv;
	const char *step = "";
	char		secret[TS_RAFT_SECRET_MAX + 1];
	size_t		secret_len = 0;
	struct ssl_ctx_st *tls = NULL;

	/* first, so that a member without its secret leaves nothing behind */
	if (raft_credentials_load(config, secret, &secret_len, &tls, err) != 0)
		return NULL;
	if ((raft = calloc(1, sizeof(TsRaft))) == NULL)
	{
		tc_auth_forget(secret, sizeof(secret));
		ts_raft_tls_context_free(tls);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	raft->config = *config;
	pthread_mutex_init(&raft->lock, NULL);
	if (mkdir(config->dir, 0700) != 0 && errno != EEXIST)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not create \"%s\": %s",
					 config->dir, strerror(errno));
		tc_auth_forget(secret, sizeof(secret));
		ts_raft_tls_context_free(tls);
		free(raft);
		return NULL;
	}
	uv_loop_init(&raft->loop);
	raft->fsm.version = 2;
	raft->fsm.data = raft;
	raft->fsm.apply = fsm_apply;
	raft->fsm.snapshot = fsm_snapshot;
	raft->fsm.restore = fsm_restore;
	/* the transport keeps a copy of the secret, and wipes it at its close */
	rv = ts_raft_transport_init(&raft->transport, &raft->loop, secret, secret_len, tls,
								config->handshake_ms);
	tc_auth_forget(secret, sizeof(secret));
	ts_raft_tls_context_free(tls);	/* the transport holds its own reference */
	if (rv != 0)
	{
		step = "its transport";
		goto fail;
	}
	if (config->on_fetch != NULL)
		ts_raft_transport_on_fetch(&raft->transport, config->on_fetch, config->fetch_arg);
	if ((rv = raft_uv_init(&raft->io, &raft->loop, config->dir, &raft->transport)) != 0)
	{
		step = "its I/O";
		goto fail;
	}
	raft_uv_set_connect_retry_delay(&raft->io, CONNECT_RETRY_MS);
	if ((rv = raft_init(&raft->raft, &raft->io, &raft->fsm, config->id, config->address)) != 0)
	{
		step = "it";
		goto fail;
	}
	raft->raft.data = raft;
	if (config->bootstrap != NULL)
	{
		struct raft_configuration conf;

		raft_configuration_init(&conf);
		if (parse_members(config->bootstrap, &conf, err) != 0)
		{
			raft_configuration_close(&conf);
			goto fail_logged;
		}
		rv = raft_bootstrap(&raft->raft, &conf);
		raft_configuration_close(&conf);
		/* a member with state already was bootstrapped */
		if (rv != 0 && rv != RAFT_CANTBOOTSTRAP)
		{
			step = "its bootstrap";
			goto fail;
		}
		if (rv == 0 && config->machine.bootstrapped != NULL &&
			config->machine.bootstrapped(config->machine.arg, err) != 0)
			goto fail_logged;
	}
	raft_set_election_timeout(&raft->raft, config->election_ms ? config->election_ms : 1000);
	raft_set_heartbeat_timeout(&raft->raft, config->heartbeat_ms ? config->heartbeat_ms : 100);
	raft_set_snapshot_threshold(&raft->raft,
								config->snapshot_threshold ? config->snapshot_threshold : 1024);
	if (config->snapshot_trailing != 0)
		raft_set_snapshot_trailing(&raft->raft, config->snapshot_trailing);
	raft_set_pre_vote(&raft->raft, true);
	uv_async_init(&raft->loop, &raft->submit_async, submit_async_cb);
	raft->submit_async.data = raft;
	uv_async_init(&raft->loop, &raft->stop_async, stop_async_cb);
	raft->stop_async.data = raft;
	uv_check_init(&raft->loop, &raft->status_check);
	raft->status_check.data = raft;
	uv_check_start(&raft->status_check, status_check_cb);
	if ((rv = raft_start(&raft->raft)) != 0)
	{
		step = "it";
		goto fail;
	}
	if (pthread_create(&raft->thread, NULL, raft_thread_main, raft) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "could not start the raft thread");
		/* not reached in practice; the loop's handles leak with the member */
		return NULL;
	}
	ts_log(TS_LOG_INFO, "raft member %llu at %s started in \"%s\"",
		   (unsigned long long) config->id, config->address, config->dir);
	return raft;

fail:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not start the raft member (%s): %s",
				 step, strcmp(step, "its transport") == 0 ? raft->transport.errmsg :
				 strcmp(step, "its I/O") == 0 ? raft_strerror(rv) : raft_errmsg(&raft->raft));
fail_logged:
	/* what was made before the failure goes with the process */
	return NULL;
}

/* Queue submits[n] for the raft thread, in order, and wait for them all. */
static void
submit_wait_all(TsRaft *raft, Submit *submits, size_t n)
{
	pthread_mutex_lock(&raft->lock);
	if (raft->closing)
	{
		pthread_mutex_unlock(&raft->lock);
		for (size_t i = 0; i < n; i++)
		{
			raft_free(submits[i].buf.base);
			submits[i].outcome = TS_RAFT_FAILED;
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
	{
		pthread_cond_init(&submits[i].done_cond, NULL);
		if (raft->queue_tail != NULL)
			raft->queue_tail->next = &submits[i];
		else
			raft->queue_head = &submits[i];
		raft->queue_tail = &submits[i];
	}
	pthread_mutex_unlock(&raft->lock);
	uv_async_send(&raft->submit_async);
	pthread_mutex_lock(&raft->lock);
	for (size_t i = 0; i < n; i++)
	{
		while (!submits[i].done)
			pthread_cond_wait(&submits[i].done_cond, &raft->lock);
	}
	pthread_mutex_unlock(&raft->lock);
	for (size_t i = 0; i < n; i++)
		pthread_cond_destroy(&submits[i].done_cond);
}

/* Fill submit with entry data (framed, in a raft_malloc'd buffer); false: out of memory. */
static bool
submit_entry(TsRaft *raft, Submit *submit, const void *data, size_t len)
{
	memset(submit, 0, sizeof(*submit));
	submit->raft = raft;
	submit->change_kind = -1;
	submit->buf.len = entry_size(len);
	submit->buf.base = raft_malloc(submit->buf.len);
	if (submit->buf.base == NULL)
		return false;
	memset(submit->buf.base, 0, submit->buf.len);
	for (int i = 0; i < 8; i++)
		((unsigned char *) submit->buf.base)[i] = (unsigned char) ((uint64_t) len >> (8 * i));
	memcpy((char *) submit->buf.base + ENTRY_HEADER, data, len);
	if (atomic_load(&raft->hold_until_us) != 0)
		atomic_fetch_add(&raft->held_bytes, submit->buf.len);
	return true;
}

void
ts_raft_hold_snapshots(TsRaft *raft, unsigned seconds)
{
	uint64_t	now = ts_monotonic_us();
	uint64_t	until = atomic_load(&raft->hold_until_us);

	/* a new hold, not the end of one going on, counts from nothing */
	if (until == 0 || until <= now)
		atomic_store(&raft->held_bytes, 0);
	atomic_store(&raft->hold_until_us, now + (uint64_t) seconds * 1000000);
	uv_async_send(&raft->submit_async);	/* the loop checks it at once */
}

TsRaftOutcome
ts_raft_submit(TsRaft *raft, const void *data, size_t len, uint64_t *index)
{
	Submit		submit;

	if (!submit_entry(raft, &submit, data, len))
		return TS_RAFT_FAILED;
	submit_wait_all(raft, &submit, 1);
	if (index != NULL)
		*index = submit.index;
	return submit.outcome;
}

TsRaftOutcome
ts_raft_submit_all(TsRaft *raft, const void *const *data, const size_t *lens, size_t n)
{
	Submit	   *submits = calloc(n, sizeof(Submit));
	TsRaftOutcome outcome = TS_RAFT_APPLIED;
	size_t		made = 0;

	if (submits == NULL)
		return TS_RAFT_FAILED;
	while (made < n && submit_entry(raft, &submits[made], data[made], lens[made]))
		made++;
	if (made < n)
	{
		for (size_t i = 0; i < made; i++)
			raft_free(submits[i].buf.base);
		free(submits);
		return TS_RAFT_FAILED;
	}
	submit_wait_all(raft, submits, n);
	/* the first that was not applied says what happened to the rest */
	for (size_t i = 0; i < n && outcome == TS_RAFT_APPLIED; i++)
		outcome = submits[i].outcome;
	free(submits);
	return outcome;
}

TsRaftOutcome
ts_raft_change(TsRaft *raft, TsRaftChange change, uint64_t id, const char *address,
			   char *why, size_t whylen)
{
	Submit		submit;
	TsRaftOutcome outcome;

	memset(&submit, 0, sizeof(submit));
	submit.raft = raft;
	submit.change_kind = (int) change;
	submit.member_id = id;
	snprintf(submit.member_address, sizeof(submit.member_address), "%s",
			 address != NULL ? address : "");
	submit_wait_all(raft, &submit, 1);
	outcome = submit.outcome;
	if (outcome != TS_RAFT_APPLIED)
		snprintf(why, whylen, "%s", submit.status != 0 ? raft_strerror(submit.status) :
				 "the member is stopping");
	return outcome;
}

void
ts_raft_status(TsRaft *raft, TsRaftStatus *status)
{
	pthread_mutex_lock(&raft->lock);
	*status = raft->status;
	pthread_mutex_unlock(&raft->lock);
}

void
ts_raft_stop(TsRaft *raft)
{
	uv_async_send(&raft->stop_async);
	pthread_join(raft->thread, NULL);
	uv_loop_close(&raft->loop);
	/* libraft closed its streams: their TLS relays end at once */
	ts_raft_tls_wait(2000);
	pthread_mutex_destroy(&raft->lock);
	ts_log(TS_LOG_INFO, "raft member %llu stopped", (unsigned long long) raft->config.id);
	free(raft);
}
