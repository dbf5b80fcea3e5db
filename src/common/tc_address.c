/*
 * tc_address.c
 *		Parsing of tserver addresses.
 */
#include "tc_address.h"

#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define TC_ADDRESS_NULL_TEXT "null:"

bool
tc_address_is_null(const char *text)
{
	return text != NULL && strcmp(text, TC_ADDRESS_NULL_TEXT) == 0;
}

/* unix:PATH; path is text after the scheme. */
static bool
address_parse_unix(const char *text, const char *path, TcAddress *addr,
				   char *err, size_t errlen)
{
	if (path[0] == '\0' || strlen(path) >= sizeof(addr->path))
	{
		snprintf(err, errlen, "unix socket path in \"%s\" is empty or longer than %zu bytes",
				 text, sizeof(addr->path) - 1);
		return false;
	}
	addr->kind = TC_ADDRESS_UNIX;
	strcpy(addr->path, path);
	return true;
}

/*
 * tcp:HOST:PORT; hostport is text after the scheme.  The port is the part
 * after the last colon, so that a bracketed IPv6 host keeps its colons.
 */
static bool
address_parse_tcp(const char *text, const char *hostport, TcAddress *addr,
				  char *err, size_t errlen)
{
	const char *colon = strrchr(hostport, ':');
	const char *host = hostport;
	size_t		hostlen;

	if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) > 5 ||
		strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
		atoi(colon + 1) > 65535)
	{
		snprintf(err, errlen, "address \"%s\" needs the form tcp:HOST:PORT", text);
		return false;
	}
	hostlen = (size_t) (colon - hostport);
	/* [::1]:5433 */
	if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']')
	{
		host++;
		hostlen -= 2;
	}
	if (memchr(host, '[', hostlen) != NULL || memchr(host, ']', hostlen) != NULL)
	{
		snprintf(err, errlen, "host in \"%s\" has unbalanced brackets", text);
		return false;
	}
	if (hostlen == 0 || hostlen >= sizeof(addr->host))
	{
		snprintf(err, errlen, "host in \"%s\" is empty or too long", text);
		return false;
	}
	addr->kind = TC_ADDRESS_TCP;
	memcpy(addr->host, host, hostlen);
	addr->host[hostlen] = '\0';
	strcpy(addr->port, colon + 1);
	return true;
}

bool
tc_address_parse(const char *text, TcAddress *addr, char *err, size_t errlen)
{
	memset(addr, 0, sizeof(*addr));
	if (strncmp(text, "unix:", 5) == 0)
		return address_parse_unix(text, text + 5, addr, err, errlen);
	if (strncmp(text, "tcp:", 4) == 0)
		return address_parse_tcp(text, text + 4, addr, err, errlen);
	if (tc_address_is_null(text))
	{
		addr->kind = TC_ADDRESS_NULL;
		return true;
	}
	snprintf(err, errlen, "address \"%s\" has an unknown scheme (expected unix:PATH, tcp:HOST:PORT or null:)", text);
	return false;
}

bool
tc_address_list_parse(const char *text, TcAddress *addrs, int *n, char *err, size_t errlen)
{
	const char *start = text;

	*n = 0;
	if (strchr(text, ',') == NULL)
	{
		*n = 1;
		return tc_address_parse(text, &addrs[0], err, errlen);
	}
	for (;;)
	{
		const char *comma = strchr(start, ',');
		size_t		len = comma != NULL ? (size_t) (comma - start) : strlen(start);
		char		member[512];

		if (*n == TC_ADDRESS_LIST_MAX)
		{
			snprintf(err, errlen, "address \"%s\" names more than %d members", text,
					 TC_ADDRESS_LIST_MAX);
			return false;
		}
		if (len == 0 || len >= sizeof(member))
		{
			snprintf(err, errlen, "address \"%s\" has an empty or overlong member", text);
			return false;
		}
		memcpy(member, start, len);
		member[len] = '\0';
		if (!tc_address_parse(member, &addrs[*n], err, errlen))
			return false;
		if (addrs[*n].kind == TC_ADDRESS_NULL)
		{
			snprintf(err, errlen, "address \"%s\": null: cannot be a member of a replica group",
					 text);
			return false;
		}
		(*n)++;
		if (comma == NULL)
			return true;
		start = comma + 1;
	}
}

/* Whether two unix socket paths name the same file. */
static bool
address_same_socket(const char *a, const char *b)
{
	char		ra[PATH_MAX];
	char		rb[PATH_MAX];

	return realpath(a, ra) != NULL && realpath(b, rb) != NULL && strcmp(ra, rb) == 0;
}

/* Whether two hosts (the same port) share an address. */
static bool
address_same_host(const char *a, const char *b)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	struct addrinfo *la = NULL;
	struct addrinfo *lb = NULL;
	bool		same = false;

	if (getaddrinfo(a, NULL, &hints, &la) != 0)
		return false;
	if (getaddrinfo(b, NULL, &hints, &lb) == 0)
	{
		for (struct addrinfo *x = la; x != NULL && !same; x = x->ai_next)
		{
			for (struct addrinfo *y = lb; y != NULL && !same; y = y->ai_next)
				same = x->ai_family == y->ai_family && x->ai_addrlen == y->ai_addrlen &&
					memcmp(x->ai_addr, y->ai_addr, x->ai_addrlen) == 0;
		}
		freeaddrinfo(lb);
	}
	freeaddrinfo(la);
	return same;
}

bool
tc_address_same_server(const char *a, const char *b)
{
	TcAddress	aa;
	TcAddress	ab;
	char		err[256];

	if (strcmp(a, b) == 0)
		return true;
	if (!tc_address_parse(a, &aa, err, sizeof(err)) ||
		!tc_address_parse(b, &ab, err, sizeof(err)) || aa.kind != ab.kind)
		return false;
	if (aa.kind == TC_ADDRESS_UNIX)
		return address_same_socket(aa.path, ab.path);
	if (aa.kind == TC_ADDRESS_TCP)
		return strcmp(aa.port, ab.port) == 0 && address_same_host(aa.host, ab.host);
	return false;
}
