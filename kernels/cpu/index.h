/* CPU loops of the indexing ops (gather, scatter, index_select, index_add, index_fill, masked
   ops, nonzero). They see pointers, byte strides, counts and index values already checked to be in
   range; the bookkeeping (shapes, views, checks, threading over rows) is core/index.c's.

   Most loops are lt_loop_fn's run by lt_iter over a "batch": every dimension of the operands but
   the indexed one (whose size is set to 1), so that a row of n batch elements is handed to the loop,
   which then walks the indexed dimension itself (ctx->n positions, byte strides ctx->dstride[k]).
   Distinct batch elements write distinct memory, so threads over the batch never race, even for
   accumulating ops with repeated indices. */
#ifndef LT_CPU_INDEX_H
#define LT_CPU_INDEX_H

#include "core/dtype.h"
#include "core/iter.h"

#include <stdatomic.h>

typedef struct {
  int64_t n;               /* positions along the indexed dimension per batch element */
  const int64_t *index;    /* a 1-D list of n indices (index_select, index_add, index_fill) */
  int64_t dstride[3];      /* byte strides of the operands along the indexed dimension */
  const void *value;       /* the fill value, one element of the operands' dtype */
  double alpha;            /* index_add's factor (floating dtypes) */
  int64_t ialpha;          /* and for integral dtypes */
} lt_index_ctx_t;

/* gather, over every element (not a batch): operands out, index (int64), src, where src is x
   restrided to index's shape with stride 0 along dim; ctx->dstride[0] is x's byte stride along dim.
   out[i] = src[i + index[i] * dstride[0]]. */
lt_loop_fn lt_cpu_gather_loop(size_t elsize);

/* Batch loops. */
/* operands out, x: out[.., j, ..] = x[.., index[j], ..]; dstride {out, x}. */
lt_loop_fn lt_cpu_index_select_loop(size_t elsize);
/* operands x: x[.., index[j], ..] = *value; dstride {x}. */
lt_loop_fn lt_cpu_index_fill_loop(size_t elsize);
/* operands x, src: x[.., index[j], ..] += alpha * src[.., j, ..]; dstride {x, src}. */
lt_loop_fn lt_cpu_index_add_loop(lt_dtype dt);
/* operands out, index (int64), src: out[.., index[.., j, ..], ..] = src[.., j, ..]; dstride
   {out, index, src}. */
lt_loop_fn lt_cpu_scatter_loop(size_t elsize);
/* operands out, index (int64): out[.., index[.., j, ..], ..] = *value; dstride {out, index}. */
lt_loop_fn lt_cpu_scatter_value_loop(size_t elsize);
/* as lt_cpu_scatter_loop, adding (bool: logical or). */
lt_loop_fn lt_cpu_scatter_add_loop(lt_dtype dt);

/* Elementwise loops. */
/* operands out, mask (bool): out[i] = value where mask[i]; ctx: the value (elsize bytes). */
lt_loop_fn lt_cpu_masked_fill_loop(size_t elsize);
/* operands mask (bool), x: appends x[i] where mask[i] at ctx->cursor, which must have room for
   exactly the selected elements (end = cursor + count * elsize). Run on one thread only (the order
   of the result is the order of the calls). */
typedef struct {
  char *cursor;
  char *end;
} lt_masked_select_ctx_t;
lt_loop_fn lt_cpu_masked_select_loop(size_t elsize);

/* Range check of index values: operand the index (int32 or int64); ctx an lt_index_range_ctx_t;
   sets *bad when a value lies outside [0, bound). Safe on several threads. */
typedef struct {
  int64_t bound;
  atomic_int *bad;
} lt_index_range_ctx_t;
lt_loop_fn lt_cpu_index_range_loop(lt_dtype index_dt);

/* Rows of a contiguous tensor viewed as [outer, n, row] (row in bytes): out[o, j] = x[o, index[j]],
   out contiguous [outer, m, row]. Threads over (o, j) when there is enough work. The pattern of
   index_select along dimension 0 (an embedding lookup). */
void lt_cpu_index_select_rows(char *out, const char *x, const int64_t *index, int64_t outer,
                              int64_t n, int64_t m, int64_t row_bytes);

/* nonzero over a strided tensor (strides in elements, ndim may be 0): the count of non-zero
   elements (NaN counts, -0.0 does not), and their coordinates, row-major, into out[count][ndim]
   (count from lt_cpu_count_nonzero: exactly that many rows are written). */
int64_t lt_cpu_count_nonzero(const char *data, lt_dtype dt, int ndim, const int64_t *sizes,
                             const int64_t *strides);
void lt_cpu_nonzero(const char *data, lt_dtype dt, int ndim, const int64_t *sizes,
                    const int64_t *strides, int64_t count, int64_t *out);

#endif
