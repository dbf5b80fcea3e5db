/*
 * tc_address.h
 *		Addresses of tservers, as the extension's options, tserver --listen
 *		and tserver-cli --address spell them (no Postgres headers).
 *
 *   unix:PATH       a unix socket
 *   tcp:HOST:PORT   TCP; HOST may be [IPv6]; for a listener, * is every
 *                   local address
 *   null:           no server at all: a client-side transport that
 *                   discards every batch (for measurements)
 */
#ifndef TC_ADDRESS_H
#define TC_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum TcAddressKind
{
	TC_ADDRESS_UNIX,
	TC_ADDRESS_TCP,
	TC_ADDRESS_NULL
} TcAddressKind;

typedef struct TcAddress
{
	TcAddressKind kind;
	char		path[108];		/* unix: socket path (sun_path's size) */
	char		host[256];		/* tcp: host name or address, no brackets */
	char		port[16];		/* tcp: port as text */
} TcAddress;

/* Parse an address; false with a message in err when it is not valid. */
bool		tc_address_parse(const char *text, TcAddress *addr,
							 char *err, size_t errlen);

/*
 * A replica group's members, "ADDRESS,ADDRESS,..." (docs/replication.md),
 * or one address: each parsed into addrs[TC_ADDRESS_LIST_MAX], *n of them.
 * null: is not a member.  False with a message in err.
 */
#define TC_ADDRESS_LIST_MAX 7
bool		tc_address_list_parse(const char *text, TcAddress *addrs, int *n,
								  char *err, size_t errlen);

/*
 * Whether text is the null: transport; the one test for it, so that every
 * caller agrees with tc_address_parse.  text may be NULL (false).
 */
bool		tc_address_is_null(const char *text);

/*
 * Whether addresses a and b reach the same tserver as far as the local
 * system can tell: the same text; unix: sockets whose paths resolve to
 * the same file (realpath, so "./" and symbolic links do not matter);
 * tcp: the same port and a host address in common (getaddrinfo, so
 * "localhost" and "127.0.0.1" are one).  Where a path or host cannot be
 * resolved, only the same text is the same server.
 */
bool		tc_address_same_server(const char *a, const char *b);

#endif							/* TC_ADDRESS_H */
