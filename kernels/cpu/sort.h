/* Sorting along one dimension of a strided tensor (core/sort.c). */
#ifndef LT_CPU_SORT_H
#define LT_CPU_SORT_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* For each slice of x along `dim` (the other indices fixed), the 0-based positions of its elements
   in sorted order, into out (int64, contiguous, x's shape). Stable: equal elements keep their order;
   NaN sorts after every number ascending and before every number descending, as PyTorch's. Integers
   compare exactly (as int64), floating types as double. Slices are shared among nt threads.
   Returns false when a slice's work buffer cannot be allocated. */
bool lt_cpu_argsort(const void *x, lt_dtype dt, int ndim, const int64_t *sizes, const int64_t *strides, int dim,
                    bool descending, int64_t *out, int nt);

#endif
