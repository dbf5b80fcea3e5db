/*
 * ts_sort.c
 *		Sorting a session's staged records by key: see ts_staging.h.
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
 *
 * Where few of the prefixes' 16 bytes differ between entries (a table's
 * integer keys: the table id and the high bytes of the integer are the
 * same in every entry, 3 bytes vary for 10M rows), the entries are
 * radix-sorted on the bytes that vary instead, least significant first,
 * one counting pass each; the passes are stable, and only groups of equal
 * prefixes are then sorted by the comparison (which looks past the prefix,
 * at the lengths and the offsets).  Up to 4 varying bytes, each entry is
 * first packed into one 8-byte integer (the bytes above the offset), which
 * is what the passes move; up to RADIX_MAX_PASSES, the entries themselves,
 * into a second array and back.  Past that (text keys), or without memory
 * for the passes, the introsort alone.
 */
#include "ts_sort.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ts_key.h"
#include "ts_record.h"

#define SMALL_SORT 16			/* partitions this small: insertion sort */
#define RADIX_MIN 1024			/* fewer entries: the introsort alone */
#define RADIX_MAX_PASSES 6		/* more prefix bytes varying: the introsort */

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

/* Byte b (0: most significant) of the prefix's 16 bytes. */
static inline unsigned
prefix_byte(const TsKeyPrefix *prefix, int b)
{
	return b < 8 ? (unsigned) (prefix->hi >> (56 - 8 * b)) & 0xFF :
		(unsigned) (prefix->lo >> (120 - 8 * b)) & 0xFF;
}

/*
 * The prefix bytes that are not the same in every entry, least significant
 * first, into bytes; returns how many.
 */
static int
varying_bytes(const SortEntry *entries, size_t n, int *bytes)
{
	uint64_t	vary_hi = 0,
				vary_lo = 0;
	int			nbytes = 0;

	for (size_t i = 1; i < n; i++)
	{
		vary_hi |= entries[i].prefix.hi ^ entries[0].prefix.hi;
		vary_lo |= entries[i].prefix.lo ^ entries[0].prefix.lo;
	}
	for (int b = TS_KEY_PREFIX_SIZE - 1; b >= 0; b--)
	{
		uint64_t	vary = b < 8 ? vary_hi >> (56 - 8 * b) : vary_lo >> (120 - 8 * b);

		if ((vary & 0xFF) != 0)
			bytes[nbytes++] = b;
	}
	return nbytes;
}

/* Sort a[n], of equal prefixes, by the comparison. */
static void
sort_tie(SortEntry *a, size_t n, const uint8_t *base)
{
	int			depth = 0;

	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	intro_sort(a, n, depth, base);
}

/*
 * At most 4 bytes vary: each entry becomes one integer, those bytes above
 * its record's offset, radix-sorted on the bytes (8-byte items: a third of
 * the entries' traffic), so that the offsets come out in order.  Entries
 * of equal prefixes (the integers' upper halves) are then sorted by the
 * comparison, which looks past the prefix.  0, or -1 when out of memory.
 */
static int
radix_sort_narrow(const SortEntry *entries, size_t n, const int *bytes, int npasses,
				  const uint8_t *base, uint32_t *offsets)
{
	uint64_t   *items = malloc(2 * n * sizeof(uint64_t));
	uint64_t   *from = items,
			   *to = items + n;
	uint32_t	counts[4][256];

	if (items == NULL)
		return -1;
	memset(counts, 0, sizeof(counts));
	for (size_t i = 0; i < n; i++)
	{
		uint64_t	digits = 0;

		for (int p = 0; p < npasses; p++)
		{
			unsigned	d = prefix_byte(&entries[i].prefix, bytes[p]);

			digits |= (uint64_t) d << (8 * p);
			counts[p][d]++;
		}
		items[i] = digits << 32 | entries[i].offset;
	}
	for (int p = 0; p < npasses; p++)
	{
		uint32_t	sum = 0;
		uint64_t   *swap;

		for (int v = 0; v < 256; v++)
		{
			uint32_t	c = counts[p][v];

			counts[p][v] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[counts[p][(from[i] >> (32 + 8 * p)) & 0xFF]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	for (size_t i = 0; i < n;)
	{
		size_t		j = i + 1;

		while (j < n && from[j] >> 32 == from[i] >> 32)
			j++;
		if (j - i > 1)
		{
			/* equal prefixes: the keys' rest, their lengths, their offsets */
			SortEntry  *tie = malloc((j - i) * sizeof(SortEntry));

			if (tie == NULL)
			{
				free(items);
				return -1;
			}
			for (size_t m = i; m < j; m++)
			{
				const uint8_t *rec = base + (uint32_t) from[m];

				tie[m - i].keylen = ts_record_keylen(rec);
				tie[m - i].prefix = ts_key_prefix(ts_record_key(rec), tie[m - i].keylen);
				tie[m - i].offset = (uint32_t) from[m];
			}
			sort_tie(tie, j - i, base);
			for (size_t m = i; m < j; m++)
				from[m] = tie[m - i].offset;
			free(tie);
		}
		i = j;
	}
	for (size_t i = 0; i < n; i++)
		offsets[i] = (uint32_t) from[i];
	free(items);
	return 0;
}

/*
 * Up to RADIX_MAX_PASSES bytes vary: sort entries[n] by their prefixes
 * alone, least significant byte first, one counting pass per varying
 * byte, into scratch and back; stable.  Then each group of equal prefixes
 * by the comparison.  Returns where the sorted entries are (entries or
 * scratch), or NULL when out of memory, having done nothing.
 */
static SortEntry *
radix_sort_wide(SortEntry *entries, SortEntry *scratch, size_t n, const int *bytes,
				int npasses, const uint8_t *base)
{
	uint32_t	(*counts)[256] = calloc(npasses, sizeof(*counts));
	SortEntry  *from = entries,
			   *to = scratch;

	if (counts == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (int p = 0; p < npasses; p++)
			counts[p][prefix_byte(&entries[i].prefix, bytes[p])]++;
	for (int p = 0; p < npasses; p++)
	{
		size_t		sum = 0;
		SortEntry  *swap;

		for (int v = 0; v < 256; v++)
		{
			uint32_t	c = counts[p][v];

			counts[p][v] = (uint32_t) sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[counts[p][prefix_byte(&from[i].prefix, bytes[p])]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	free(counts);
	for (size_t i = 0; i < n;)
	{
		size_t		j = i + 1;

		while (j < n && from[j].prefix.hi == from[i].prefix.hi &&
			   from[j].prefix.lo == from[i].prefix.lo)
			j++;
		if (j - i > 1)
			sort_tie(from + i, j - i, base);
		i = j;
	}
	return from;
}

int
ts_sort_records(const uint8_t *base, uint32_t *offsets, size_t n)
{
	SortEntry  *entries;
	SortEntry  *scratch = NULL;
	SortEntry  *sorted = NULL;
	int			bytes[TS_KEY_PREFIX_SIZE];
	int			nbytes = TS_KEY_PREFIX_SIZE;

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
	if (n >= RADIX_MIN && n <= UINT32_MAX)
		nbytes = varying_bytes(entries, n, bytes);
	if (nbytes <= 4 && radix_sort_narrow(entries, n, bytes, nbytes, base, offsets) == 0)
	{
		free(entries);
		return 0;
	}
	if (nbytes <= RADIX_MAX_PASSES && (scratch = malloc(n * sizeof(SortEntry))) != NULL)
		sorted = radix_sort_wide(entries, scratch, n, bytes, nbytes, base);
	if (sorted == NULL)
	{
		sort_tie(entries, n, base);
		sorted = entries;
	}
	for (size_t i = 0; i < n; i++)
		offsets[i] = sorted[i].offset;
	free(scratch);
	free(entries);
	return 0;
}
