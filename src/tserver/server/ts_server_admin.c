/*
 * ts_server_admin.c
 *		What the server is told and tells while it runs (ts_server.h): a
 *		reload's new limits and tokens, and the metrics endpoint's
 *		counters (ts_metrics.h).
 */
#include "ts_server_int.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_durations.h"
#include "ts_group.h"
#include "ts_log.h"

void
ts_server_set_reload(TsServer *server, void (*reload) (void *arg), void *arg)
{
	server->reload = reload;
	server->reload_arg = arg;
}

void
ts_server_request_reload(TsServer *server)
{
	int			saved_errno = errno;
	ssize_t		rc;

	atomic_store(&server->reload_requested, true);
	rc = write(server->wakeup_pipe[1], "h", 1);
	(void) rc;
	errno = saved_errno;
}

void
ts_server_set_limits(TsServer *server, int max_connections, int max_unauthenticated,
					 int handshake_timeout_ms, int idle_timeout_ms, int max_namespace_connections)
{
	server->max_connections = max_connections;
	server->max_unauthenticated = max_unauthenticated;
	atomic_store(&server->conn_ctx.handshake_timeout_ms, handshake_timeout_ms);
	atomic_store(&server->conn_ctx.idle_timeout_ms, idle_timeout_ms);
	atomic_store(&server->shared.tenants.max_connections, max_namespace_connections);
}

int
ts_server_set_credentials(TsServer *server, TsCredentials *creds)
{
	return ts_proto_set_credentials(&server->shared, creds);
}

/*
 * TsMetricsCollect: the counters of STATS, the refusals, the group's role,
 * and the session layer's histograms of merge and publish times.
 */
static void
server_collect_metrics(void *arg, TcBuf *out)
{
	TsServer   *server = arg;
	Tcopy__Stats st = TCOPY__STATS__INIT;

	ts_proto_fill_stats(&server->shared, &st);
	ts_metrics_put(out, "tcopy_uptime_seconds", "gauge", "Seconds since the tserver started.",
				   NULL, st.uptime_ms / 1000.0);
	ts_metrics_put(out, "tcopy_connections_open", "gauge", "Client connections open.", NULL,
				   (double) st.connections_open);
	ts_metrics_put(out, "tcopy_connections_total", "counter", "Client connections accepted.",
				   NULL, (double) st.connections_total);
	ts_metrics_put(out, "tcopy_connections_refused_total", "counter",
				   "Connections refused at accept, by the limit that refused them.",
				   "reason=\"max_connections\"", (double) atomic_load(&server->refused_connections));
	ts_metrics_put(out, "tcopy_connections_refused_total", "counter", NULL,
				   "reason=\"max_unauthenticated\"",
				   (double) atomic_load(&server->refused_unauthenticated));
	ts_metrics_put(out, "tcopy_connections_evicted_total", "counter",
				   "Unauthenticated connections closed to make room for newer ones.", NULL,
				   (double) atomic_load(&server->evictions));
	ts_metrics_put(out, "tcopy_sessions", "gauge", "Write sessions now, by state.",
				   "state=\"open\"", (double) st.sessions_open);
	ts_metrics_put(out, "tcopy_sessions", "gauge", NULL, "state=\"prepared\"",
				   (double) st.sessions_prepared);
	ts_metrics_put(out, "tcopy_sessions_ended_total", "counter",
				   "Write sessions ended, by outcome.", "outcome=\"committed\"",
				   (double) st.sessions_committed);
	ts_metrics_put(out, "tcopy_sessions_ended_total", "counter", NULL, "outcome=\"aborted\"",
				   (double) st.sessions_aborted);
	ts_metrics_put(out, "tcopy_rows_committed_total", "counter", "Rows committed.", NULL,
				   (double) st.rows_committed);
	ts_metrics_put(out, "tcopy_batches_received_total", "counter", "Write batches received.",
				   NULL, (double) st.batches_received);
	ts_metrics_put(out, "tcopy_received_bytes_total", "counter",
				   "Frame bytes received from clients.", NULL, (double) st.bytes_received);
	ts_metrics_put(out, "tcopy_tables", "gauge", "Tables in the store.", NULL,
				   (double) st.tables);
	ts_metrics_put(out, "tcopy_staged_bytes", "gauge",
				   "Sessions' data held in memory, not yet committed.", NULL,
				   (double) st.staged_bytes);
	ts_metrics_put(out, "tcopy_spilled_bytes", "gauge",
				   "Sessions' data spilled to staging files, not yet committed.", NULL,
				   (double) st.spilled_bytes);
	ts_metrics_put(out, "tcopy_peak_rss_bytes", "gauge", "Peak resident memory (VmHWM).",
				   NULL, st.peak_rss_kb * 1024.0);
	ts_metrics_put(out, "tcopy_rocksdb_compaction_read_bytes_total", "counter",
				   "Bytes RocksDB's compactions read (with --statistics).", NULL,
				   (double) st.compaction_read_bytes);
	ts_metrics_put(out, "tcopy_rocksdb_compaction_write_bytes_total", "counter",
				   "Bytes RocksDB's compactions wrote (with --statistics).", NULL,
				   (double) st.compaction_write_bytes);
	ts_metrics_put(out, "tcopy_rocksdb_flush_write_bytes_total", "counter",
				   "Bytes RocksDB's flushes wrote (with --statistics).", NULL,
				   (double) st.flush_write_bytes);
	ts_metrics_put(out, "tcopy_rocksdb_wal_syncs_total", "counter",
				   "Syncs of RocksDB's write-ahead log (with --statistics).", NULL,
				   (double) st.wal_syncs);
	ts_metrics_put(out, "tcopy_lazy_writes_total", "counter",
				   "Publishes written unsynced, their prepared records standing for them.",
				   NULL, (double) st.lazy_writes);
	ts_metrics_put(out, "tcopy_wal_background_syncs_total", "counter",
				   "Syncs of the write-ahead log by the background syncer, for lazy writes.",
				   NULL, (double) st.wal_background_syncs);
	ts_metrics_put(out, "tcopy_sst_bytes", "gauge", "RocksDB's live SST files.", NULL,
				   (double) st.sst_bytes);
	ts_metrics_put(out, "tcopy_disk_free_bytes", "gauge",
				   "Room left on the data directory's file system.", NULL,
				   (double) st.disk_free_bytes);
	ts_metrics_put(out, "tcopy_memory_budget_bytes", "gauge",
				   "What the write sessions' staged bytes count against (--memory-mb; 0: none).",
				   NULL, (double) st.memory_budget_bytes);
	ts_metrics_put(out, "tcopy_rocksdb_l0_files", "gauge",
				   "RocksDB's files at level 0 (the rows' family).", NULL, (double) st.l0_files);
	ts_metrics_put(out, "tcopy_rocksdb_stall_seconds_total", "counter",
				   "Time RocksDB stalled writes (with --statistics).", NULL,
				   st.stall_micros / 1e6);
	ts_metrics_put_histogram(out, "tcopy_merge_seconds",
							 "Time of a committing session's merge of its runs into SST files.",
							 &ts_merge_durations);
	ts_metrics_put_histogram(out, "tcopy_publish_seconds",
							 "Time of making a committed session's rows visible in the store.",
							 &ts_publish_durations);
	ts_metrics_put(out, "tcopy_build_info", "gauge", "The tserver's version.",
				   "version=\"" TS_VERSION "\"", 1);
	if (server->shared.group != NULL)
		ts_metrics_put(out, "tcopy_group_leader", "gauge",
					   "1 while this replica group member leads and serves, else 0.", NULL,
					   ts_group_epoch(server->shared.group) != 0 ? 1 : 0);
}

int
ts_server_metrics_listen(TsServer *server, TsStore *store, const TcAddress *addr, char *err,
						 size_t errlen)
{
	struct addrinfo *addrs = NULL;
	char		name[300];
	int			fd;

	if (addr->kind != TC_ADDRESS_TCP)
	{
		snprintf(err, errlen, "--metrics takes tcp:HOST:PORT");
		return -1;
	}
	snprintf(name, sizeof(name), "tcp:%s:%s", addr->host, addr->port);
	if (tc_net_resolve(addr->host, addr->port, true, name, &addrs, err, errlen) != TC_NET_OK)
		return -1;
	fd = tc_net_tcp_listen(addrs, 16, name, err, errlen);
	freeaddrinfo(addrs);
	if (fd < 0)
		return -1;
	tc_net_local_address(fd, name, sizeof(name));
	server->shared.store = store;	/* before the thread reads it */
	server->metrics = ts_metrics_start(fd, server_collect_metrics, server, err, errlen);
	if (server->metrics == NULL)
		return -1;
	ts_log(TS_LOG_INFO, "metrics on %s (GET /metrics)", name);
	return 0;
}

