/* CPU softmax and log-softmax (forward and backward) along one dimension of contiguous tensors,
   seen as [outer, n, inner]: n is the size of the dimension, inner the product of the sizes after
   it (1 when it is the last). Floating dtypes only; float16 and bfloat16 are computed in float32. */
#ifndef LT_CPU_SOFTMAX_H
#define LT_CPU_SOFTMAX_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* y = softmax(x) (log: log_softmax(x)), stable: the maximum of each row is subtracted first */
void lt_cpu_softmax(lt_dtype dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner, bool log);
/* gx from the output's gradient g and the output y: softmax gx = y (g - sum(g y)),
   log_softmax gx = g - exp(y) sum(g) (sums along the dimension) */
void lt_cpu_softmax_backward(lt_dtype dt, const void *g, const void *y, void *gx, int64_t outer, int64_t n,
                             int64_t inner, bool log);

#endif
