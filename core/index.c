/* Indexing operations: checks (dtypes, devices, shapes, index ranges), output allocation, then the
   CPU loops of kernels/cpu/index.c. Index values are 0-based here; error messages show them as users
   wrote them (value + 1), and dimensions 1-based. Every index is range-checked before anything is
   written, so a failing in-place op leaves its tensor unchanged. */
#include "core/index.h"
#include "core/grad.h"

#include "core/iter.h"
#include "core/shape.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/index.h"

#include <stdio.h>
#include <string.h>

/* ---- helpers ---- */

static int check_host(const char *op, const lt_tensor_t *t) {
  const lt_backend_i *b = lt_backend((lt_devtype)t->device.type);
  if (!b || !b->host_accessible)
    return lt_error("%s: not supported for tensors on %s in this build", op,
                    b ? b->name : "this device");
  return LT_OK;
}

static int check_tensors(const char *op, int n, const lt_tensor_t *const *ts) {
  for (int i = 0; i < n; i++)
    if (ts[i]) LT_TRY(check_host(op, ts[i]));
  return lt_check_same_device(op, n, ts);
}

/* ---- CUDA tensors ----
   The indexing ops have no CUDA kernels yet: their operands are brought to the host, the CPU code
   runs, and the result goes back to the device (in place where the op writes in place). Correct,
   not fast; the CPU specs test the code that runs. Autograd is not involved here: these are the
   plain computations (the recording wrappers call them with grad mode off). */
static bool on_cuda(const lt_tensor_t *t) { return t && t->device.type == LT_CUDA; }

static lt_tensor_t *to_host(lt_tensor_t *t) {
  if (!t) return NULL;
  return lt_convert(t, t->dtype, lt_device(LT_CPU, 0));
}

/* r (host) as a tensor of device dev; consumes r */
static lt_tensor_t *back_to(lt_tensor_t *r, lt_device_t dev) {
  if (!r) return NULL;
  lt_tensor_t *d = lt_convert(r, r->dtype, dev);
  lt_release(r);
  return d;
}

/* the host result r of an op that wrote into out (or made a new tensor when out is NULL) */
static lt_tensor_t *finish_staged(lt_tensor_t *r, lt_tensor_t *out, lt_device_t dev) {
  if (!r || !out) return back_to(r, dev);
  int rc = lt_copy_(out, r);
  lt_release(r);
  if (rc != LT_OK) return NULL;
  lt_retain(out);
  return out;
}

static lt_operand_t host_operand(lt_operand_t v, lt_tensor_t **tmp) {
  *tmp = NULL;
  if (v.kind == LT_OPERAND_TENSOR && v.t && on_cuda(v.t)) {
    *tmp = to_host(v.t);
    v.t = *tmp;
  }
  return v;
}

/* An in-place target must not have several elements in one memory location (expanded). */
static int check_no_overlap(const char *op, const lt_tensor_t *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->sizes[i] > 1 && t->strides[i] == 0)
      return lt_error("%s: unsupported operation: more than one element of the written-to tensor "
                      "refers to a single memory location. Please clone() the tensor before "
                      "performing the operation.", op);
  return LT_OK;
}

/* A descriptor of t for iteration, 0-dim seen as [1] (PyTorch's ensure_nonempty_dim). Not a
   reference: it borrows t's storage and must not outlive t. */
static void nonempty(const lt_tensor_t *t, lt_tensor_t *out) {
  memcpy(out, t, sizeof *out);
  if (out->ndim == 0) {
    out->ndim = 1;
    out->sizes[0] = 1;
    out->strides[0] = 1;
  }
}

/* The fill value of masked_fill / scatter / index_fill_ as one element of dtype dt. */
static int value_bytes(const char *op, const lt_operand_t *v, lt_dtype dt, void *buf) {
  char *d[2];
  int64_t s[2] = {0, 0};
  d[0] = buf;
  if (v->kind == LT_OPERAND_TENSOR) {
    if (!v->t) return lt_error("%s: expected a value", op);
    if (v->t->ndim != 0)
      return lt_error("%s: only supports a 0-dimensional value tensor, but got tensor with %d "
                      "dimension(s).", op, v->t->ndim);
    LT_TRY(check_host(op, v->t));
    d[1] = lt_data(v->t);
    lt_cpu_cast_loop(dt, v->t->dtype)(d, s, 1, NULL);
  } else if (v->kind == LT_OPERAND_FLOAT) {
    d[1] = (char *)&v->f;
    lt_cpu_cast_loop(dt, LT_FLOAT64)(d, s, 1, NULL);
  } else {
    d[1] = (char *)&v->i;
    lt_cpu_cast_loop(dt, LT_INT64)(d, s, 1, NULL);
  }
  return LT_OK;
}

static int check_index_dtype(const char *op, const lt_tensor_t *index, bool allow_int32) {
  if (index->dtype == LT_INT64 || (allow_int32 && index->dtype == LT_INT32)) return LT_OK;
  return lt_error("%s(): Expected dtype %s for index, got %s", op, allow_int32 ? "int32/int64" : "int64",
                  lt_dtype_name(index->dtype));
}

/* a 0-based index shown 1-based, as the Lua side numbers them (2^63 - 1 shows as 2^63) */
static const char *one_based(int64_t v, char buf[24]) {
  if (v >= 0) snprintf(buf, 24, "%llu", (unsigned long long)v + 1);
  else snprintf(buf, 24, "%lld", (long long)(v + 1));
  return buf;
}

/* A 1-D index (index_select, index_add_, index_fill_) as a contiguous int64 list, its values
   checked against [0, bound). *tmp holds a converted copy when one was needed (release it). */
static int index_list(const char *op, lt_tensor_t *index, int64_t bound, int dim_shown,
                      lt_tensor_t **tmp, const int64_t **list) {
  *tmp = NULL;
  if (index->dtype == LT_INT64 && lt_is_contiguous(index)) {
    *list = lt_data(index);
  } else {
    *tmp = lt_convert(index, LT_INT64, index->device);
    if (!*tmp) return LT_ERR;
    *list = lt_data(*tmp);
  }
  const int64_t *p = *list;
  for (int64_t i = 0; i < index->numel; i++)
    if (p[i] < 0 || p[i] >= bound) {
      int64_t v = p[i];
      lt_release(*tmp);
      *tmp = NULL;
      char b[24];
      return lt_error("%s: index %s out of range for dimension %d (of size %lld)", op, one_based(v, b), dim_shown,
                      (long long)bound);
    }
  return LT_OK;
}

/* Values of an index tensor (any shape, int32/int64) within [0, bound): checked by a (threaded)
   pass; the first bad value in row-major order goes into the message. */
static int check_index_range(const char *op, lt_tensor_t *index, int64_t bound, int dim_shown) {
  if (index->numel == 0) return LT_OK;
  atomic_int bad;
  atomic_init(&bad, 0);
  lt_index_range_ctx_t ctx = {bound, &bad};
  lt_tensor_t *ops[1] = {index};
  lt_iter_t it;
  lt_iter_init(&it, 1, ops);
  lt_iter_run(&it, lt_cpu_index_range_loop(index->dtype), &ctx, LT_GRAIN);
  if (!atomic_load(&bad)) return LT_OK;
  for (int64_t i = 0; i < index->numel; i++) {
    int64_t v = lt_get_int(index, i);
    char b[24];
    if (v < 0 || v >= bound)
      return lt_error("%s(): index %s is out of bounds for dimension %d with size %lld", op, one_based(v, b),
                      dim_shown, (long long)bound);
  }
  return LT_OK; /* not reached */
}

/* Run a batch loop (see kernels/cpu/index.h): operands ts[k] are iterated over the shape bsizes
   (nd dims) with dimension d collapsed to 1; ctx->dstride[k] gets each operand's byte stride
   along d. The operands' own strides are used, so a tensor larger than bsizes is walked over the
   corresponding sub-block. */
static void run_batch(int nops, const lt_tensor_t *const *ts, int nd, const int64_t *bsizes, int d,
                      lt_loop_fn loop, lt_index_ctx_t *ctx) {
  lt_tensor_t v[LT_ITER_MAX_OPS];
  lt_tensor_t *ops[LT_ITER_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    memcpy(&v[k], ts[k], sizeof v[k]);
    v[k].ndim = nd;
    memcpy(v[k].sizes, bsizes, sizeof(int64_t) * (size_t)nd);
    v[k].sizes[d] = 1;
    v[k].numel = lt_numel_of(nd, v[k].sizes);
    ctx->dstride[k] = ts[k]->strides[d] * (int64_t)lt_elsize(ts[k]);
    ops[k] = &v[k];
  }
  if (v[0].numel == 0 || ctx->n == 0) return;
  lt_iter_t it;
  lt_iter_init(&it, nops, ops);
  int64_t grain = LT_GRAIN / (ctx->n > 0 ? ctx->n : 1);
  lt_iter_run(&it, loop, ctx, grain > 0 ? grain : 1);
}

static bool same_shape(const lt_tensor_t *a, int nd, const int64_t *sizes) {
  return a->ndim == nd && memcmp(a->sizes, sizes, sizeof(int64_t) * (size_t)nd) == 0;
}

/* ---- index_select ---- */

lt_tensor_t *lt_index_select(lt_tensor_t *x, int64_t dim, lt_tensor_t *index) {
  if (lt_ag_needed(x, NULL)) return lt_ag_index_select(x, dim, index);
  if (on_cuda(x) || on_cuda(index)) {
    const lt_tensor_t *ts[2] = {x, index};
    if (lt_check_same_device("index_select", 2, ts) != LT_OK) return NULL;
    lt_tensor_t *hx = to_host(x), *hi = to_host(index);
    lt_tensor_t *r = hx && hi ? lt_index_select(hx, dim, hi) : NULL;
    lt_release(hx), lt_release(hi);
    return back_to(r, x->device);
  }
  const char *op = "index_select";
  const lt_tensor_t *ts[2] = {x, index};
  if (check_tensors(op, 2, ts) != LT_OK) return NULL;
  if (check_index_dtype(op, index, true) != LT_OK) return NULL;
  if (index->ndim > 1) {
    lt_error("index_select(): Index is supposed to be a vector, got a %dD tensor", index->ndim);
    return NULL;
  }
  int d;
  if (lt_wrap_dim(op, dim, x->ndim, &d) != LT_OK) return NULL;
  int64_t m = index->numel;
  if (x->ndim == 0 && m != 1) {
    lt_error("index_select(): Index to scalar can have only 1 value, got %lld value(s)", (long long)m);
    return NULL;
  }
  lt_tensor_t xn;
  nonempty(x, &xn);
  lt_tensor_t *tmp;
  const int64_t *list;
  if (index_list(op, index, xn.sizes[d], d + 1, &tmp, &list) != LT_OK) return NULL;
  int64_t sizes[LT_MAX_DIM];
  memcpy(sizes, x->sizes, sizeof sizes);
  if (x->ndim > 0) sizes[d] = m;
  lt_tensor_t *out = lt_empty(x->ndim, sizes, x->dtype, x->device);
  if (!out) { lt_release(tmp); return NULL; }
  if (out->numel > 0) {
    size_t es = lt_elsize(x);
    if (lt_is_contiguous(x)) { /* rows of a contiguous tensor: the embedding lookup pattern */
      int64_t outer = 1, row = 1;
      for (int k = 0; k < d; k++) outer *= xn.sizes[k];
      for (int k = d + 1; k < xn.ndim; k++) row *= xn.sizes[k];
      lt_cpu_index_select_rows(lt_data(out), lt_data(x), list, outer, xn.sizes[d], m,
                               row * (int64_t)es);
    } else {
      lt_tensor_t on;
      nonempty(out, &on);
      const lt_tensor_t *ops[2] = {&on, &xn};
      lt_index_ctx_t ctx = {0};
      ctx.n = m;
      ctx.index = list;
      run_batch(2, ops, xn.ndim, xn.sizes, d, lt_cpu_index_select_loop(es), &ctx);
    }
  }
  lt_release(tmp);
  return out;
}

/* ---- masked_select / masked_fill ---- */

lt_tensor_t *lt_masked_select(lt_tensor_t *x, lt_tensor_t *mask) {
  if (lt_ag_needed(x, NULL)) return lt_ag_masked_select(x, mask);
  if (on_cuda(x) || on_cuda(mask)) {
    const lt_tensor_t *ts[2] = {x, mask};
    if (lt_check_same_device("masked_select", 2, ts) != LT_OK) return NULL;
    lt_tensor_t *hx = to_host(x), *hm = to_host(mask);
    lt_tensor_t *r = hx && hm ? lt_masked_select(hx, hm) : NULL;
    lt_release(hx), lt_release(hm);
    return back_to(r, x->device);
  }
  const char *op = "masked_select";
  const lt_tensor_t *ts[2] = {x, mask};
  if (check_tensors(op, 2, ts) != LT_OK) return NULL;
  if (mask->dtype != LT_BOOL) {
    lt_error("masked_select: expected BoolTensor for mask, got %s", lt_dtype_name(mask->dtype));
    return NULL;
  }
  int nd;
  int64_t shape[LT_MAX_DIM];
  if (lt_broadcast_shapes(op, x->ndim, x->sizes, mask->ndim, mask->sizes, &nd, shape) != LT_OK)
    return NULL;
  lt_tensor_t *xe = lt_expand(x, nd, shape);
  lt_tensor_t *me = xe ? lt_expand(mask, nd, shape) : NULL;
  lt_tensor_t *out = NULL;
  if (!me) goto done;
  int64_t count = lt_cpu_count_nonzero(lt_data(me), LT_BOOL, me->ndim, me->sizes, me->strides);
  out = lt_empty(1, &count, x->dtype, x->device);
  if (!out || count == 0) goto done;
  lt_masked_select_ctx_t ctx = {lt_data(out), (char *)lt_data(out) + count * (int64_t)lt_elsize(out)};
  lt_tensor_t *ops[2] = {me, xe};
  lt_iter_t it;
  lt_iter_init(&it, 2, ops);
  lt_iter_run(&it, lt_cpu_masked_select_loop(lt_elsize(x)), &ctx, INT64_MAX / 2); /* one thread: order */
done:
  lt_release(xe);
  lt_release(me);
  return out;
}

lt_tensor_t *lt_masked_fill(lt_tensor_t *x, lt_tensor_t *mask, lt_operand_t value, lt_tensor_t *out) {
  if (out && lt_check_write("masked_fill_", out) != LT_OK) return NULL;
  if (lt_ag_needed(x, out) || lt_ag_needed(value.kind == LT_OPERAND_TENSOR ? value.t : NULL, NULL))
    return lt_ag_masked_fill(x, mask, value, out);
  if (on_cuda(x) || on_cuda(mask) || on_cuda(out)) {
    const lt_tensor_t *ts[3] = {x, mask, out};
    if (lt_check_same_device(out == x ? "masked_fill_" : "masked_fill", 3, ts) != LT_OK) return NULL;
    lt_tensor_t *tv, *hx = to_host(x), *hm = to_host(mask), *ho = out && out != x ? to_host(out) : NULL;
    lt_operand_t hv = host_operand(value, &tv);
    lt_tensor_t *r = hx && hm && (ho || !out || out == x) ? lt_masked_fill(hx, hm, hv, out == x ? hx : ho) : NULL;
    lt_release(hx), lt_release(hm), lt_release(ho), lt_release(tv);
    return finish_staged(r, out, x->device);
  }
  const char *op = out == x ? "masked_fill_" : "masked_fill";
  /* a 0-dim value tensor is read on the host: it may live on any host-accessible device */
  const lt_tensor_t *ts[3] = {x, mask, out};
  if (check_tensors(op, 3, ts) != LT_OK) return NULL;
  if (mask->dtype != LT_BOOL) {
    lt_error("%s: only supports boolean masks, but got mask with dtype %s", op,
             lt_dtype_name(mask->dtype));
    return NULL;
  }
  unsigned char vbuf[8];
  if (value_bytes(op, &value, x->dtype, vbuf) != LT_OK) return NULL;
  int nd;
  int64_t shape[LT_MAX_DIM];
  if (lt_broadcast_shapes(op, x->ndim, x->sizes, mask->ndim, mask->sizes, &nd, shape) != LT_OK)
    return NULL;
  char a[512], b[512];
  lt_tensor_t *target;
  if (out == x) {
    if (!same_shape(x, nd, shape)) {
      lt_error("masked_fill_: the mask of shape %s cannot be broadcast to the shape %s of the tensor "
               "filled in place", lt_shape_str(mask->ndim, mask->sizes, a, sizeof a),
               lt_shape_str(x->ndim, x->sizes, b, sizeof b));
      return NULL;
    }
    if (check_no_overlap(op, x) != LT_OK) return NULL;
    target = x;
    lt_retain(target);
  } else if (out) {
    if (!same_shape(out, nd, shape) || out->dtype != x->dtype) {
      lt_error("masked_fill: expected an output of shape %s and dtype %s, got shape %s and dtype %s",
               lt_shape_str(nd, shape, a, sizeof a), lt_dtype_name(x->dtype),
               lt_shape_str(out->ndim, out->sizes, b, sizeof b), lt_dtype_name(out->dtype));
      return NULL;
    }
    if (check_no_overlap(op, out) != LT_OK || lt_copy_(out, x) != LT_OK) return NULL;
    target = out;
    lt_retain(target);
  } else {
    target = lt_empty(nd, shape, x->dtype, x->device);
    if (!target) return NULL;
    if (lt_copy_(target, x) != LT_OK) { lt_release(target); return NULL; }
  }
  if (target->numel > 0) {
    lt_tensor_t *me = lt_expand(mask, nd, shape);
    if (!me) { lt_release(target); return NULL; }
    lt_tensor_t *ops[2] = {target, me};
    lt_iter_t it;
    lt_iter_init(&it, 2, ops);
    lt_iter_run(&it, lt_cpu_masked_fill_loop(lt_elsize(target)), vbuf, LT_GRAIN);
    lt_release(me);
  }
  if (out) lt_bump_version(target);
  return target;
}

/* ---- the view of a basic key ---- */

lt_tensor_t *lt_key_view(lt_tensor_t *x, int n, const lt_key_step_t *steps) {
  lt_retain(x);
  lt_tensor_t *v = x;
  for (int i = 0; i < n && v; i++) {
    const lt_key_step_t *s = &steps[i];
    lt_tensor_t *r = s->kind == LT_KEY_SELECT    ? lt_select(v, s->dim, s->start)
                     : s->kind == LT_KEY_NEWAXIS ? lt_unsqueeze(v, s->dim)
                     : s->step == 1              ? lt_narrow(v, s->dim, s->start, s->stop - s->start)
                                                 : lt_slice(v, s->dim, s->start, s->stop, s->step);
    lt_release(v);
    v = r;
  }
  return v;
}

/* ---- gather / scatter ---- */

lt_tensor_t *lt_gather(lt_tensor_t *x, int64_t dim, lt_tensor_t *index) {
  if (lt_ag_needed(x, NULL)) return lt_ag_gather(x, dim, index);
  if (on_cuda(x) || on_cuda(index)) {
    const lt_tensor_t *ts[2] = {x, index};
    if (lt_check_same_device("gather", 2, ts) != LT_OK) return NULL;
    lt_tensor_t *hx = to_host(x), *hi = to_host(index);
    lt_tensor_t *r = hx && hi ? lt_gather(hx, dim, hi) : NULL;
    lt_release(hx), lt_release(hi);
    return back_to(r, x->device);
  }
  const char *op = "gather";
  const lt_tensor_t *ts[2] = {x, index};
  if (check_tensors(op, 2, ts) != LT_OK) return NULL;
  if (check_index_dtype(op, index, false) != LT_OK) return NULL;
  int d;
  if (lt_wrap_dim(op, dim, x->ndim, &d) != LT_OK) return NULL;
  lt_tensor_t xn, in;
  nonempty(x, &xn);
  nonempty(index, &in);
  if (xn.ndim != in.ndim) {
    lt_error("gather(): Index tensor must have the same number of dimensions as input tensor "
             "(got %d and %d)", index->ndim, x->ndim);
    return NULL;
  }
  for (int k = 0; k < xn.ndim; k++)
    if (k != d && in.sizes[k] > xn.sizes[k]) {
      char a[512], b[512];
      lt_error("gather(): Size does not match at dimension %d expected index %s to be smaller than "
               "self %s apart for dimension %d", k + 1, lt_shape_str(index->ndim, index->sizes, a, sizeof a),
               lt_shape_str(x->ndim, x->sizes, b, sizeof b), d + 1);
      return NULL;
    }
  if (check_index_range(op, index, xn.sizes[d], d + 1) != LT_OK) return NULL;
  lt_tensor_t *out = lt_empty(index->ndim, index->sizes, x->dtype, x->device);
  if (!out || out->numel == 0) return out;
  /* x seen with index's shape and stride 0 along d; the loop adds index * x's stride along d */
  lt_tensor_t xf, on;
  memcpy(&xf, &xn, sizeof xf);
  memcpy(xf.sizes, in.sizes, sizeof xf.sizes);
  xf.strides[d] = 0;
  xf.numel = in.numel;
  nonempty(out, &on);
  lt_index_ctx_t ctx = {0};
  ctx.dstride[0] = xn.strides[d] * (int64_t)lt_elsize(x);
  lt_tensor_t *ops[3] = {&on, &in, &xf};
  lt_iter_t it;
  lt_iter_init(&it, 3, ops);
  lt_iter_run(&it, lt_cpu_gather_loop(lt_elsize(x)), &ctx, LT_GRAIN);
  return out;
}

/* scatter, scatter with a value, scatter_add. src NULL: vbuf holds the value. */
static lt_tensor_t *scatter_impl(const char *op, lt_tensor_t *x, int64_t dim, lt_tensor_t *index,
                                 lt_tensor_t *src, const lt_operand_t *value, bool add, lt_tensor_t *out) {
  if (out && lt_check_write(op, out) != LT_OK) return NULL;
  const lt_tensor_t *ts[4] = {x, index, src, out};
  if (check_tensors(op, 4, ts) != LT_OK) return NULL;
  if (check_index_dtype(op, index, false) != LT_OK) return NULL;
  if (src && src->dtype != x->dtype) {
    lt_error("%s(): Expected self.dtype to be equal to src.dtype (got %s and %s)", op,
             lt_dtype_name(x->dtype), lt_dtype_name(src->dtype));
    return NULL;
  }
  unsigned char vbuf[8];
  if (!src && value_bytes(op, value, x->dtype, vbuf) != LT_OK) return NULL;
  int d;
  if (lt_wrap_dim(op, dim, x->ndim, &d) != LT_OK) return NULL;
  lt_tensor_t xn, in, sn;
  nonempty(x, &xn);
  nonempty(index, &in);
  if (src) nonempty(src, &sn);
  char a[512], b[512], c[512];
  if (index->numel > 0) {
    if (xn.ndim != in.ndim) {
      lt_error("%s(): Index tensor must have the same number of dimensions as self tensor (got %d "
               "and %d)", op, index->ndim, x->ndim);
      return NULL;
    }
    if (src && sn.ndim != in.ndim) {
      lt_error("%s(): Index tensor must have the same number of dimensions as src tensor (got %d "
               "and %d)", op, index->ndim, src->ndim);
      return NULL;
    }
    bool wrong = false;
    for (int k = 0; k < xn.ndim; k++) {
      if (k != d && in.sizes[k] > xn.sizes[k]) wrong = true;
      if (src && in.sizes[k] > sn.sizes[k]) wrong = true;
    }
    if (wrong) {
      if (src)
        lt_error("%s(): Expected index %s to be smaller than self %s apart from dimension %d and to "
                 "be smaller size than src %s", op, lt_shape_str(index->ndim, index->sizes, a, sizeof a),
                 lt_shape_str(x->ndim, x->sizes, b, sizeof b), d + 1,
                 lt_shape_str(src->ndim, src->sizes, c, sizeof c));
      else
        lt_error("%s(): Expected index %s to be smaller than self %s apart from dimension %d", op,
                 lt_shape_str(index->ndim, index->sizes, a, sizeof a),
                 lt_shape_str(x->ndim, x->sizes, b, sizeof b), d + 1);
      return NULL;
    }
    if (check_index_range(op, index, xn.sizes[d], d + 1) != LT_OK) return NULL;
  }
  lt_tensor_t *target;
  if (out == x) {
    if (check_no_overlap(op, x) != LT_OK) return NULL;
    target = x;
    lt_retain(target);
  } else if (out) {
    if (!same_shape(out, x->ndim, x->sizes) || out->dtype != x->dtype) {
      lt_error("%s: expected an output of shape %s and dtype %s, got shape %s and dtype %s", op,
               lt_shape_str(x->ndim, x->sizes, a, sizeof a), lt_dtype_name(x->dtype),
               lt_shape_str(out->ndim, out->sizes, b, sizeof b), lt_dtype_name(out->dtype));
      return NULL;
    }
    if (check_no_overlap(op, out) != LT_OK || lt_copy_(out, x) != LT_OK) return NULL;
    target = out;
    lt_retain(target);
  } else {
    target = lt_clone(x);
    if (!target) return NULL;
  }
  if (index->numel > 0) {
    lt_tensor_t tn;
    nonempty(target, &tn);
    lt_index_ctx_t ctx = {0};
    ctx.n = in.sizes[d];
    ctx.value = vbuf;
    ctx.alpha = 1;
    ctx.ialpha = 1;
    size_t es = lt_elsize(x);
    const lt_tensor_t *ops[3] = {&tn, &in, &sn};
    lt_loop_fn loop = add ? lt_cpu_scatter_add_loop(x->dtype)
                          : src ? lt_cpu_scatter_loop(es) : lt_cpu_scatter_value_loop(es);
    run_batch(src ? 3 : 2, ops, in.ndim, in.sizes, d, loop, &ctx);
  }
  if (out) lt_bump_version(target);
  return target;
}

lt_tensor_t *lt_scatter(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t src, lt_tensor_t *out) {
  if (lt_ag_needed(x, out) || lt_ag_needed(src.kind == LT_OPERAND_TENSOR ? src.t : NULL, NULL))
    return lt_ag_scatter(x, dim, index, src, out, false);
  if (on_cuda(x) || on_cuda(index) || on_cuda(out) || (src.kind == LT_OPERAND_TENSOR && on_cuda(src.t))) {
    const lt_tensor_t *ts[4] = {x, index, out, src.kind == LT_OPERAND_TENSOR ? src.t : NULL};
    if (lt_check_same_device(out == x ? "scatter_" : "scatter", 4, ts) != LT_OK) return NULL;
    lt_tensor_t *ts_, *hx = to_host(x), *hi = to_host(index), *ho = out && out != x ? to_host(out) : NULL;
    lt_operand_t hs = host_operand(src, &ts_);
    lt_tensor_t *r = hx && hi && (ho || !out || out == x) ? lt_scatter(hx, dim, hi, hs, out == x ? hx : ho) : NULL;
    lt_release(hx), lt_release(hi), lt_release(ho), lt_release(ts_);
    return finish_staged(r, out, x->device);
  }
  const char *op = out == x ? "scatter_" : "scatter";
  if (src.kind == LT_OPERAND_TENSOR) {
    if (!src.t) {
      lt_error("%s: expected a source tensor or a value", op);
      return NULL;
    }
    return scatter_impl(op, x, dim, index, src.t, NULL, false, out);
  }
  return scatter_impl(op, x, dim, index, NULL, &src, false, out);
}

lt_tensor_t *lt_scatter_add(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, lt_tensor_t *out) {
  if (src && (lt_ag_needed(x, out) || lt_ag_needed(src, NULL)))
    return lt_ag_scatter(x, dim, index, lt_tensor_operand(src), out, true);
  if (on_cuda(x) || on_cuda(index) || on_cuda(out) || on_cuda(src)) {
    const lt_tensor_t *ts[4] = {x, index, out, src};
    if (lt_check_same_device(out == x ? "scatter_add_" : "scatter_add", 4, ts) != LT_OK) return NULL;
    lt_tensor_t *hx = to_host(x), *hi = to_host(index), *hs = to_host(src), *ho = out && out != x ? to_host(out) : NULL;
    lt_tensor_t *r = hx && hi && (hs || !src) && (ho || !out || out == x) ? lt_scatter_add(hx, dim, hi, hs, out == x ? hx : ho) : NULL;
    lt_release(hx), lt_release(hi), lt_release(hs), lt_release(ho);
    return finish_staged(r, out, x->device);
  }
  const char *op = out == x ? "scatter_add_" : "scatter_add";
  if (!src) {
    lt_error("%s: expected a source tensor", op);
    return NULL;
  }
  return scatter_impl(op, x, dim, index, src, NULL, true, out);
}

/* ---- index_add_ / index_fill_ ---- */

int lt_index_add_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_tensor_t *src, double alpha) {
  LT_TRY(lt_check_write("index_add_", x));
  if (lt_ag_needed(x, src)) return lt_ag_index_add_(x, dim, index, src, alpha, false, lt_int_operand(0));
  if (on_cuda(x) || on_cuda(index) || on_cuda(src)) {
    const lt_tensor_t *ts[3] = {x, index, src};
    LT_TRY(lt_check_same_device("index_add_", 3, ts));
    lt_tensor_t *hx = to_host(x), *hi = to_host(index), *hs = to_host(src);
    int rc = hx && hi && hs ? lt_index_add_(hx, dim, hi, hs, alpha) : LT_ERR;
    if (rc == LT_OK) rc = lt_copy_(x, hx);
    lt_release(hx), lt_release(hi), lt_release(hs);
    return rc;
  }
  const char *op = "index_add_";
  const lt_tensor_t *ts[3] = {x, index, src};
  LT_TRY(check_tensors(op, 3, ts));
  LT_TRY(check_index_dtype(op, index, true));
  if (index->ndim > 1) return lt_error("index_add_(): Index is supposed to be a vector, got a %dD tensor", index->ndim);
  if (src->dtype != x->dtype)
    return lt_error("index_add_(): self (%s) and source (%s) must have the same scalar type",
                    lt_dtype_name(x->dtype), lt_dtype_name(src->dtype));
  if (!lt_dtype_is_floating(x->dtype) && alpha != (double)(int64_t)alpha)
    return lt_error("index_add_(): for integral input tensors, argument alpha must not be a floating point number");
  int d;
  LT_TRY(lt_wrap_dim(op, dim, x->ndim, &d));
  lt_tensor_t xn, sn;
  nonempty(x, &xn);
  nonempty(src, &sn);
  bool ok = xn.ndim == sn.ndim;
  for (int k = 0; ok && k < xn.ndim; k++) ok = k == d || xn.sizes[k] == sn.sizes[k];
  char a[512], b[512];
  if (!ok)
    return lt_error("index_add_(): source tensor shape must match self tensor shape, excluding the "
                    "specified dimension. Got self.shape = %s source.shape = %s",
                    lt_shape_str(x->ndim, x->sizes, a, sizeof a), lt_shape_str(src->ndim, src->sizes, b, sizeof b));
  if (index->numel != sn.sizes[d])
    return lt_error("index_add_(): Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                    (long long)index->numel, (long long)sn.sizes[d]);
  LT_TRY(check_no_overlap(op, x));
  lt_tensor_t *tmp;
  const int64_t *list;
  LT_TRY(index_list(op, index, xn.sizes[d], d + 1, &tmp, &list));
  lt_index_ctx_t ctx = {0};
  ctx.n = index->numel;
  ctx.index = list;
  ctx.alpha = alpha;
  ctx.ialpha = (int64_t)alpha;
  const lt_tensor_t *ops[2] = {&xn, &sn};
  run_batch(2, ops, xn.ndim, xn.sizes, d, lt_cpu_index_add_loop(x->dtype), &ctx);
  lt_release(tmp);
  lt_bump_version(x);
  return LT_OK;
}

int lt_index_fill_(lt_tensor_t *x, int64_t dim, lt_tensor_t *index, lt_operand_t value) {
  LT_TRY(lt_check_write("index_fill_", x));
  if (lt_ag_needed(x, value.kind == LT_OPERAND_TENSOR ? value.t : NULL))
    return lt_ag_index_add_(x, dim, index, NULL, 1, true, value);
  if (on_cuda(x) || on_cuda(index)) {
    const lt_tensor_t *ts[2] = {x, index};
    LT_TRY(lt_check_same_device("index_fill_", 2, ts));
    lt_tensor_t *tv, *hx = to_host(x), *hi = to_host(index);
    lt_operand_t hv = host_operand(value, &tv);
    int rc = hx && hi ? lt_index_fill_(hx, dim, hi, hv) : LT_ERR;
    if (rc == LT_OK) rc = lt_copy_(x, hx);
    lt_release(hx), lt_release(hi), lt_release(tv);
    return rc;
  }
  const char *op = "index_fill_";
  const lt_tensor_t *ts[2] = {x, index}; /* a 0-dim value tensor is read on the host */
  LT_TRY(check_tensors(op, 2, ts));
  LT_TRY(check_index_dtype(op, index, true));
  if (index->ndim > 1) return lt_error("index_fill_(): Index has to be a vector/scalar, got a %dD tensor", index->ndim);
  unsigned char vbuf[8];
  LT_TRY(value_bytes(op, &value, x->dtype, vbuf));
  int d;
  LT_TRY(lt_wrap_dim(op, dim, x->ndim, &d));
  LT_TRY(check_no_overlap(op, x));
  lt_tensor_t xn;
  nonempty(x, &xn);
  lt_tensor_t *tmp;
  const int64_t *list;
  LT_TRY(index_list(op, index, xn.sizes[d], d + 1, &tmp, &list));
  lt_index_ctx_t ctx = {0};
  ctx.n = index->numel;
  ctx.index = list;
  ctx.value = vbuf;
  const lt_tensor_t *ops[1] = {&xn};
  run_batch(1, ops, xn.ndim, xn.sizes, d, lt_cpu_index_fill_loop(lt_elsize(x)), &ctx);
  lt_release(tmp);
  lt_bump_version(x);
  return LT_OK;
}

/* ---- nonzero ---- */

lt_tensor_t *lt_nonzero(lt_tensor_t *x) {
  if (on_cuda(x)) {
    lt_tensor_t *hx = to_host(x);
    lt_tensor_t *r = hx ? lt_nonzero(hx) : NULL;
    lt_release(hx);
    return back_to(r, x->device);
  }
  if (check_host("nonzero", x) != LT_OK) return NULL;
  int64_t count = lt_cpu_count_nonzero(lt_data(x), x->dtype, x->ndim, x->sizes, x->strides);
  int64_t sizes[2] = {count, x->ndim};
  lt_tensor_t *out = lt_empty(2, sizes, LT_INT64, x->device);
  if (!out) return NULL;
  lt_cpu_nonzero(lt_data(x), x->dtype, x->ndim, x->sizes, x->strides, count, lt_data(out));
  return out;
}
