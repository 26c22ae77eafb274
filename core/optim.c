/* Fused optimizer steps: argument checks, the scalars of the step computed once in double (then cast
   to the element type, as PyTorch's kernels cast their Python scalars), then the CPU loop or the CUDA kernel (core/cuda_optim.c). */
#include "core/optim.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "kernels/cpu/optim.h"

#include <math.h>
#include <string.h>

/* The tensors of a step: [0] the parameter, [1] the gradient, then the state (NULL allowed). */
static int check_tensors(const char *op, int n, lt_tensor_t *const *ts, const char *const *names) {
  const lt_tensor_t *p = ts[0];
  for (int i = 0; i < n; i++)
    if (!ts[i] && i < 2) return lt_error("%s: the %s is missing", op, names[i]);
  if (!lt_optim_fusable_dtype(p->dtype))
    return lt_error("%s: the fused step supports float32, float64, float16 and bfloat16 parameters, "
                    "got %s", op, lt_dtype_name(p->dtype));
  lt_dtype state_dt = lt_optim_state_dtype(p->dtype);
  if (p->device.type != LT_CPU && p->device.type != LT_CUDA) {
    char buf[32];
    return lt_error("%s: the fused step runs on CPU and CUDA tensors, got a parameter on %s", op,
                    lt_device_format(p->device, buf, sizeof buf));
  }
  for (int i = 1; i < n; i++) {
    const lt_tensor_t *t = ts[i];
    if (!t) continue;
    if (!lt_device_eq(t->device, p->device)) {
      char a[32], b[32];
      return lt_error("%s: expected the %s on the parameter's device %s, but it is on %s", op,
                      names[i], lt_device_format(p->device, a, sizeof a),
                      lt_device_format(t->device, b, sizeof b));
    }
    lt_dtype want = i == 1 ? p->dtype : state_dt;
    if (t->dtype != want)
      return lt_error("%s: expected the %s to have %s %s, but got %s", op, names[i],
                      want == p->dtype ? "the parameter's dtype" : "dtype", lt_dtype_name(want),
                      lt_dtype_name(t->dtype));
    if (t->ndim != p->ndim || memcmp(t->sizes, p->sizes, sizeof(int64_t) * (size_t)p->ndim) != 0) {
      char a[128], b[128];
      return lt_error("%s: expected the %s to have the parameter's shape %s, but got %s", op,
                      names[i], lt_shape_str(p->ndim, p->sizes, a, sizeof a),
                      lt_shape_str(t->ndim, t->sizes, b, sizeof b));
    }
  }
  for (int i = 0; i < n; i++) {
    if (i == 1 || !ts[i]) continue; /* the gradient is only read: any strides */
    if (!lt_is_contiguous(ts[i]))
      return lt_error("%s: the fused step needs a contiguous %s", op, names[i]);
  }
  /* the loops read and write through restrict pointers: nothing written may share memory */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (ts[i] && ts[j] && ts[i]->storage == ts[j]->storage && ts[i]->numel > 0)
        return lt_error("%s: the %s and the %s share memory", op, names[i], names[j]);
  return LT_OK;
}

/* grad itself when contiguous, else a contiguous copy; a new reference either way */
static lt_tensor_t *contiguous_grad(lt_tensor_t *g) {
  if (lt_is_contiguous(g)) {
    lt_retain(g);
    return g;
  }
  return lt_contiguous(g);
}

int lt_sgd_step(lt_tensor_t *p, lt_tensor_t *grad, lt_tensor_t *buf, bool first, const lt_sgd_opts_t *o) {
  static const char *names[] = {"parameter", "gradient", "momentum buffer"};
  lt_tensor_t *ts[3] = {p, grad, buf};
  if (!p) return lt_error("sgd: the parameter is missing");
  LT_TRY(check_tensors("sgd", 3, ts, names));
  bool has_mom = o->momentum != 0, has_wd = o->weight_decay != 0;
  if (has_mom && !buf) return lt_error("sgd: momentum %g needs a momentum buffer", o->momentum);
  if (!has_mom && buf) return lt_error("sgd: a momentum buffer was given without momentum");
  if (o->nesterov && (!has_mom || o->dampening != 0))
    return lt_error("sgd: Nesterov momentum requires a momentum and zero dampening");
  lt_tensor_t *g = contiguous_grad(grad);
  if (!g) return LT_ERR;
  int64_t n = p->numel;
  void *bp = buf ? lt_data(buf) : NULL;
  bool cuda = p->device.type == LT_CUDA;
  int rc = LT_OK;
  if (p->dtype == LT_FLOAT64) {
    lt_sgd_args_d a = {o->maximize ? -1.0 : 1.0, o->weight_decay, o->momentum, 1 - o->dampening, -o->lr};
    if (cuda) rc = lt_cuda_sgd("sgd", p, g, buf, &a, has_wd, has_mom, first, o->nesterov);
    else lt_cpu_sgd_d(lt_data(p), lt_data(g), bp, n, &a, has_wd, has_mom, first, o->nesterov);
  } else {
    lt_sgd_args_f a = {o->maximize ? -1.0f : 1.0f, (float)o->weight_decay, (float)o->momentum,
                       (float)(1 - o->dampening), (float)-o->lr};
    if (cuda) rc = lt_cuda_sgd("sgd", p, g, buf, &a, has_wd, has_mom, first, o->nesterov);
    else if (p->dtype == LT_FLOAT32)
      lt_cpu_sgd_f(lt_data(p), lt_data(g), bp, n, &a, has_wd, has_mom, first, o->nesterov);
    else if (p->dtype == LT_FLOAT16)
      lt_cpu_sgd_h(lt_data(p), lt_data(g), bp, n, &a, has_wd, has_mom, first, o->nesterov);
    else
      lt_cpu_sgd_b(lt_data(p), lt_data(g), bp, n, &a, has_wd, has_mom, first, o->nesterov);
  }
  lt_release(g);
  if (rc != LT_OK) return rc;
  lt_bump_version(p);
  if (buf) lt_bump_version(buf);
  return LT_OK;
}

int lt_adam_step(lt_tensor_t *p, lt_tensor_t *grad, lt_tensor_t *exp_avg, lt_tensor_t *exp_avg_sq,
                 lt_tensor_t *max_exp_avg_sq, double step, const lt_adam_opts_t *o) {
  static const char *names[] = {"parameter", "gradient", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  const char *op = o->decoupled ? "adamw" : "adam";
  lt_tensor_t *ts[5] = {p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq};
  if (!p) return lt_error("%s: the parameter is missing", op);
  if (!exp_avg || !exp_avg_sq) return lt_error("%s: exp_avg and exp_avg_sq are required", op);
  LT_TRY(check_tensors(op, 5, ts, names));
  if (!(step >= 1)) return lt_error("%s: the step count must be at least 1, got %g", op, step);
  bool amsgrad = max_exp_avg_sq != NULL;
  bool has_wd = !o->decoupled && o->weight_decay != 0;
  /* PyTorch's Python-side scalars, in double */
  double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
  double step_size = o->lr / bc1, bc2_sqrt = sqrt(bc2);
  double decay = o->decoupled ? 1 - o->lr * o->weight_decay : 1;
  double w = 1 - o->beta1;
  lt_tensor_t *g = contiguous_grad(grad);
  if (!g) return LT_ERR;
  int64_t n = p->numel;
  void *vmax = amsgrad ? lt_data(max_exp_avg_sq) : NULL;
  bool cuda = p->device.type == LT_CUDA;
  int rc = LT_OK;
  if (p->dtype == LT_FLOAT64) {
    lt_adam_args_d a = {o->maximize ? -1.0 : 1.0, o->weight_decay, decay, w, -(1 - w),
                        o->beta2, 1 - o->beta2, bc2_sqrt, o->eps, -step_size};
    if (cuda) rc = lt_cuda_adam(op, p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, &a, has_wd, amsgrad, fabs(w) < 0.5);
    else lt_cpu_adam_d(lt_data(p), lt_data(g), lt_data(exp_avg), lt_data(exp_avg_sq), vmax, n, &a, has_wd,
                  amsgrad, fabs(w) < 0.5);
  } else {
    /* lerp's weight and its complement are float arithmetic in PyTorch's float kernel */
    float wf = (float)w;
    bool lo = fabsf(wf) < 0.5f;
    lt_adam_args_f a = {o->maximize ? -1.0f : 1.0f, (float)o->weight_decay, (float)decay, wf,
                        -(1.0f - wf), (float)o->beta2, (float)(1 - o->beta2), (float)bc2_sqrt,
                        (float)o->eps, (float)-step_size};
    void *pp = lt_data(p), *gp = lt_data(g), *mp = lt_data(exp_avg), *vp = lt_data(exp_avg_sq);
    if (cuda) rc = lt_cuda_adam(op, p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, &a, has_wd, amsgrad, lo);
    else if (p->dtype == LT_FLOAT32)
      lt_cpu_adam_f(pp, gp, mp, vp, vmax, n, &a, has_wd, amsgrad, lo);
    else if (p->dtype == LT_FLOAT16)
      lt_cpu_adam_h(pp, gp, mp, vp, vmax, n, &a, has_wd, amsgrad, lo);
    else
      lt_cpu_adam_b(pp, gp, mp, vp, vmax, n, &a, has_wd, amsgrad, lo);
  }
  lt_release(g);
  if (rc != LT_OK) return rc;
  lt_bump_version(p);
  lt_bump_version(exp_avg);
  lt_bump_version(exp_avg_sq);
  if (amsgrad) lt_bump_version(max_exp_avg_sq);
  return LT_OK;
}
