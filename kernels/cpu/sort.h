/* Sorting along one dimension of a strided tensor (core/sort.c). */
#ifndef LT_CPU_SORT_H
#define LT_CPU_SORT_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* For each slice of x along `dim` (the other indices fixed), the positions (plus base) of its first
   k elements in sorted order, into out (int64, contiguous, x's shape with k along dim), and, when
   values is not NULL, those elements into values (x's dtype, out's layout). Stable: equal elements
   keep their order; NaN sorts after every number ascending and before every number descending, as
   PyTorch's; -0 equals +0. Integers compare exactly, floating types by value. Slices are shared
   among nt threads. Returns false when a slice's work buffer cannot be allocated. */
bool lt_cpu_topk(const void *x, lt_dtype dt, int ndim, const int64_t *sizes, const int64_t *strides, int dim,
                 int64_t k, bool descending, int64_t base, int64_t *out, void *values, int nt);

#endif
