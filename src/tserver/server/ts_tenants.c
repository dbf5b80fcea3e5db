/*
 * ts_tenants.c
 *		What each namespace holds (ts_tenants.h).
 *
 * A short array of entries under one mutex: the namespaces with
 * connections open, looked up by name at a connection's authentication and
 * at its end, never per frame (a connection keeps its entry's address, and
 * charges its frames' decoding to it with atomics).  A namespace whose last
 * connection ends leaves the array, so that it holds no more entries than
 * there are connections.
 */
#include "ts_tenants.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tc_array.h"

void
ts_tenants_init(TsTenants *tenants, int max_connections)
{
	pthread_mutex_init(&tenants->lock, NULL);
	tenants->items = NULL;
	tenants->n = tenants->cap = 0;
	atomic_init(&tenants->max_connections, max_connections);
}

static void
tenant_free(TsTenant *t)
{
	free(t->ns);
	free(t);
}

void
ts_tenants_destroy(TsTenants *tenants)
{
	for (size_t i = 0; i < tenants->n; i++)
		tenant_free(tenants->items[i]);
	free(tenants->items);
	tenants->items = NULL;
	tenants->n = tenants->cap = 0;
	pthread_mutex_destroy(&tenants->lock);
}

/* The index of ns's entry, or -1; with the lock held. */
static ssize_t
tenant_find(TsTenants *tenants, const char *ns, size_t len)
{
	for (size_t i = 0; i < tenants->n; i++)
		if (tenants->items[i]->len == len && memcmp(tenants->items[i]->ns, ns, len) == 0)
			return (ssize_t) i;
	return -1;
}

/* A new entry of ns in the array, or NULL (no memory); with the lock held. */
static TsTenant *
tenant_add(TsTenants *tenants, const char *ns, size_t len)
{
	TsTenant   *t;

	if (!tc_array_reserve((void **) &tenants->items, tenants->n, &tenants->cap,
						  sizeof(TsTenant *), 8))
		return NULL;
	if ((t = calloc(1, sizeof(TsTenant))) == NULL || (t->ns = malloc(len + 1)) == NULL)
	{
		free(t);
		return NULL;
	}
	memcpy(t->ns, ns, len);
	t->ns[len] = '\0';
	t->len = len;
	atomic_init(&t->decode_in_use, 0);
	tenants->items[tenants->n++] = t;
	return t;
}

TsTenant *
ts_tenants_enter(TsTenants *tenants, const char *ns, size_t len, int *open)
{
	TsTenant   *t = NULL;
	ssize_t		i;
	int			max;

	pthread_mutex_lock(&tenants->lock);
	i = tenant_find(tenants, ns, len);
	if (i >= 0)
		t = tenants->items[i];
	else
		t = tenant_add(tenants, ns, len);
	*open = t != NULL ? t->connections : 0;
	max = atomic_load(&tenants->max_connections);
	if (t != NULL && max > 0 && t->connections >= max)
		t = NULL;				/* at its limit: it has connections, it stays */
	else if (t != NULL)
		t->connections++;
	pthread_mutex_unlock(&tenants->lock);
	return t;
}

void
ts_tenants_leave(TsTenants *tenants, TsTenant *tenant)
{
	pthread_mutex_lock(&tenants->lock);
	if (--tenant->connections <= 0)
	{
		ssize_t		i = tenant_find(tenants, tenant->ns, tenant->len);

		if (i >= 0)
			tenants->items[i] = tenants->items[--tenants->n];
		tenant_free(tenant);
	}
	pthread_mutex_unlock(&tenants->lock);
}

int
ts_tenants_connections(TsTenants *tenants, const char *ns, size_t len)
{
	ssize_t		i;
	int			n;

	pthread_mutex_lock(&tenants->lock);
	i = tenant_find(tenants, ns, len);
	n = i >= 0 ? tenants->items[i]->connections : 0;
	pthread_mutex_unlock(&tenants->lock);
	return n;
}
