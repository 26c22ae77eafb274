/* The fused LSTM cell: checks, the CPU loop or the CUDA kernel (both over kernels/rnn.h), and its
   autograd node, whose backward is the fused backward and whose backward under create_graph is
   the cell's formula in recorded ops (so that it differentiates again). */
#include "core/rnn.h"
#include "core/autograd.h"
#include "core/cuda.h"
#include "core/elementwise.h"
#include "core/factory.h"
#include "core/grad.h"
#include "core/shape.h"
#include "kernels/cpu/rnn.h"

#include <stdbool.h>

static const char *OP = "lstm_cell";

/* t as a contiguous tensor of dtype dt (a new reference) */
static lt_tensor_t *contiguous_as(lt_tensor_t *t, lt_dtype dt) {
  return t->dtype == dt ? lt_contiguous(t) : lt_convert(t, dt, t->device);
}

/* g [N, 4H], c [N, H], floating (float32, float64), one device; *N, *H */
static int check_cell(lt_tensor_t *g, lt_tensor_t *c, int64_t *N, int64_t *H) {
  if (!g || !c) return lt_error("%s: expected tensors", OP);
  const lt_tensor_t *both[2] = {g, c};
  LT_TRY(lt_check_same_device(OP, 2, both));
  if (g->dtype != LT_FLOAT32 && g->dtype != LT_FLOAT64)
    return lt_error("%s: expected float32 or float64 gates, got %s", OP, lt_dtype_name(g->dtype));
  if (c->dtype != g->dtype)
    return lt_error("%s: the gates (%s) and the cell state (%s) must have one dtype", OP, lt_dtype_name(g->dtype),
                    lt_dtype_name(c->dtype));
  char a[128], b[128];
  if (g->ndim != 2 || c->ndim != 2 || g->sizes[0] != c->sizes[0] || g->sizes[1] != 4 * c->sizes[1])
    return lt_error("%s: expected gates of shape [N, 4H] and a cell state of shape [N, H], got %s and %s", OP,
                    lt_shape_str(g->ndim, g->sizes, a, sizeof a), lt_shape_str(c->ndim, c->sizes, b, sizeof b));
  *N = c->sizes[0];
  *H = c->sizes[1];
  return LT_OK;
}

static int forward(lt_tensor_t *g, lt_tensor_t *c, lt_tensor_t **h, lt_tensor_t **c2) {
  int64_t N, H;
  LT_TRY(check_cell(g, c, &N, &H));
  lt_tensor_t *gc = lt_contiguous(g), *cc = gc ? lt_contiguous(c) : NULL;
  lt_tensor_t *ho = cc ? lt_empty(2, c->sizes, c->dtype, c->device) : NULL;
  lt_tensor_t *co = ho ? lt_empty(2, c->sizes, c->dtype, c->device) : NULL;
  int rc = co ? LT_OK : LT_ERR;
  if (rc == LT_OK) {
    if (g->device.type == LT_CUDA) rc = lt_cuda_lstm_cell(OP, gc, cc, ho, co, N, H);
    else lt_cpu_lstm_cell(g->dtype, lt_data(gc), lt_data(cc), lt_data(ho), lt_data(co), N, H);
  }
  lt_release(gc);
  lt_release(cc);
  if (rc != LT_OK) {
    lt_release(ho);
    lt_release(co);
    return LT_ERR;
  }
  *h = ho;
  *c2 = co;
  return LT_OK;
}

int lt_lstm_cell_backward(lt_tensor_t *g, lt_tensor_t *c, lt_tensor_t *dh, lt_tensor_t *dc2, lt_tensor_t **dg,
                          lt_tensor_t **dc) {
  *dg = *dc = NULL;
  int64_t N, H;
  LT_TRY(check_cell(g, c, &N, &H));
  const lt_tensor_t *all[4] = {g, c, dh, dc2};
  LT_TRY(lt_check_same_device(OP, 4, all));
  char a[128];
  for (int k = 0; k < 2; k++) {
    const lt_tensor_t *d = k ? dc2 : dh;
    if (d && (d->ndim != 2 || d->sizes[0] != N || d->sizes[1] != H))
      return lt_error("%s: the gradient of %s has shape %s, expected that of the cell state", OP, k ? "c" : "h",
                      lt_shape_str(d->ndim, d->sizes, a, sizeof a));
  }
  lt_tensor_t *gc = lt_contiguous(g), *cc = gc ? lt_contiguous(c) : NULL;
  lt_tensor_t *hc = cc && dh ? contiguous_as(dh, g->dtype) : NULL, *c2c = cc && dc2 ? contiguous_as(dc2, g->dtype) : NULL;
  lt_tensor_t *go = NULL, *co = NULL;
  int rc = LT_ERR;
  if (cc && (!dh || hc) && (!dc2 || c2c) && (go = lt_empty(2, g->sizes, g->dtype, g->device)) &&
      (co = lt_empty(2, c->sizes, c->dtype, c->device))) {
    rc = LT_OK;
    if (g->device.type == LT_CUDA) rc = lt_cuda_lstm_cell_backward(OP, gc, cc, hc, c2c, go, co, N, H);
    else
      lt_cpu_lstm_cell_backward(g->dtype, lt_data(gc), lt_data(cc), hc ? lt_data(hc) : NULL, c2c ? lt_data(c2c) : NULL,
                                lt_data(go), lt_data(co), N, H);
  }
  lt_release(gc), lt_release(cc), lt_release(hc), lt_release(c2c);
  if (rc != LT_OK) {
    lt_release(go), lt_release(co);
    return LT_ERR;
  }
  *dg = go;
  *dc = co;
  return LT_OK;
}

/* ---- autograd: g in slot 0, c in slot 1 ---- */

static int cell_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *g = lt_node_saved(n, 0), *c = lt_node_saved(n, 1), *dg, *dc;
  if (!g || !c) return LT_ERR;
  LT_TRY(lt_lstm_cell_backward(g, c, go[0], go[1], &dg, &dc));
  if (lt_node_needs(n, 0)) gi[0] = dg;
  else lt_release(dg);
  if (lt_node_needs(n, 1)) gi[1] = dc;
  else lt_release(dc);
  return LT_OK;
}

/* under create_graph: the same formula as kernels/rnn.h in recorded ops (each temporary kept in
   tmp and released at the end; the first failure stops the rest) */
#define R(expr) (ok && (tmp[k] = (expr)) != NULL ? tmp[k++] : (ok = false, (lt_tensor_t *)NULL))
#define MUL(a, b) lt_op(LT_BINARY_mul, lt_T(a), lt_T(b))
#define ADD(a, b) lt_op(LT_BINARY_add, lt_T(a), lt_T(b))
#define ONE_MINUS(a) lt_op(LT_BINARY_sub, lt_F(1.0), lt_T(a))
#define SIG(a) lt_unary(LT_UNARY_sigmoid, (a), NULL)
#define TANH(a) lt_unary(LT_UNARY_tanh, (a), NULL)

static int cell_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *g = lt_node_saved(n, 0), *c = lt_node_saved(n, 1), *dh = go[0], *dc2 = go[1];
  if (!g || !c) return LT_ERR;
  if (!dh && !dc2) return LT_OK;
  int64_t H = c->sizes[1];
  lt_tensor_t *tmp[40] = {NULL};
  int k = 0;
  bool ok = true;
  lt_tensor_t *ni = R(lt_narrow(g, 1, 0, H)), *nf = R(lt_narrow(g, 1, H, H)), *ng = R(lt_narrow(g, 1, 2 * H, H)),
              *no = R(lt_narrow(g, 1, 3 * H, H));
  lt_tensor_t *i = R(SIG(ni)), *f = R(SIG(nf)), *gg = R(TANH(ng)), *o = R(SIG(no));
  lt_tensor_t *fc = R(MUL(f, c)), *ig = R(MUL(i, gg)), *c2 = R(ADD(fc, ig)), *tc = R(TANH(c2));
  lt_tensor_t *dcn = dc2, *dgo = NULL;
  if (dh) { /* dcn = dc2 + dh o (1 - tc^2); dgo = dh tc o (1 - o) */
    lt_tensor_t *tc2 = R(MUL(tc, tc)), *omt = R(ONE_MINUS(tc2)), *a = R(MUL(dh, o)), *b = R(MUL(a, omt));
    dcn = dc2 ? R(ADD(b, dc2)) : b;
    lt_tensor_t *omo = R(ONE_MINUS(o)), *w1 = R(MUL(dh, tc)), *w2 = R(MUL(w1, o));
    dgo = R(MUL(w2, omo));
  } else {
    dgo = R(lt_full(o->ndim, o->sizes, lt_F(0.0), o->dtype, o->device));
  }
  lt_tensor_t *omi = R(ONE_MINUS(i)), *x1 = R(MUL(dcn, gg)), *x2 = R(MUL(x1, i)), *dgi = R(MUL(x2, omi));
  lt_tensor_t *omf = R(ONE_MINUS(f)), *y1 = R(MUL(dcn, c)), *y2 = R(MUL(y1, f)), *dgf = R(MUL(y2, omf));
  lt_tensor_t *gg2 = R(MUL(gg, gg)), *omg = R(ONE_MINUS(gg2)), *z1 = R(MUL(dcn, i)), *dgg = R(MUL(z1, omg));
  if (ok && lt_node_needs(n, 0)) {
    lt_tensor_t *parts[4] = {dgi, dgf, dgg, dgo};
    ok = (gi[0] = lt_cat(4, parts, 1)) != NULL;
  }
  if (ok && lt_node_needs(n, 1)) ok = (gi[1] = MUL(dcn, f)) != NULL;
  for (int j = 0; j < k; j++) lt_release(tmp[j]);
  return ok ? LT_OK : LT_ERR;
}
#undef R
#undef MUL
#undef ADD
#undef ONE_MINUS
#undef SIG
#undef TANH

int lt_lstm_cell(lt_tensor_t *g, lt_tensor_t *c, lt_tensor_t **h, lt_tensor_t **c2) {
  *h = *c2 = NULL;
  if (!lt_ag_needed(g, c)) return forward(g, c, h, c2);
  bool prev = lt_set_grad_enabled(false);
  int rc = forward(g, c, h, c2);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK) return LT_ERR;
  lt_tensor_t *in[2] = {g, c};
  lt_node_t *n = lt_node_new("ThnnFusedLstmCellBackward0", cell_bw, 2, in, 2, 0);
  bool ok = n != NULL;
  if (ok) {
    n->backward_graph = cell_graph_bw;
    lt_node_set_output(n, 0, *h);
    lt_node_set_output(n, 1, *c2);
    ok = lt_node_save(n, 0, g) == LT_OK && lt_node_save(n, 1, c) == LT_OK;
    lt_node_release(n);
  }
  if (ok) return LT_OK;
  lt_release(*h), lt_release(*c2);
  *h = *c2 = NULL;
  return LT_ERR;
}
