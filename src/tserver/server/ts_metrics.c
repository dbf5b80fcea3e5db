/*
 * ts_metrics.c
 *		The metrics endpoint (ts_metrics.h): a minimal HTTP/1.0 server for
 *		Prometheus' scrapes, on a thread of its own.
 *
 * One connection at a time, one request each, then closed: a scrape
 * every few seconds needs no more.  A client must send its request line
 * within READ_TIMEOUT_MS and take the answer within as long, and may send
 * at most REQUEST_MAX bytes of request: a slow or hostile one costs a
 * scrape a few seconds at most, and nothing else of the tserver.
 */
#include "ts_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_log.h"

#define READ_TIMEOUT_MS 2000
#define REQUEST_MAX 8192

struct TsMetrics
{
	int			fd;
	int			wake[2];		/* written by ts_metrics_stop */
	pthread_t	thread;
	TsMetricsCollect collect;
	void	   *arg;
};

/* Append line to out; left out when out of memory, as a scrape may be. */
static void
put_line(TcBuf *out, const char *line)
{
	size_t		len = strlen(line);

	if (tc_buf_reserve(out, len))
	{
		memcpy(out->data + out->len, line, len);
		out->len += len;
	}
}

void
ts_metrics_put(TcBuf *out, const char *name, const char *type, const char *help,
			   const char *labels, double value)
{
	char		line[512];
	int			n = 0;

	if (help != NULL)
		n = snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	if (n < 0 || (size_t) n >= sizeof(line))
		n = 0;
	snprintf(line + n, sizeof(line) - (size_t) n, "%s%s%s%s %.15g\n", name,
			 labels != NULL ? "{" : "", labels != NULL ? labels : "", labels != NULL ? "}" : "",
			 value);
	put_line(out, line);
}

void
ts_metrics_put_histogram(TcBuf *out, const char *name, const char *help, TsHistogram *hist)
{
	TsHistogramRead read;
	char		line[512];

	ts_histogram_read(hist, &read);
	snprintf(line, sizeof(line), "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	put_line(out, line);
	/* the bounds as Prometheus' clients write them: "0.005", "1", "60" */
	for (int b = 0; b < TS_HISTOGRAM_BOUNDS; b++)
	{
		snprintf(line, sizeof(line), "%s_bucket{le=\"%.15g\"} %" PRIu64 "\n", name,
				 ts_histogram_bounds_us[b] / 1e6, read.cumulative[b]);
		put_line(out, line);
	}
	snprintf(line, sizeof(line), "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.15g\n"
			 "%s_count %" PRIu64 "\n", name, read.cumulative[TS_HISTOGRAM_BOUNDS],
			 name, read.sum_us / 1e6, name, read.count);
	put_line(out, line);
}

/* Send an answer with status (e.g. "200 OK") and body, then the caller closes. */
static void
answer(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char		head[256];
	int			n = snprintf(head, sizeof(head),
							 "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
							 "Connection: close\r\n\r\n", status, type, len);

	if (tc_net_write_all(fd, head, (size_t) n))
		(void) tc_net_write_all(fd, body, len);
}

/* Read the request until its head ends; its length, or -1. */
static ssize_t
read_request(int fd, char *buf, size_t size)
{
	size_t		have = 0;

	while (have < size - 1)
	{
		ssize_t		n = read(fd, buf + have, size - 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		have += (size_t) n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL || strstr(buf, "\n\n") != NULL)
			return (ssize_t) have;
	}
	return -1;					/* too long */
}

/* Answer one connection. */
static void
serve(TsMetrics *metrics, int fd)
{
	char		request[REQUEST_MAX];
	char	   *space;
	char	   *path;
	TcBuf		body = {0};

	(void) tc_net_set_recv_timeout(fd, READ_TIMEOUT_MS / 1000, NULL, 0);
	(void) tc_net_set_send_timeout(fd, READ_TIMEOUT_MS / 1000, NULL, 0);
	if (read_request(fd, request, sizeof(request)) < 0)
	{
		const char *msg = "a request line and headers, at most 8 KB, within 2 s\n";

		answer(fd, "400 Bad Request", "text/plain", msg, strlen(msg));
		return;
	}
	space = strchr(request, ' ');
	path = space != NULL ? space + 1 : NULL;
	if (space == NULL || (size_t) (space - request) != 3 || strncmp(request, "GET", 3) != 0)
	{
		const char *msg = "only GET /metrics\n";

		answer(fd, "405 Method Not Allowed", "text/plain", msg, strlen(msg));
		return;
	}
	if (strncmp(path, "/metrics", 8) != 0 ||
		(path[8] != ' ' && path[8] != '?' && path[8] != '\r' && path[8] != '\n'))
	{
		const char *msg = "not found: the metrics are at /metrics\n";

		answer(fd, "404 Not Found", "text/plain", msg, strlen(msg));
		return;
	}
	metrics->collect(metrics->arg, &body);
	answer(fd, "200 OK", "text/plain; version=0.0.4", body.data != NULL ? (const char *) body.data : "",
		   body.len);
	tc_buf_free(&body);
}

static void *
metrics_main(void *arg)
{
	TsMetrics  *metrics = arg;

	for (;;)
	{
		struct pollfd pfds[2] = {{.fd = metrics->wake[0], .events = POLLIN},
		{.fd = metrics->fd, .events = POLLIN}};
		int			fd;

		if (poll(pfds, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfds[0].revents != 0)
			break;
		if ((pfds[1].revents & POLLIN) == 0)
			continue;
		fd = accept4(metrics->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve(metrics, fd);
		close(fd);
	}
	return NULL;
}

TsMetrics *
ts_metrics_start(int listen_fd, TsMetricsCollect collect, void *arg, char *err, size_t errlen)
{
	TsMetrics  *metrics = calloc(1, sizeof(TsMetrics));

	if (metrics == NULL || pipe2(metrics->wake, O_CLOEXEC) != 0)
	{
		snprintf(err, errlen, "could not start the metrics listener: %s", strerror(errno));
		free(metrics);
		close(listen_fd);
		return NULL;
	}
	metrics->fd = listen_fd;
	metrics->collect = collect;
	metrics->arg = arg;
	if (pthread_create(&metrics->thread, NULL, metrics_main, metrics) != 0)
	{
		snprintf(err, errlen, "could not start the metrics thread");
		close(metrics->wake[0]);
		close(metrics->wake[1]);
		close(listen_fd);
		free(metrics);
		return NULL;
	}
	return metrics;
}

void
ts_metrics_stop(TsMetrics *metrics)
{
	ssize_t		rc;

	if (metrics == NULL)
		return;
	rc = write(metrics->wake[1], "s", 1);
	(void) rc;
	pthread_join(metrics->thread, NULL);
	close(metrics->wake[0]);
	close(metrics->wake[1]);
	close(metrics->fd);
	free(metrics);
}
