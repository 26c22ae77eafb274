/* CPU loops of the negative log-likelihood loss over contiguous log-probabilities seen as [N, C, S]
   (C classes; S the product of the sizes after the class dimension, 1 for [N, C] and [C] inputs)
   and targets of N * S class indices, int64 or int32, 1-BASED as the user wrote them. A target equal
   to ignore_index (compared as stored, when has_ignore) contributes nothing. */
#ifndef LT_CPU_LOSS_H
#define LT_CPU_LOSS_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stdint.h>

/* The position of the first target outside 1..C that is not ignored, or -1 when all are valid. */
int64_t lt_cpu_nll_check_targets(lt_dtype tdt, const void *target, int64_t count, int64_t C, bool has_ignore,
                                 int64_t ignore_index);
/* Per element l = -w[t] * logp[n, t, s] (w NULL: 1; 0 where ignored). none_out not NULL: the N * S
   values stored there (dtype dt); else *sum = sum of l and *wsum = sum of w[t] over kept elements
   (both in double). Targets must have been checked. */
void lt_cpu_nll_loss(lt_dtype dt, const void *logp, lt_dtype tdt, const void *target, const double *w, int64_t N,
                     int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, void *none_out, double *sum,
                     double *wsum);
/* glogp (N * C * S of dtype dt) = 0 except glogp[n, t, s] = -w[t] * scale * (g ? g[n * S + s] : 1)
   at each kept element; g (dtype dt) is the per-element gradient of reduction 'none'. */
void lt_cpu_nll_loss_backward(lt_dtype dt, void *glogp, const void *g, double scale, lt_dtype tdt,
                              const void *target, const double *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index);

#endif
