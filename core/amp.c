/* GradScaler's passes over the gradients: unscale in place and find inf/NaN in the same pass
   (PyTorch's _amp_foreach_non_finite_check_and_unscale_), and the scale update
   (_amp_update_scale_). The per-element math is kernels/amp.h's, shared with CUDA. */
#include "core/amp.h"
#include "core/elementwise.h"
#include "core/iter.h"
#include "core/reduce.h"
#include "kernels/amp.h"
#include "kernels/half.h"

static int check_scalar(const char *op, const char *what, const lt_tensor_t *t, lt_dtype dt) {
  if (t->numel != 1 || t->dtype != dt)
    return lt_error("%s: %s must be a one-element %s tensor, got %lld elements of %s", op, what, lt_dtype_name(dt),
                    (long long)t->numel, lt_dtype_name(t->dtype));
  return lt_check_host(op, t);
}

/* the element offsets of a non-contiguous tensor visited in row-major order */
#define STRIDED_LOOP(t, body)                                                  \
  do {                                                                         \
    int64_t idx_[LT_MAX_DIM] = {0}, off_ = 0;                                  \
    for (int64_t i_ = 0; i_ < (t)->numel; i_++) {                              \
      body;                                                                    \
      for (int d_ = (t)->ndim - 1; d_ >= 0; d_--) {                            \
        off_ += (t)->strides[d_];                                              \
        if (++idx_[d_] < (t)->sizes[d_]) break;                                \
        off_ -= (t)->strides[d_] * (t)->sizes[d_];                             \
        idx_[d_] = 0;                                                          \
      }                                                                        \
    }                                                                          \
  } while (0)

static int unscale_host(lt_tensor_t *g, float inv, int *bad) {
  int found = 0;
  int64_t n = g->numel;
  bool contig = lt_is_contiguous(g);
  switch (g->dtype) {
  case LT_FLOAT32: {
    float *p = lt_data(g);
    if (contig) {
#pragma omp parallel for reduction(| : found) num_threads(lt_team_size()) if (n > 65536)
      for (int64_t i = 0; i < n; i++) p[i] = lt_amp_unscale(p[i], inv, &found);
    } else STRIDED_LOOP(g, p[off_] = lt_amp_unscale(p[off_], inv, &found));
    break;
  }
  case LT_FLOAT64: {
    double *p = lt_data(g);
    if (contig) {
#pragma omp parallel for reduction(| : found) num_threads(lt_team_size()) if (n > 65536)
      for (int64_t i = 0; i < n; i++) p[i] = lt_amp_unscale_f64(p[i], (double)inv, &found);
    } else STRIDED_LOOP(g, p[off_] = lt_amp_unscale_f64(p[off_], (double)inv, &found));
    break;
  }
  case LT_BFLOAT16: {
    lt_bfloat16 *p = lt_data(g);
    if (contig) {
#pragma omp parallel for reduction(| : found) num_threads(lt_team_size()) if (n > 65536)
      for (int64_t i = 0; i < n; i++) p[i] = lt_float_to_bf16(lt_amp_unscale(lt_bf16_to_float(p[i]), inv, &found));
    } else STRIDED_LOOP(g, p[off_] = lt_float_to_bf16(lt_amp_unscale(lt_bf16_to_float(p[off_]), inv, &found)));
    break;
  }
  case LT_FLOAT16: {
    lt_half *p = lt_data(g);
    if (contig) {
#pragma omp parallel for reduction(| : found) num_threads(lt_team_size()) if (n > 65536)
      for (int64_t i = 0; i < n; i++) p[i] = lt_float_to_half(lt_amp_unscale(lt_half_to_float(p[i]), inv, &found));
    } else STRIDED_LOOP(g, p[off_] = lt_float_to_half(lt_amp_unscale(lt_half_to_float(p[off_]), inv, &found)));
    break;
  }
  default:
    return lt_error("unscale_: expected floating point gradients, got %s", lt_dtype_name(g->dtype));
  }
  *bad |= found;
  lt_bump_version(g);
  return LT_OK;
}

/* A device the CPU cannot read: the same result through the ops (the sum of g * 0 is 0 exactly
   when every value is finite), then g *= inv in place. */
static int unscale_device(lt_tensor_t *g, float inv, int *bad) {
  lt_tensor_t *z = lt_binary(LT_BINARY_mul, lt_tensor_operand(g), lt_float_operand(0.0), 1, NULL);
  lt_tensor_t *s = z ? lt_sum(z, 0, NULL, false, LT_FLOAT32) : NULL;
  lt_tensor_t *h = s ? lt_convert(s, LT_FLOAT32, (lt_device_t){LT_CPU, 0}) : NULL;
  lt_release(z);
  lt_release(s);
  if (!h) return LT_ERR;
  float v = *(const float *)lt_data(h);
  lt_release(h);
  if (!(v == 0.0f)) *bad = 1;
  lt_tensor_t *r = lt_binary(LT_BINARY_mul, lt_tensor_operand(g), lt_float_operand((double)inv), 1, g);
  if (!r) return LT_ERR;
  lt_release(r);
  return LT_OK;
}

int lt_amp_unscale_(int n, lt_tensor_t *const *grads, const lt_tensor_t *inv_scale, lt_tensor_t *found_inf) {
  const char *op = "unscale_";
  LT_TRY(check_scalar(op, "inv_scale", inv_scale, LT_FLOAT32));
  LT_TRY(check_scalar(op, "found_inf", found_inf, LT_FLOAT32));
  float inv = *(const float *)lt_data(inv_scale);
  int bad = 0;
  for (int i = 0; i < n; i++) {
    lt_tensor_t *g = grads[i];
    if (!g) continue;
    if (!lt_dtype_is_floating(g->dtype))
      return lt_error("%s: expected floating point gradients, got %s", op, lt_dtype_name(g->dtype));
    if (g->numel == 0) continue;
    if (g->device.type == LT_CPU) LT_TRY(unscale_host(g, inv, &bad));
    else LT_TRY(unscale_device(g, inv, &bad));
  }
  if (bad) {
    *(float *)lt_data(found_inf) = 1.0f;
    lt_bump_version(found_inf);
  }
  return LT_OK;
}

int lt_amp_update_scale_(lt_tensor_t *scale, lt_tensor_t *growth_tracker, const lt_tensor_t *found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char *op = "update";
  LT_TRY(check_scalar(op, "scale", scale, LT_FLOAT32));
  LT_TRY(check_scalar(op, "growth_tracker", growth_tracker, LT_INT32));
  LT_TRY(check_scalar(op, "found_inf", found_inf, LT_FLOAT32));
  if (growth_interval < 1) return lt_error("%s: growth_interval must be a positive integer, got %lld", op, (long long)growth_interval);
  lt_amp_update_scale(lt_data(scale), lt_data(growth_tracker), *(const float *)lt_data(found_inf), growth_factor,
                      backoff_factor, growth_interval);
  lt_bump_version(scale);
  lt_bump_version(growth_tracker);
  return LT_OK;
}
