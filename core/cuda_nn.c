/* Softmax, log-softmax, the negative log-likelihood loss, layer norm and 2-D pooling on CUDA
   tensors (kernels/cuda/nn.cu, pool.cu): core/softmax.c, core/loss.c, core/normalization.c and
   core/pool.c check the arguments,
   make the operands contiguous and allocate the outputs as for the CPU, then call these instead of
   the CPU loops. The only transfers to the host are the target check's verdict (so that a bad
   class index is an error naming the op, as on the CPU) and, when autograd asks for it, the loss's
   total weight. Without CUDA=1 they are stubs. */
#include "core/cuda.h"

#include <stdint.h>

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
#include "kernels/cuda/nn.h"

static void *stream_of(int dev) { return (void *)lt_cuda_current_stream(dev); }

int lt_cuda_softmax(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t outer, int64_t n, int64_t inner,
                    bool log) {
  int dev = y->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_softmax((int)x->dtype, lt_data(x), lt_data(y), outer, n, inner, log, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  lt_bump_version(y);
  return LT_OK;
}

int lt_cuda_softmax_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *y, lt_tensor_t *gx,
                             int64_t outer, int64_t n, int64_t inner, bool log) {
  int dev = gx->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_softmax_backward((int)y->dtype, lt_data(g), lt_data(y), lt_data(gx), outer, n, inner, log,
                                      stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)y->dtype));
  lt_bump_version(gx);
  return LT_OK;
}

int lt_cuda_nll_check_targets(const char *op, const lt_tensor_t *target, int64_t C, bool has_ignore,
                              int64_t ignore_index) {
  int dev = target->device.index;
  int64_t one = 1;
  lt_tensor_t *bad = lt_empty(1, &one, LT_INT64, target->device);
  if (!bad) return LT_ERR;
  int rc = lt_cuda_use(dev);
  if (rc == LT_OK) {
    int e = lt_cuda_k_nll_check((int)target->dtype, lt_data(target), target->numel, C, has_ignore, ignore_index,
                                (int64_t *)lt_data(bad), stream_of(dev));
    rc = lt_cuda_after_launch(dev, e, op, (int)target->dtype);
  }
  int64_t pos = INT64_MAX, value = 0;
  if (rc == LT_OK) {
    /* ordered after the check on the thread's stream; waits for it */
    cudaError_t e = cudaMemcpyAsync(&pos, lt_data(bad), sizeof pos, cudaMemcpyDeviceToHost, lt_cuda_current_stream(dev));
    if (e == cudaSuccess) e = cudaStreamSynchronize(lt_cuda_current_stream(dev));
    rc = lt_cuda_report(e, "cudaMemcpyAsync(&pos, bad, 8, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
  }
  if (rc == LT_OK && pos != INT64_MAX) {
    size_t es = lt_elsize(target);
    int32_t v32 = 0;
    cudaError_t e = cudaMemcpy(target->dtype == LT_INT32 ? (void *)&v32 : (void *)&value,
                               (const char *)lt_data(target) + pos * (int64_t)es, es, cudaMemcpyDeviceToHost);
    rc = lt_cuda_report(e, "cudaMemcpy(&value, target + pos, es, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
    if (target->dtype == LT_INT32) value = v32;
    if (rc == LT_OK)
      rc = lt_error("%s: target %lld is out of bounds for %lld classes (targets are 1-based class indices, 1 to %lld)",
                    op, (long long)value, (long long)C, (long long)C);
  }
  lt_release(bad);
  return rc;
}

int lt_cuda_nll_loss(const char *op, const lt_tensor_t *logp, const lt_tensor_t *target, const lt_tensor_t *w,
                     int64_t N, int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, lt_tensor_t *out,
                     bool none, bool mean, double *total_weight) {
  int dev = out->device.index;
  int64_t two = 2;
  lt_tensor_t *acc = none ? NULL : lt_empty(1, &two, LT_FLOAT64, out->device);
  if (!none && !acc) return LT_ERR;
  int rc = lt_cuda_use(dev);
  if (rc == LT_OK) {
    int e = lt_cuda_k_nll_forward((int)logp->dtype, lt_data(logp), (int)target->dtype, lt_data(target),
                                  w ? (const double *)lt_data(w) : NULL, N, C, S, has_ignore, ignore_index,
                                  none ? lt_data(out) : NULL, mean, none ? NULL : lt_data(out),
                                  acc ? (double *)lt_data(acc) : NULL, stream_of(dev));
    rc = lt_cuda_after_launch(dev, e, op, (int)logp->dtype);
  }
  if (rc == LT_OK && total_weight) {
    *total_weight = 0;
    if (acc) { /* autograd keeps the total weight for the mean's gradient: one wait */
      double h[2] = {0, 0};
      cudaError_t e = cudaMemcpyAsync(h, lt_data(acc), sizeof h, cudaMemcpyDeviceToHost, lt_cuda_current_stream(dev));
      if (e == cudaSuccess) e = cudaStreamSynchronize(lt_cuda_current_stream(dev));
      rc = lt_cuda_report(e, "cudaMemcpyAsync(h, acc, 16, cudaMemcpyDeviceToHost)", __FILE__, __LINE__, dev);
      *total_weight = h[1];
    }
  }
  lt_release(acc);
  if (rc == LT_OK) lt_bump_version(out);
  return rc;
}

int lt_cuda_nll_loss_backward(const char *op, lt_tensor_t *glogp, const lt_tensor_t *g, bool per_elem, double scale,
                              const lt_tensor_t *target, const lt_tensor_t *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index) {
  int dev = glogp->device.index;
  LT_TRY(lt_cuda_use(dev));
  int e = lt_cuda_k_nll_backward((int)glogp->dtype, lt_data(glogp), lt_data(g), per_elem, scale, (int)target->dtype,
                                 lt_data(target), w ? (const double *)lt_data(w) : NULL, N, C, S, has_ignore,
                                 ignore_index, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, e, op, (int)glogp->dtype));
  lt_bump_version(glogp);
  return LT_OK;
}

int lt_cuda_layer_norm(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t M, int64_t N, const lt_tensor_t *w,
                       const lt_tensor_t *b, double eps, lt_tensor_t *mean, lt_tensor_t *rstd) {
  int dev = y->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_layer_norm((int)x->dtype, lt_data(x), lt_data(y), M, N, w ? lt_data(w) : NULL,
                                b ? lt_data(b) : NULL, eps, lt_data(mean), lt_data(rstd), stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  lt_bump_version(y);
  lt_bump_version(mean);
  lt_bump_version(rstd);
  return LT_OK;
}

int lt_cuda_layer_norm_backward(const char *op, const lt_tensor_t *x, const lt_tensor_t *g, const lt_tensor_t *mean,
                                const lt_tensor_t *rstd, const lt_tensor_t *w, int64_t M, int64_t N, lt_tensor_t *gx,
                                lt_tensor_t *gw, lt_tensor_t *gb) {
  int dev = x->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_layer_norm_backward((int)x->dtype, lt_data(x), lt_data(g), lt_data(mean), lt_data(rstd),
                                         w ? lt_data(w) : NULL, M, N, gx ? lt_data(gx) : NULL,
                                         gw ? (double *)lt_data(gw) : NULL, gb ? (double *)lt_data(gb) : NULL,
                                         stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)x->dtype));
  if (gx) lt_bump_version(gx);
  if (gw) lt_bump_version(gw);
  if (gb) lt_bump_version(gb);
  return LT_OK;
}

int lt_cuda_pool2d(const char *op, int kind, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                   int64_t divisor, const lt_tensor_t *in, lt_tensor_t *out, lt_tensor_t *idx) {
  const lt_tensor_t *ts[3] = {in, out, idx};
  LT_TRY(lt_check_same_device(op, idx ? 3 : 2, ts));
  if (in->dtype != out->dtype || (in->dtype != LT_FLOAT32 && in->dtype != LT_FLOAT64) || !lt_is_contiguous(in) ||
      !lt_is_contiguous(out) || (idx && (idx->dtype != LT_INT64 || !lt_is_contiguous(idx))))
    return lt_error("%s: internal error: expected contiguous float32 or float64 operands (int64 indices)", op);
  int dev = out->device.index;
  LT_TRY(lt_cuda_use(dev));
  int rc = lt_cuda_k_pool2d(kind, in->dtype == LT_FLOAT64, g, planes, count_include_pad, divisor, lt_data(in),
                            lt_data(out), idx ? (int64_t *)lt_data(idx) : NULL, stream_of(dev));
  LT_TRY(lt_cuda_after_launch(dev, rc, op, (int)in->dtype));
  lt_bump_version(out);
  if (idx && kind == LT_CUDA_POOL_MAX) lt_bump_version(idx);
  return LT_OK;
}

#else /* ---- a build without CUDA ---- */

static int unavailable(const char *op) {
  return lt_error("%s: CUDA is not available: %s", op, lt_cuda_unavailable_reason());
}

int lt_cuda_softmax(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t outer, int64_t n, int64_t inner,
                    bool log) {
  (void)x; (void)y; (void)outer; (void)n; (void)inner; (void)log;
  return unavailable(op);
}

int lt_cuda_softmax_backward(const char *op, const lt_tensor_t *g, const lt_tensor_t *y, lt_tensor_t *gx,
                             int64_t outer, int64_t n, int64_t inner, bool log) {
  (void)g; (void)y; (void)gx; (void)outer; (void)n; (void)inner; (void)log;
  return unavailable(op);
}

int lt_cuda_nll_check_targets(const char *op, const lt_tensor_t *target, int64_t C, bool has_ignore,
                              int64_t ignore_index) {
  (void)target; (void)C; (void)has_ignore; (void)ignore_index;
  return unavailable(op);
}

int lt_cuda_nll_loss(const char *op, const lt_tensor_t *logp, const lt_tensor_t *target, const lt_tensor_t *w,
                     int64_t N, int64_t C, int64_t S, bool has_ignore, int64_t ignore_index, lt_tensor_t *out,
                     bool none, bool mean, double *total_weight) {
  (void)logp; (void)target; (void)w; (void)N; (void)C; (void)S; (void)has_ignore; (void)ignore_index; (void)out;
  (void)none; (void)mean; (void)total_weight;
  return unavailable(op);
}

int lt_cuda_nll_loss_backward(const char *op, lt_tensor_t *glogp, const lt_tensor_t *g, bool per_elem, double scale,
                              const lt_tensor_t *target, const lt_tensor_t *w, int64_t N, int64_t C, int64_t S,
                              bool has_ignore, int64_t ignore_index) {
  (void)glogp; (void)g; (void)per_elem; (void)scale; (void)target; (void)w; (void)N; (void)C; (void)S;
  (void)has_ignore; (void)ignore_index;
  return unavailable(op);
}

int lt_cuda_layer_norm(const char *op, const lt_tensor_t *x, lt_tensor_t *y, int64_t M, int64_t N, const lt_tensor_t *w,
                       const lt_tensor_t *b, double eps, lt_tensor_t *mean, lt_tensor_t *rstd) {
  (void)x; (void)y; (void)M; (void)N; (void)w; (void)b; (void)eps; (void)mean; (void)rstd;
  return unavailable(op);
}

int lt_cuda_layer_norm_backward(const char *op, const lt_tensor_t *x, const lt_tensor_t *g, const lt_tensor_t *mean,
                                const lt_tensor_t *rstd, const lt_tensor_t *w, int64_t M, int64_t N, lt_tensor_t *gx,
                                lt_tensor_t *gw, lt_tensor_t *gb) {
  (void)x; (void)g; (void)mean; (void)rstd; (void)w; (void)M; (void)N; (void)gx; (void)gw; (void)gb;
  return unavailable(op);
}

int lt_cuda_pool2d(const char *op, int kind, const lt_pool_geom_t *g, int64_t planes, bool count_include_pad,
                   int64_t divisor, const lt_tensor_t *in, lt_tensor_t *out, lt_tensor_t *idx) {
  (void)kind; (void)g; (void)planes; (void)count_include_pad; (void)divisor; (void)in; (void)out; (void)idx;
  return unavailable(op);
}

#endif
