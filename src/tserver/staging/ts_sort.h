/*
 * ts_sort.h
 *		Sorting a session's staged records by key, for its spills.
 */
#ifndef TS_SORT_H
#define TS_SORT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sort offsets[n], each the offset in base of a staged record
 * (ts_record.h), by key as unsigned byte strings (a prefix first), equal
 * keys by offset, that is by arrival.  0, or -1 when out of memory
 * (offsets untouched).
 */
int			ts_sort_records(const uint8_t *base, uint32_t *offsets, size_t n);

#endif							/* TS_SORT_H */
