/*
 * ts_tenants.c
 *		The connections of each namespace (ts_tenants.h).
 *
 * A short array under one mutex: the namespaces with connections open,
 * looked up by name at a connection's authentication and at its end, never
 * per frame.  A namespace whose last connection ends leaves the array, so
 * that it holds no more entries than there are connections.
 */
#include "ts_tenants.h"

#include <stdlib.h>
#include <string.h>

void
ts_tenants_init(TsTenants *tenants, int max_connections)
{
	pthread_mutex_init(&tenants->lock, NULL);
	tenants->items = NULL;
	tenants->n = tenants->cap = 0;
	atomic_init(&tenants->max_connections, max_connections);
}

void
ts_tenants_destroy(TsTenants *tenants)
{
	for (size_t i = 0; i < tenants->n; i++)
		free(tenants->items[i].ns);
	free(tenants->items);
	tenants->items = NULL;
	tenants->n = tenants->cap = 0;
	pthread_mutex_destroy(&tenants->lock);
}

/* The entry of ns, or NULL; with the lock held. */
static TsTenant *
tenant_find(TsTenants *tenants, const char *ns, size_t len)
{
	for (size_t i = 0; i < tenants->n; i++)
		if (tenants->items[i].len == len && memcmp(tenants->items[i].ns, ns, len) == 0)
			return &tenants->items[i];
	return NULL;
}

int
ts_tenants_enter(TsTenants *tenants, const char *ns, size_t len, int *open)
{
	TsTenant   *t;
	int			rc = -1;
	int			max;

	pthread_mutex_lock(&tenants->lock);
	t = tenant_find(tenants, ns, len);
	if (t == NULL)
	{
		if (tenants->n == tenants->cap)
		{
			size_t		cap = tenants->cap ? tenants->cap * 2 : 8;
			TsTenant   *grown = realloc(tenants->items, cap * sizeof(TsTenant));

			if (grown == NULL)
				goto done;
			tenants->items = grown;
			tenants->cap = cap;
		}
		t = &tenants->items[tenants->n];
		if ((t->ns = malloc(len + 1)) == NULL)
			goto done;
		memcpy(t->ns, ns, len);
		t->ns[len] = '\0';
		t->len = len;
		t->connections = 0;
		tenants->n++;
	}
	*open = t->connections;
	max = atomic_load(&tenants->max_connections);
	if (max <= 0 || t->connections < max)
	{
		t->connections++;
		rc = 0;
	}
done:
	pthread_mutex_unlock(&tenants->lock);
	return rc;
}

void
ts_tenants_leave(TsTenants *tenants, const char *ns, size_t len)
{
	TsTenant   *t;

	pthread_mutex_lock(&tenants->lock);
	t = tenant_find(tenants, ns, len);
	if (t != NULL && --t->connections <= 0)
	{
		free(t->ns);
		*t = tenants->items[--tenants->n];
	}
	pthread_mutex_unlock(&tenants->lock);
}

int
ts_tenants_connections(TsTenants *tenants, const char *ns, size_t len)
{
	TsTenant   *t;
	int			n;

	pthread_mutex_lock(&tenants->lock);
	t = tenant_find(tenants, ns, len);
	n = t != NULL ? t->connections : 0;
	pthread_mutex_unlock(&tenants->lock);
	return n;
}
