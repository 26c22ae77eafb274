/* Reductions and scans. Dimensions are 0-based in the core and may be negative (counted from the
   end); ndims == 0 with any dims pointer means every dimension; a dimension given twice is an
   error. keepdim keeps reduced dimensions as size 1, as PyTorch. Every function returning a tensor
   returns a new reference, or NULL with an error naming the op ("sum(): ..."); messages show
   dimensions 1-based, as users see them. Semantics are PyTorch 1.13's:
   - sum, prod, cumsum, cumprod of integer or bool tensors give int64 unless dtype is given; a given
     dtype converts the input first (as torch.sum(x, dtype=)); floating inputs keep their dtype;
   - mean, var, std, norm need a floating input (or, for mean, a floating dtype); logsumexp of an
     integer or bool tensor gives float32;
   - float32, float16 and bfloat16 accumulate in double (on the CPU, logsumexp's contiguous rows
     take their exponentials in float, as PyTorch does), integers in int64 (wrapping);
   - an empty reduction gives sum 0, prod 1, mean NaN, var NaN, logsumexp -inf, any false,
     all true; max, min, amax, amin, argmax, argmin and the inf / negative norms refuse it;
   - max, min, amax, amin, argmax, argmin propagate NaN; indices (0-based int64) are those of the
     first extreme element, or of the first NaN;
   - cummax and cummin keep x's dtype (every dtype); their index moves to a later element equal to
     the running extreme, and to each NaN (after which the values are NaN);
   - logcumsumexp takes floating tensors only (float16 and bfloat16 too, as newer PyTorch) and
     computes in double as the other scans; -inf elements add nothing, +inf and NaN propagate;
   - the scans run on the CPU devices only;
   - any and all give bool tensors for every input dtype (PyTorch 1.13 gives uint8 for uint8). */
#ifndef LT_REDUCE_H
#define LT_REDUCE_H

#include "core/tensor.h"

#include <stdbool.h>
#include <stdint.h>

/* dtype: LT_DTYPE_INVALID for the default */
lt_tensor_t *lt_sum(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype);
lt_tensor_t *lt_mean(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype);
lt_tensor_t *lt_prod(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim, lt_dtype dtype);
/* log(sum(exp(x))) computed as max + log(sum(exp(x - max))) */
lt_tensor_t *lt_logsumexp(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim);
/* divisor max(0, N - correction): correction 1 is the unbiased estimate, 0 the biased one */
lt_tensor_t *lt_var(lt_tensor_t *x, int ndims, const int64_t *dims, int64_t correction, bool keepdim);
lt_tensor_t *lt_std(lt_tensor_t *x, int ndims, const int64_t *dims, int64_t correction, bool keepdim);
/* (sum |x|^p)^(1/p); p = 0 counts non-zeros, INFINITY is max |x|, -INFINITY min |x| */
lt_tensor_t *lt_norm(lt_tensor_t *x, double p, int ndims, const int64_t *dims, bool keepdim);
lt_tensor_t *lt_amax(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim);
lt_tensor_t *lt_amin(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim);
/* values (x's dtype) and indices (int64, 0-based) along dim: two new references, or LT_ERR */
int lt_max_dim(lt_tensor_t *x, int64_t dim, bool keepdim, lt_tensor_t **values, lt_tensor_t **indices);
int lt_min_dim(lt_tensor_t *x, int64_t dim, bool keepdim, lt_tensor_t **values, lt_tensor_t **indices);
/* the overall extreme as a 0-dim tensor of x's dtype; an error for an empty tensor */
lt_tensor_t *lt_max_all(lt_tensor_t *x);
lt_tensor_t *lt_min_all(lt_tensor_t *x);
/* int64, 0-based; without a dim the index into the flattened tensor (keepdim then gives a tensor
   of x's rank with every size 1) */
lt_tensor_t *lt_argmax(lt_tensor_t *x, bool has_dim, int64_t dim, bool keepdim);
lt_tensor_t *lt_argmin(lt_tensor_t *x, bool has_dim, int64_t dim, bool keepdim);
/* running sum / product along dim; same shape as x */
lt_tensor_t *lt_cumsum(lt_tensor_t *x, int64_t dim, lt_dtype dtype);
lt_tensor_t *lt_cumprod(lt_tensor_t *x, int64_t dim, lt_dtype dtype);
/* running log(sum(exp(x))) along dim, with a running maximum's rescaling */
lt_tensor_t *lt_logcumsumexp(lt_tensor_t *x, int64_t dim);
/* running maximum / minimum along dim: values (x's dtype) and indices (int64, 0-based), two new
   references of x's shape, or LT_ERR */
int lt_cummax(lt_tensor_t *x, int64_t dim, lt_tensor_t **values, lt_tensor_t **indices);
int lt_cummin(lt_tensor_t *x, int64_t dim, lt_tensor_t **values, lt_tensor_t **indices);
/* bool results */
lt_tensor_t *lt_any(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim);
lt_tensor_t *lt_all(lt_tensor_t *x, int ndims, const int64_t *dims, bool keepdim);

#endif
