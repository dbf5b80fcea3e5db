/*
 * ts_tenants.h
 *		What each namespace (scoped tokens) holds of what all connections
 *		share, so that no tenant takes all of it (issue 32): its
 *		authenticated connections (--max-namespace-connections) and its
 *		share of the decoding memory (half of --decode-memory-mb).
 */
#ifndef TS_TENANTS_H
#define TS_TENANTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define TS_DEFAULT_MAX_NAMESPACE_CONNECTIONS 64

/* A namespace with connections open; its address is stable while it has. */
typedef struct TsTenant
{
	char	   *ns;				/* the namespace, NUL-terminated */
	size_t		len;
	int			connections;	/* authenticated under it, open now (the
								 * registry's lock) */
	atomic_size_t decode_in_use;	/* bytes its connections' frames unpack
									 * into now */
} TsTenant;

typedef struct TsTenants
{
	pthread_mutex_t lock;
	TsTenant  **items;			/* those with connections; [n] of [cap] */
	size_t		n;
	size_t		cap;
	atomic_int	max_connections;	/* per namespace (a reload may change it);
									 * 0: none (a zeroed TsTenants) */
} TsTenants;

void		ts_tenants_init(TsTenants *tenants, int max_connections);
void		ts_tenants_destroy(TsTenants *tenants);

/*
 * Count one more connection of namespace ns (len bytes): its entry, or
 * NULL when the namespace has its limit's worth open already (or no
 * memory): *open then says how many are.
 */
TsTenant   *ts_tenants_enter(TsTenants *tenants, const char *ns, size_t len, int *open);

/* One connection of tenant, counted by ts_tenants_enter, is gone. */
void		ts_tenants_leave(TsTenants *tenants, TsTenant *tenant);

/* The connections of namespace ns open now. */
int			ts_tenants_connections(TsTenants *tenants, const char *ns, size_t len);

#endif							/* TS_TENANTS_H */
