/*
 * delay_relay.c
 *		A TCP relay that adds a fixed latency, for tests and benchmarks of
 *		tservers on "other machines" (network namespaces of this one).
 *
 * The natural tool, a netem qdisc (tc qdisc add dev X root netem delay D),
 * needs the kernel's sch_netem, which some kernels lack and cannot load
 * (a Firecracker VM booted with nomodule).  This program puts the delay in
 * userspace instead: it listens on one TCP address and forwards each
 * connection it accepts to an upstream TCP address, holding every byte
 * for --delay-us microseconds in each direction, so that a round trip
 * through it takes 2 x delay more.  Bandwidth is not limited: whatever is
 * read is queued as a chunk stamped with its arrival time and written when
 * that time plus the delay has come, however many chunks are in flight
 * (up to RELAY_MAX_QUEUED bytes per direction, beyond which reading
 * pauses: the peer's own backpressure).
 *
 * End of stream travels like data: an EOF read from one side is delayed
 * too, then becomes shutdown(SHUT_WR) of the other side, so half-closed
 * connections behave as they would end to end.  A reset or any other
 * error on either side ends both at once (with a reset of the other side,
 * SO_LINGER 0), as would a lost peer.
 *
 * One thread, ppoll(2) with microsecond timeouts; SIGTERM or SIGINT end
 * it (exit status 0).
 *
 * Usage: delay_relay --listen HOST:PORT --upstream HOST:PORT --delay-us N
 * It prints "relay ready" on stdout once it listens.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RELAY_READ_SIZE (256 * 1024)	/* bytes per read(2) */
#define RELAY_MAX_QUEUED (64 * 1024 * 1024)	/* bytes held per direction */
#define RELAY_READS_PER_WAKEUP 16	/* reads of one side before others run */

/* A chunk read from one side, due at the other; len 0 is the EOF. */
typedef struct Chunk
{
	struct Chunk *next;
	int64_t		due;			/* CLOCK_MONOTONIC, microseconds */
	size_t		len;
	size_t		off;			/* bytes of it already written */
	char		data[];
} Chunk;

/* One direction of a connection: read from src, write to dst. */
typedef struct Direction
{
	int			src;
	int			dst;
	Chunk	   *head;
	Chunk	   *tail;
	size_t		queued;			/* bytes in the queue */
	bool		read_eof;		/* EOF (or its chunk) read from src */
	bool		done;			/* EOF delivered: dst shut for writing */
	bool		blocked;		/* the last write to dst would block */
} Direction;

typedef struct Pair
{
	struct Pair *next;
	int			client;
	int			upstream;
	bool		connecting;		/* upstream connect(2) in progress */
	bool		dead;
	Direction	dir[2];			/* [0] client to upstream, [1] back */
} Pair;

static volatile sig_atomic_t stop_requested = 0;
static int64_t delay_us;
static struct addrinfo *upstream_ai;
static Pair *pairs;
static Chunk *spare;				/* a RELAY_READ_SIZE chunk to read into */

static void
handle_stop(int signo)
{
	stop_requested = 1;
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
die(const char *what)
{
	fprintf(stderr, "delay_relay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
usage(void)
{
	fprintf(stderr, "usage: delay_relay --listen HOST:PORT --upstream HOST:PORT --delay-us N\n");
	exit(2);
}

/* HOST:PORT (HOST may be [v6]) to addrinfo, or exit. */
static struct addrinfo *
resolve(const char *spec, bool passive)
{
	char		host[256];
	const char *colon = strrchr(spec, ':');
	size_t		hlen;
	struct addrinfo hints;
	struct addrinfo *ai;
	int			rc;

	if (colon == NULL || colon == spec || colon[1] == '\0')
		usage();
	hlen = colon - spec;
	if (spec[0] == '[' && colon[-1] == ']')
	{
		spec++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		usage();
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc != 0)
	{
		fprintf(stderr, "delay_relay: %s: %s\n", spec, gai_strerror(rc));
		exit(1);
	}
	return ai;
}

static void
set_socket_options(int fd)
{
	int			one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* chunks are written as they fall due: no waiting for more */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void
free_queue(Direction *d)
{
	while (d->head)
	{
		Chunk	   *c = d->head;

		d->head = c->next;
		free(c);
	}
	d->tail = NULL;
	d->queued = 0;
}

/* End both sides at once; with reset, the peers see a reset, not an EOF. */
static void
kill_pair(Pair *p, bool reset)
{
	int			fds[2] = {p->client, p->upstream};

	for (int i = 0; i < 2; i++)
	{
		if (fds[i] < 0)
			continue;
		if (reset)
		{
			struct linger lg = {1, 0};

			setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(fds[i]);
	}
	free_queue(&p->dir[0]);
	free_queue(&p->dir[1]);
	p->client = p->upstream = -1;
	p->dead = true;
}

/*
 * Queue len bytes read into spare (len 0: the EOF).  A big read is queued
 * as it is, without a copy; a small one is copied into a chunk of its size
 * and spare is read into again.
 */
static void
enqueue(Direction *d, size_t len, int64_t now)
{
	Chunk	   *c;

	if (len >= RELAY_READ_SIZE / 4)
	{
		c = spare;
		spare = NULL;
	}
	else
	{
		c = malloc(sizeof(Chunk) + len);
		if (c == NULL)
			die("malloc");
		memcpy(c->data, spare->data, len);
	}
	c->next = NULL;
	c->due = now + delay_us;
	c->len = len;
	c->off = 0;
	if (d->tail)
		d->tail->next = c;
	else
		d->head = c;
	d->tail = c;
	d->queued += len;
}

/*
 * Read what src has (a few reads at most); false when the pair must end.
 */
static bool
read_side(Direction *d)
{
	for (int i = 0; i < RELAY_READS_PER_WAKEUP && d->queued < RELAY_MAX_QUEUED; i++)
	{
		ssize_t		n;

		if (spare == NULL && (spare = malloc(sizeof(Chunk) + RELAY_READ_SIZE)) == NULL)
			die("malloc");
		n = read(d->src, spare->data, RELAY_READ_SIZE);
		if (n > 0)
		{
			enqueue(d, n, now_us());
			if (n < RELAY_READ_SIZE)
				break;
			continue;
		}
		if (n == 0)
		{
			enqueue(d, 0, now_us());
			d->read_eof = true;
			return true;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return true;
		if (errno == EINTR)
			continue;
		return false;
	}
	return true;
}

/*
 * Write the chunks that are due to dst; false when the pair must end.
 */
static bool
flush_side(Direction *d, int64_t now)
{
	d->blocked = false;
	while (d->head && d->head->due <= now)
	{
		Chunk	   *c = d->head;

		if (c->len == 0)
		{
			shutdown(d->dst, SHUT_WR);
			d->done = true;
		}
		while (c->off < c->len)
		{
			ssize_t		n = write(d->dst, c->data + c->off, c->len - c->off);

			if (n > 0)
			{
				c->off += n;
				d->queued -= n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			{
				d->blocked = true;
				return true;
			}
			return false;
		}
		d->head = c->next;
		if (d->head == NULL)
			d->tail = NULL;
		free(c);
	}
	return true;
}

static void
accept_clients(int listen_fd)
{
	for (;;)
	{
		int			fd = accept(listen_fd, NULL, NULL);
		int			up;
		Pair	   *p;

		if (fd < 0)
		{
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
				errno != ECONNABORTED)
				fprintf(stderr, "delay_relay: accept: %s\n", strerror(errno));
			return;
		}
		set_socket_options(fd);
		up = socket(upstream_ai->ai_family, SOCK_STREAM, 0);
		if (up < 0)
		{
			fprintf(stderr, "delay_relay: socket: %s\n", strerror(errno));
			close(fd);
			continue;
		}
		set_socket_options(up);
		p = calloc(1, sizeof(Pair));
		if (p == NULL)
			die("calloc");
		p->client = fd;
		p->upstream = up;
		p->dir[0].src = p->dir[1].dst = fd;
		p->dir[0].dst = p->dir[1].src = up;
		p->next = pairs;
		pairs = p;
		if (connect(up, upstream_ai->ai_addr, upstream_ai->ai_addrlen) == 0)
			continue;
		if (errno == EINPROGRESS)
			p->connecting = true;
		else
		{
			/* refused: the client sees a reset, as it would end to end */
			kill_pair(p, true);
		}
	}
}

int
main(int argc, char **argv)
{
	const char *listen_spec = NULL;
	const char *upstream_spec = NULL;
	const char *delay_spec = NULL;
	struct addrinfo *listen_ai;
	int			listen_fd;
	int			one = 1;
	struct sigaction sa;
	sigset_t	blocked;
	sigset_t	during_poll;
	struct pollfd *pfds = NULL;
	size_t		pfds_cap = 0;

	for (int i = 1; i < argc; i++)
	{
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--listen") == 0)
			listen_spec = argv[++i];
		else if (strcmp(argv[i], "--upstream") == 0)
			upstream_spec = argv[++i];
		else if (strcmp(argv[i], "--delay-us") == 0)
			delay_spec = argv[++i];
		else
			usage();
	}
	if (!listen_spec || !upstream_spec || !delay_spec)
		usage();
	delay_us = strtoll(delay_spec, NULL, 10);
	if (delay_us < 0)
		usage();
	listen_ai = resolve(listen_spec, true);
	/* wake when a chunk is due, not up to 50 us later (the default slack) */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	/*
	 * Chunks come and go by the thousand a second: from the heap, kept
	 * there once freed, not each mapped and unmapped again (page faults)
	 */
	mallopt(M_MMAP_THRESHOLD, 4 * RELAY_READ_SIZE);
	mallopt(M_TRIM_THRESHOLD, RELAY_MAX_QUEUED);
	upstream_ai = resolve(upstream_spec, false);

	/* SIGTERM and SIGINT are taken only while in ppoll: no lost wakeup */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	sigprocmask(SIG_BLOCK, &blocked, &during_poll);
	sigdelset(&during_poll, SIGTERM);
	sigdelset(&during_poll, SIGINT);

	listen_fd = socket(listen_ai->ai_family, SOCK_STREAM, 0);
	if (listen_fd < 0)
		die("socket");
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, listen_ai->ai_addr, listen_ai->ai_addrlen) < 0)
		die(listen_spec);
	if (listen(listen_fd, 128) < 0)
		die("listen");
	fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
	printf("relay ready\n");
	fflush(stdout);

	while (!stop_requested)
	{
		int64_t		now = now_us();
		int64_t		next_due = -1;
		size_t		n = 0;
		size_t		npairs = 0;
		Pair	  **pp;
		struct timespec timeout;
		int			rc;

		/* write what is due; drop the pairs that are over */
		pp = &pairs;
		while (*pp)
		{
			Pair	   *p = *pp;

			if (!p->dead && !p->connecting)
			{
				for (int i = 0; i < 2 && !p->dead; i++)
				{
					if (!flush_side(&p->dir[i], now))
						kill_pair(p, true);
				}
				if (!p->dead && p->dir[0].done && p->dir[1].done)
					kill_pair(p, false);
			}
			if (p->dead)
			{
				*pp = p->next;
				free(p);
				continue;
			}
			npairs++;
			pp = &p->next;
		}

		if (pfds_cap < 1 + 2 * npairs)
		{
			pfds_cap = 2 * (1 + 2 * npairs);
			pfds = realloc(pfds, pfds_cap * sizeof(struct pollfd));
			if (pfds == NULL)
				die("realloc");
		}
		pfds[n].fd = listen_fd;
		pfds[n].events = POLLIN;
		n++;
		for (Pair *p = pairs; p; p = p->next)
		{
			short		ev[2] = {0, 0};	/* client, upstream */

			if (p->connecting)
				ev[1] |= POLLOUT;
			for (int i = 0; i < 2; i++)
			{
				Direction  *d = &p->dir[i];
				int			src = i == 0 ? 0 : 1;

				if (!d->read_eof && d->queued < RELAY_MAX_QUEUED)
					ev[src] |= POLLIN;
				if (p->connecting || d->head == NULL)
					continue;
				if (d->blocked)
					ev[1 - src] |= POLLOUT;
				else if (next_due < 0 || d->head->due < next_due)
					next_due = d->head->due;
			}
			pfds[n].fd = ev[0] ? p->client : -1;
			pfds[n].events = ev[0];
			n++;
			pfds[n].fd = ev[1] ? p->upstream : -1;
			pfds[n].events = ev[1];
			n++;
		}

		if (next_due >= 0)
		{
			int64_t		wait = next_due - now;

			if (wait < 0)
				wait = 0;
			timeout.tv_sec = wait / 1000000;
			timeout.tv_nsec = (wait % 1000000) * 1000;
		}
		rc = ppoll(pfds, n, next_due >= 0 ? &timeout : NULL, &during_poll);
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			die("ppoll");
		}
		if (rc == 0)
			continue;

		n = 1;
		for (Pair *p = pairs; p; p = p->next)
		{
			short		rev[2] = {pfds[n].revents, pfds[n + 1].revents};

			n += 2;
			if (p->connecting && rev[1])
			{
				int			err = 0;
				socklen_t	len = sizeof(err);

				getsockopt(p->upstream, SOL_SOCKET, SO_ERROR, &err, &len);
				if (err != 0)
				{
					kill_pair(p, true);
					continue;
				}
				p->connecting = false;
			}
			for (int i = 0; i < 2 && !p->dead; i++)
			{
				Direction  *d = &p->dir[i];

				if (rev[i] && !d->read_eof && !read_side(d))
					kill_pair(p, true);
			}
		}
		if (pfds[0].revents)
			accept_clients(listen_fd);
	}

	for (Pair *p = pairs; p; p = p->next)
		if (!p->dead)
			kill_pair(p, false);
	close(listen_fd);
	return 0;
}
