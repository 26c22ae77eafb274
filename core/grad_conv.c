/* Autograd of convolution and pooling: each op records one node whose backward calls the op's own
   backward kernels (core/conv.c, core/pool.c). Under create_graph conv2d's backward is itself a
   recorded op (ConvolutionBackwardBackward0, bilinear in the gradient and x or w), so convolutions
   differentiate any number of times; so do the poolings: max pooling's backward is a recorded
   scatter_add to the saved indices, average pooling's a recorded op whose backward is the pooling. */
#include "core/grad.h"
#include "core/conv.h"
#include "core/factory.h"
#include "core/index.h"
#include "core/pool.h"
#include "core/reduce.h"
#include "core/shape.h"

typedef struct {
  int64_t stride[2], padding[2], dilation[2], groups;
} conv_ctx_t;

static int conv_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const conv_ctx_t *c = n->ctx;
  lt_tensor_t *x = lt_node_saved(n, 0), *w = lt_node_saved(n, 1);
  if (!x || !w) return LT_ERR;
  bool need[3] = {lt_node_needs(n, 0), lt_node_needs(n, 1), n->n_in > 2 && lt_node_needs(n, 2)};
  lt_tensor_t *gb = NULL;
  LT_TRY(lt_conv2d_backward(go[0], x, w, c->stride, c->padding, c->dilation, c->groups, need, &gi[0], &gi[1],
                            &gb));
  if (n->n_in > 2) gi[2] = gb;
  return LT_OK;
}

static int conv_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi);

lt_tensor_t *lt_ag_conv2d(lt_tensor_t *x, lt_tensor_t *w, lt_tensor_t *b, const int64_t stride[2],
                          const int64_t padding[2], const int64_t dilation[2], int64_t groups,
                          lt_tensor_t *o) {
  if (!o) return NULL;
  lt_tensor_t *in[3] = {x, w, b};
  lt_node_t *n = lt_record("ConvolutionBackward0", conv_bw, b ? 3 : 2, in, o, sizeof(conv_ctx_t));
  if (!n) { lt_release(o); return NULL; }
  conv_ctx_t *c = n->ctx;
  for (int i = 0; i < 2; i++) {
    c->stride[i] = stride[i];
    c->padding[i] = padding[i];
    c->dilation[i] = dilation[i];
  }
  c->groups = groups;
  n->backward_graph = conv_graph_bw;
  /* both are read for the shapes even where only one gradient is wanted */
  if (lt_node_save(n, 0, x) != LT_OK || lt_node_save(n, 1, w) != LT_OK) { lt_release(o); return NULL; }
  return o;
}

/* ---- conv2d's backward as a recorded op ----
   gx = Bx(g, w) (the transposed convolution of g) and gw = Bw(g, x) (the correlation of x with g),
   each bilinear. Its own backward, from the gradients ggx and ggw of gx and gw:
   g: conv2d(ggx, w) + conv2d(x, ggw); x: Bx(g, ggw); w: Bw(g, ggx), the last two through this op
   again, so every order records. Saved: g, x, w (slots 0-2). */
static int conv_bw_rec(const conv_ctx_t *c, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, const bool need[2],
                       lt_tensor_t **gx, lt_tensor_t **gw);

static lt_tensor_t *conv_fwd(const conv_ctx_t *c, lt_tensor_t *x, lt_tensor_t *w) {
  return lt_conv2d(x, w, NULL, c->stride, c->padding, c->dilation, c->groups);
}

static int conv_bb_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const conv_ctx_t *c = n->ctx;
  lt_tensor_t *g = lt_node_saved(n, 0), *x = lt_node_saved(n, 1), *w = lt_node_saved(n, 2);
  if (!g || !x || !w) return LT_ERR;
  lt_tensor_t *ggx = go[0], *ggw = go[1]; /* NULL: that output was not made */
  if (lt_node_needs(n, 0)) {
    lt_tensor_t *a = ggx ? conv_fwd(c, ggx, w) : NULL, *b = ggw ? conv_fwd(c, x, ggw) : NULL;
    if ((ggx && !a) || (ggw && !b)) { lt_release(a); lt_release(b); return LT_ERR; }
    gi[0] = a && b ? lt_opcc(LT_BINARY_add, a, b) : a ? a : b;
    if (!gi[0] && a && b) return LT_ERR;
  }
  lt_tensor_t *unused = NULL;
  if (lt_node_needs(n, 1) && ggw) LT_TRY(conv_bw_rec(c, g, x, ggw, (const bool[2]){true, false}, &gi[1], &unused));
  if (lt_node_needs(n, 2) && ggx) LT_TRY(conv_bw_rec(c, g, ggx, w, (const bool[2]){false, true}, &unused, &gi[2]));
  return LT_OK;
}

static int conv_bw_rec(const conv_ctx_t *c, lt_tensor_t *g, lt_tensor_t *x, lt_tensor_t *w, const bool need[2],
                       lt_tensor_t **gx, lt_tensor_t **gw) {
  /* gx reads w, gw reads x (the other only for its shape) */
  lt_tensor_t *in[3] = {g, need[1] ? x : NULL, need[0] ? w : NULL};
  bool rec = lt_ag_needed_n(3, in), prev = lt_set_grad_enabled(false);
  lt_tensor_t *gb = NULL;
  int rc = lt_conv2d_backward(g, x, w, c->stride, c->padding, c->dilation, c->groups,
                              (const bool[3]){need[0], need[1], false}, gx, gw, &gb);
  lt_set_grad_enabled(prev);
  if (rc != LT_OK || !rec) return rc;
  lt_node_t *n = lt_node_new("ConvolutionBackwardBackward0", conv_bb_bw, 3, in, 2, sizeof(conv_ctx_t));
  bool ok = n != NULL;
  if (ok) {
    *(conv_ctx_t *)n->ctx = *c;
    n->backward_graph = conv_bb_bw; /* made of recorded ops */
    if (*gx) lt_node_set_output(n, 0, *gx);
    if (*gw) lt_node_set_output(n, 1, *gw);
    ok = lt_node_save(n, 0, g) == LT_OK && lt_node_save(n, 1, x) == LT_OK && lt_node_save(n, 2, w) == LT_OK;
    lt_node_release(n);
  }
  if (ok) return LT_OK;
  lt_release(*gx), lt_release(*gw);
  *gx = *gw = NULL;
  return LT_ERR;
}

/* conv2d's backward under create_graph: the gradients of x and w through the recorded op above,
   the bias's the sum of g over all but the channel dim */
static int conv_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const conv_ctx_t *c = n->ctx;
  lt_tensor_t *x = lt_node_saved(n, 0), *w = lt_node_saved(n, 1);
  if (!x || !w) return LT_ERR;
  bool need[2] = {lt_node_needs(n, 0), lt_node_needs(n, 1)};
  if (need[0] || need[1]) LT_TRY(conv_bw_rec(c, go[0], x, w, need, &gi[0], &gi[1]));
  if (n->n_in > 2 && lt_node_needs(n, 2)) {
    static const int64_t batched[3] = {0, 2, 3}, single[2] = {1, 2};
    bool b4 = go[0]->ndim == 4;
    gi[2] = lt_sum(go[0], b4 ? 3 : 2, b4 ? batched : single, false, LT_DTYPE_INVALID);
    if (!gi[2]) return LT_ERR;
  }
  return LT_OK;
}

/* ---- max pooling: x in slot 0, the indices in slot 1 ---- */

static int max_pool_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *x = lt_node_saved(n, 0), *idx = lt_node_saved(n, 1);
  if (!x || !idx) return LT_ERR;
  gi[0] = lt_max_pool2d_backward(go[0], x, idx);
  return gi[0] ? LT_OK : LT_ERR;
}

/* under create_graph: g scattered (a recorded scatter_add) into zeros over each plane of x */
static int max_pool_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *x = lt_node_saved(n, 0), *idx = lt_node_saved(n, 1), *g = go[0];
  if (!x || !idx) return LT_ERR;
  int nd = x->ndim;
  int64_t gs[LT_MAX_DIM], xs[LT_MAX_DIM];
  for (int i = 0; i < nd - 2; i++) gs[i] = xs[i] = x->sizes[i];
  gs[nd - 2] = g->sizes[nd - 2] * g->sizes[nd - 1];
  xs[nd - 2] = x->sizes[nd - 2] * x->sizes[nd - 1];
  lt_tensor_t *i1 = lt_reshape(idx, nd - 1, gs), *gf = lt_reshape(g, nd - 1, gs);
  lt_tensor_t *i0 = i1 ? lt_binary(LT_BINARY_sub, lt_T(i1), lt_int_operand(1), 1, NULL) : NULL; /* 1-based */
  lt_tensor_t *z = lt_full(nd - 1, xs, lt_F(0), g->dtype, g->device);
  lt_tensor_t *r = i0 && gf && z ? lt_scatter_add(z, nd - 2, i0, gf, NULL) : NULL;
  lt_release(i1), lt_release(i0), lt_release(gf), lt_release(z);
  gi[0] = r ? lt_reshape(r, nd, x->sizes) : NULL;
  lt_release(r);
  return gi[0] ? LT_OK : LT_ERR;
}

int lt_ag_max_pool2d(lt_tensor_t *x, lt_tensor_t *out, lt_tensor_t *indices) {
  lt_node_t *n = lt_record("MaxPool2DWithIndicesBackward0", max_pool_bw, 1, &x, out, 0);
  if (n) n->backward_graph = max_pool_graph_bw;
  if (!n || lt_node_save(n, 0, x) != LT_OK || lt_node_save(n, 1, indices) != LT_OK) {
    lt_release(out);
    lt_release(indices);
    return LT_ERR;
  }
  return LT_OK;
}

/* ---- average pooling ---- */

typedef struct {
  int64_t kernel[2], stride[2], padding[2], divisor;
  bool ceil_mode, count_include_pad;
  bool adaptive; /* adaptive_avg_pool2d (the rest unused) */
} avg_ctx_t;

/* the pooling's backward (linear in g; x gives the shape) */
static lt_tensor_t *avg_back(const avg_ctx_t *c, lt_tensor_t *g, lt_tensor_t *x) {
  if (c->adaptive) return lt_adaptive_avg_pool2d_backward(g, x);
  return lt_avg_pool2d_backward(g, x, c->kernel, c->stride, c->padding, c->ceil_mode, c->count_include_pad, c->divisor);
}

/* the backward's adjoint: the pooling itself, to g's spatial size (the recorded backward's input) */
static int avg_back_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const avg_ctx_t *c = n->ctx;
  const lt_meta_t *m = &n->in[0].meta;
  gi[0] = c->adaptive ? lt_adaptive_avg_pool2d(go[0], m->sizes + m->ndim - 2)
                      : lt_avg_pool2d(go[0], c->kernel, c->stride, c->padding, c->ceil_mode, c->count_include_pad,
                                      c->divisor);
  return gi[0] ? LT_OK : LT_ERR;
}

/* under create_graph: the backward as a recorded op (AvgPool2DBackwardBackward0), whose own backward
   is the pooling, recorded in turn */
static int avg_graph_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const avg_ctx_t *c = n->ctx;
  lt_tensor_t *x = lt_node_saved(n, 0), *g = go[0];
  if (!x) return LT_ERR;
  bool rec = lt_ag_needed(g, NULL), prev = lt_set_grad_enabled(false);
  lt_tensor_t *r = avg_back(c, g, x);
  lt_set_grad_enabled(prev);
  if (r && rec) {
    lt_node_t *b = lt_record(c->adaptive ? "AdaptiveAvgPool2DBackwardBackward0" : "AvgPool2DBackwardBackward0",
                             avg_back_bw, 1, &g, r, sizeof *c);
    if (!b) { lt_release(r); return LT_ERR; }
    *(avg_ctx_t *)b->ctx = *c;
    b->backward_graph = avg_back_bw; /* made of recorded ops */
  }
  gi[0] = r;
  return r ? LT_OK : LT_ERR;
}

static int avg_pool_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *x = lt_node_saved(n, 0);
  if (!x) return LT_ERR;
  gi[0] = avg_back(n->ctx, go[0], x);
  return gi[0] ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_avg_pool2d(lt_tensor_t *x, const int64_t kernel[2], const int64_t stride[2],
                              const int64_t padding[2], bool ceil_mode, bool count_include_pad,
                              int64_t divisor_override, lt_tensor_t *out) {
  if (!out) return NULL;
  lt_node_t *n = lt_record("AvgPool2DBackward0", avg_pool_bw, 1, &x, out, sizeof(avg_ctx_t));
  if (!n || lt_node_save(n, 0, x) != LT_OK) { lt_release(out); return NULL; }
  avg_ctx_t *c = n->ctx;
  for (int i = 0; i < 2; i++) {
    c->kernel[i] = kernel[i];
    c->stride[i] = stride[i];
    c->padding[i] = padding[i];
  }
  c->divisor = divisor_override;
  c->ceil_mode = ceil_mode;
  c->count_include_pad = count_include_pad;
  n->backward_graph = avg_graph_bw;
  return out;
}

/* ---- adaptive average pooling ---- */

lt_tensor_t *lt_ag_adaptive_avg_pool2d(lt_tensor_t *x, lt_tensor_t *out) {
  if (!out) return NULL;
  lt_node_t *n = lt_record("AdaptiveAvgPool2DBackward0", avg_pool_bw, 1, &x, out, sizeof(avg_ctx_t));
  if (!n || lt_node_save(n, 0, x) != LT_OK) { lt_release(out); return NULL; }
  ((avg_ctx_t *)n->ctx)->adaptive = true;
  n->backward_graph = avg_graph_bw;
  return out;
}
