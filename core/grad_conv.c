/* Autograd of convolution and pooling: each op records one node whose backward calls the op's own
   backward kernels (core/conv.c, core/pool.c). These backward functions are not themselves
   differentiable (no double backward through conv2d or pooling). */
#include "core/autograd.h"
#include "core/conv.h"
#include "core/pool.h"

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
  /* both are read for the shapes even where only one gradient is wanted */
  if (lt_node_save(n, 0, x) != LT_OK || lt_node_save(n, 1, w) != LT_OK) { lt_release(o); return NULL; }
  return o;
}

/* ---- max pooling: x in slot 0, the indices in slot 1 ---- */

static int max_pool_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *x = lt_node_saved(n, 0), *idx = lt_node_saved(n, 1);
  if (!x || !idx) return LT_ERR;
  gi[0] = lt_max_pool2d_backward(go[0], x, idx);
  return gi[0] ? LT_OK : LT_ERR;
}

int lt_ag_max_pool2d(lt_tensor_t *x, lt_tensor_t *out, lt_tensor_t *indices) {
  lt_node_t *n = lt_record("MaxPool2DWithIndicesBackward0", max_pool_bw, 1, &x, out, 0);
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
} avg_ctx_t;

static int avg_pool_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const avg_ctx_t *c = n->ctx;
  lt_tensor_t *x = lt_node_saved(n, 0);
  if (!x) return LT_ERR;
  gi[0] = lt_avg_pool2d_backward(go[0], x, c->kernel, c->stride, c->padding, c->ceil_mode, c->count_include_pad,
                                 c->divisor);
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
  return out;
}

/* ---- adaptive average pooling ---- */

static int adaptive_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  lt_tensor_t *x = lt_node_saved(n, 0);
  if (!x) return LT_ERR;
  gi[0] = lt_adaptive_avg_pool2d_backward(go[0], x);
  return gi[0] ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_adaptive_avg_pool2d(lt_tensor_t *x, lt_tensor_t *out) {
  if (!out) return NULL;
  lt_node_t *n = lt_record("AdaptiveAvgPool2DBackward0", adaptive_bw, 1, &x, out, 0);
  if (!n || lt_node_save(n, 0, x) != LT_OK) { lt_release(out); return NULL; }
  return out;
}
