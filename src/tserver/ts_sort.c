/*
 * ts_sort.c
 *		Sorting a session's staged records by key: see ts_sort.h.
 *
 * A spill of shuffled rows sorts some hundred thousand records scattered
 * over tens of megabytes.  Sorting their offsets with qsort_r and a
 * comparison that loads both keys from the buffer spent most of a shuffled
 * load's CPU in cache misses, memcmp calls and the comparison's indirect
 * calls.  Here each record becomes a 24-byte entry holding the first 16
 * bytes of its key as two big-endian integers (ts_key.h), its length
 * and its offset, and the entries are sorted in place by an introsort with
 * the comparison inlined: most comparisons are two integer compares on
 * entries next to each other.  Only keys equal in their first 16 bytes
 * (long text keys, say) are compared in the buffer.  Comparing zero-padded
 * prefixes never orders two keys against their byte order: where the
 * prefixes differ, the keys differ at that byte, or the shorter key ended
 * there and the longer one has a non-zero byte, and sorts after it.
 */
#include "ts_sort.h"

#include <stdbool.h>
#include <stdlib.h>

#include "ts_key.h"
#include "ts_record.h"

#define SMALL_SORT 16			/* partitions this small: insertion sort */

typedef struct SortEntry
{
	TsKeyPrefix prefix;
	uint32_t	keylen;
	uint32_t	offset;
} SortEntry;

/* <0, 0, >0 as a sorts before, with or after b; 0 only for a == b. */
static inline int
entry_compare(const SortEntry *a, const SortEntry *b, const uint8_t *base)
{
	int			cmp = ts_key_compare_prefixed(&a->prefix,
											  ts_record_key(base + a->offset), a->keylen,
											  &b->prefix,
											  ts_record_key(base + b->offset), b->keylen);

	if (cmp != 0)
		return cmp;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

static inline void
entry_swap(SortEntry *a, SortEntry *b)
{
	SortEntry	t = *a;

	*a = *b;
	*b = t;
}

static void
insertion_sort(SortEntry *a, size_t n, const uint8_t *base)
{
	for (size_t i = 1; i < n; i++)
	{
		SortEntry	e = a[i];
		size_t		j = i;

		while (j > 0 && entry_compare(&e, &a[j - 1], base) < 0)
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = e;
	}
}

static void
sift_down(SortEntry *a, size_t n, size_t i, const uint8_t *base)
{
	for (;;)
	{
		size_t		child = 2 * i + 1;

		if (child >= n)
			return;
		if (child + 1 < n && entry_compare(&a[child], &a[child + 1], base) < 0)
			child++;
		if (entry_compare(&a[i], &a[child], base) >= 0)
			return;
		entry_swap(&a[i], &a[child]);
		i = child;
	}
}

static void
heap_sort(SortEntry *a, size_t n, const uint8_t *base)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(a, n, i, base);
	for (size_t end = n; end-- > 1;)
	{
		entry_swap(&a[0], &a[end]);
		sift_down(a, end, 0, base);
	}
}

/* Quicksort (median of three, Hoare partition) down to SMALL_SORT, with
 * heapsort when the recursion gets too deep, then insertion sort. */
static void
intro_sort(SortEntry *a, size_t n, int depth, const uint8_t *base)
{
	while (n > SMALL_SORT)
	{
		SortEntry	pivot;
		size_t		mid = n / 2,
					i,
					j;

		if (depth-- == 0)
		{
			heap_sort(a, n, base);
			return;
		}
		/* order a[0], a[mid], a[n-1]; the median is the pivot */
		if (entry_compare(&a[mid], &a[0], base) < 0)
			entry_swap(&a[mid], &a[0]);
		if (entry_compare(&a[n - 1], &a[mid], base) < 0)
		{
			entry_swap(&a[n - 1], &a[mid]);
			if (entry_compare(&a[mid], &a[0], base) < 0)
				entry_swap(&a[mid], &a[0]);
		}
		pivot = a[mid];
		i = 0;
		j = n - 1;
		for (;;)
		{
			while (entry_compare(&a[i], &pivot, base) < 0)
				i++;
			while (entry_compare(&pivot, &a[j], base) < 0)
				j--;
			if (i >= j)
				break;
			entry_swap(&a[i], &a[j]);
			i++;
			j--;
		}
		/* a[0..j] <= pivot <= a[j+1..n-1]: recurse into the smaller side */
		if (j + 1 < n - (j + 1))
		{
			intro_sort(a, j + 1, depth, base);
			a += j + 1;
			n -= j + 1;
		}
		else
		{
			intro_sort(a + j + 1, n - (j + 1), depth, base);
			n = j + 1;
		}
	}
	insertion_sort(a, n, base);
}

int
ts_sort_records(const uint8_t *base, uint32_t *offsets, size_t n)
{
	SortEntry  *entries;
	int			depth = 0;

	if (n < 2)
		return 0;
	entries = malloc(n * sizeof(SortEntry));
	if (entries == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = base + offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);

		entries[i].prefix = ts_key_prefix(ts_record_key(rec), keylen);
		entries[i].keylen = keylen;
		entries[i].offset = offsets[i];
	}
	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	intro_sort(entries, n, depth, base);
	for (size_t i = 0; i < n; i++)
		offsets[i] = entries[i].offset;
	free(entries);
	return 0;
}
