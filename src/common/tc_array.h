/*
 * tc_array.h
 *		Room for one more element in a malloc'ed array that grows by
 *		doubling: the one way the tserver's registries (claims, prepared
 *		sessions, tenants, a connection's tables) grow.
 */
#ifndef TC_ARRAY_H
#define TC_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Make room for element len of *array, an array of *cap elements of
 * elem_size bytes: when full, realloc'ed to twice *cap (first_cap when
 * empty).  true; false when out of memory, *array and *cap unchanged.
 */
static inline bool
tc_array_reserve(void **array, size_t len, size_t *cap, size_t elem_size, size_t first_cap)
{
	size_t		grown_cap;
	void	   *grown;

	if (len < *cap)
		return true;
	grown_cap = *cap > 0 ? *cap * 2 : first_cap;
	if (grown_cap < *cap || grown_cap > (size_t) -1 / elem_size)
		return false;
	grown = realloc(*array, grown_cap * elem_size);
	if (grown == NULL)
		return false;
	*array = grown;
	*cap = grown_cap;
	return true;
}

#endif							/* TC_ARRAY_H */
