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
 * Whether text is the null: transport; the one test for it, so that every
 * caller agrees with tc_address_parse.  text may be NULL (false).
 */
bool		tc_address_is_null(const char *text);

#endif							/* TC_ADDRESS_H */
