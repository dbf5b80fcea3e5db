/*
 * ts_tenants.h
 *		The connections of each namespace (scoped tokens), so that no tenant
 *		takes every connection (--max-namespace-connections; issue 32).
 */
#ifndef TS_TENANTS_H
#define TS_TENANTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define TS_DEFAULT_MAX_NAMESPACE_CONNECTIONS 64

typedef struct TsTenant
{
	char	   *ns;				/* the namespace, NUL-terminated */
	size_t		len;
	int			connections;	/* authenticated under it, open now */
} TsTenant;

typedef struct TsTenants
{
	pthread_mutex_t lock;
	TsTenant   *items;			/* those with connections; [n] of [cap] */
	size_t		n;
	size_t		cap;
	atomic_int	max_connections;	/* per namespace (a reload may change it);
									 * 0: none (a zeroed TsTenants) */
} TsTenants;

void		ts_tenants_init(TsTenants *tenants, int max_connections);
void		ts_tenants_destroy(TsTenants *tenants);

/*
 * Count one more connection of namespace ns (len bytes): 0, or -1 when the
 * namespace has its limit's worth open already (or no memory): *open then
 * says how many are.
 */
int			ts_tenants_enter(TsTenants *tenants, const char *ns, size_t len, int *open);

/* One connection of namespace ns, counted by ts_tenants_enter, is gone. */
void		ts_tenants_leave(TsTenants *tenants, const char *ns, size_t len);

/* The connections of namespace ns open now. */
int			ts_tenants_connections(TsTenants *tenants, const char *ns, size_t len);

#endif							/* TS_TENANTS_H */
