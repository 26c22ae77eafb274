/* Autograd of the matrix products. Every product is a batched matmul once 1-D operands are given
   their missing dimension: ga = g @ b^T, gb = a^T @ g (then the added dimension is squeezed and the
   engine sums broadcast batch dimensions). addmm adds beta * g for its first operand. */
#include "core/grad.h"
#include "core/linalg.h"
#include "core/shape.h"

typedef struct {
  bool addmm;
  bool b_transposed; /* b is a 2-D transposed view of a contiguous matrix (a Linear's w:t()) */
  double beta, alpha;
} linalg_ctx_t;

static lt_tensor_t *as_matrix(lt_tensor_t *t, int64_t dim1d) {
  return t->ndim == 1 ? lt_unsqueeze(t, dim1d) : lt_retained(t);
}

static lt_tensor_t *transposed(lt_tensor_t *t) { /* consumes t */
  if (!t) return NULL;
  lt_tensor_t *r = lt_transpose(t, -1, -2);
  lt_release(t);
  return r;
}

static lt_tensor_t *matmul_c(lt_tensor_t *a, lt_tensor_t *b) { /* consumes both */
  lt_tensor_t *r = a && b ? lt_matmul(a, b) : NULL;
  lt_release(a);
  lt_release(b);
  return r;
}

static lt_tensor_t *squeezed(lt_tensor_t *t, bool yes, int64_t dim) { /* consumes t */
  if (!t || !yes) return t;
  lt_tensor_t *r = lt_squeeze_dim(t, dim);
  lt_release(t);
  return r;
}

static int linalg_bw(lt_node_t *n, lt_tensor_t *const *go, lt_tensor_t **gi) {
  const linalg_ctx_t *c = n->ctx;
  int ia = c->addmm ? 1 : 0, ib = ia + 1;
  bool a1 = n->in[ia].meta.ndim == 1, b1 = n->in[ib].meta.ndim == 1;
  lt_tensor_t *g = lt_retained(go[0]);
  if (a1) { lt_tensor_t *u = lt_unsqueeze(g, b1 ? 0 : -2); lt_release(g); g = u; }
  if (g && b1) { lt_tensor_t *u = lt_unsqueeze(g, -1); lt_release(g); g = u; }
  if (!g) return LT_ERR;
  int rc = LT_OK;
  if (lt_node_needs(n, ia)) {
    lt_tensor_t *b = lt_node_saved(n, 1);
    gi[ia] = b ? squeezed(matmul_c(lt_retained(g), transposed(as_matrix(b, -1))), a1, -2) : NULL;
    if (gi[ia] && c->alpha != 1) gi[ia] = lt_opc(LT_BINARY_mul, gi[ia], lt_F(c->alpha));
    if (!gi[ia]) rc = LT_ERR;
  }
  if (rc == LT_OK && lt_node_needs(n, ib)) {
    lt_tensor_t *a = lt_node_saved(n, 0);
    if (a && c->b_transposed && a->ndim == 2 && g->ndim == 2)
      /* (g^T @ a)^T: the transpose's own backward turns it back into a contiguous gradient for the
         weight, instead of a strided copy of a^T @ g */
      gi[ib] = transposed(matmul_c(transposed(lt_retained(g)), lt_retained(a)));
    else
      gi[ib] = a ? squeezed(matmul_c(transposed(as_matrix(a, 0)), lt_retained(g)), b1, -1) : NULL;
    if (gi[ib] && c->alpha != 1) gi[ib] = lt_opc(LT_BINARY_mul, gi[ib], lt_F(c->alpha));
    if (!gi[ib]) rc = LT_ERR;
  }
  if (rc == LT_OK && c->addmm && lt_node_needs(n, 0)) {
    gi[0] = c->beta == 1 ? lt_retained(go[0]) : lt_op(LT_BINARY_mul, lt_T(go[0]), lt_F(c->beta));
    if (!gi[0]) rc = LT_ERR;
  }
  lt_release(g);
  return rc;
}

lt_tensor_t *lt_ag_linalg(const char *name, lt_tensor_t *c, lt_tensor_t *a, lt_tensor_t *b, double beta,
                          double alpha, lt_tensor_t *o) {
  if (!o) return NULL;
  lt_tensor_t *in[3] = {c, a, b};
  bool addmm = c != NULL;
  lt_node_t *n = lt_record(name, linalg_bw, addmm ? 3 : 2, addmm ? in : in + 1, o, sizeof(linalg_ctx_t));
  if (!n) { lt_release(o); return NULL; }
  n->backward_graph = linalg_bw; /* made of recorded ops */
  linalg_ctx_t *x = n->ctx;
  x->addmm = addmm;
  x->beta = beta;
  x->alpha = alpha;
  x->b_transposed = b->ndim == 2 && b->strides[0] == 1 && b->strides[1] == b->sizes[0] && b->sizes[0] > 1 &&
                    b->sizes[1] > 1;
  int ia = addmm ? 1 : 0;
  if ((lt_node_needs(n, ia + 1) && lt_node_save(n, 0, a) != LT_OK) ||
      (lt_node_needs(n, ia) && lt_node_save(n, 1, b) != LT_OK)) {
    lt_release(o);
    return NULL;
  }
  return o;
}
