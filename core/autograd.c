/* Autograd: nodes, per-tensor state, grad mode, in-place rules and the backward engine. */
#include "core/autograd.h"
#include "core/grad.h"
#include "core/comm.h"
#include "core/elementwise.h"
#include "core/factory.h"
#include "core/reduce.h"
#include "core/iter.h"
#include "core/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Thread_local bool lt_grad_off;
_Atomic bool lt_anomaly_on;
_Atomic bool lt_anomaly_check_nan = true;

bool lt_ag_needed_n(int n, lt_tensor_t *const *ts) {
  if (lt_grad_off) return false;
  for (int i = 0; i < n; i++)
    if (ts[i] && ts[i]->requires_grad) return true;
  return false;
}

/* ---- per-tensor state ---- */
static struct lt_autograd_meta *meta_of(lt_tensor_t *t) {
  if (!t->autograd) {
    t->autograd = calloc(1, sizeof *t->autograd);
    if (!t->autograd) lt_error("out of memory (autograd state)");
  }
  return t->autograd;
}

void lt_autograd_meta_free(lt_tensor_t *t) {
  struct lt_autograd_meta *m = t->autograd;
  t->autograd = NULL;
  if (m->grad_fn) {
    if (m->grad_fn->retained && m->grad_fn->retained[m->output_nr] == t)
      m->grad_fn->retained[m->output_nr] = NULL;
    lt_node_release(m->grad_fn);
  }
  if (m->hooks) m->hooks->free(m->hooks);
  free(m);
}

lt_node_t *lt_grad_fn(const lt_tensor_t *t) { return t->autograd ? t->autograd->grad_fn : NULL; }
bool lt_is_leaf(const lt_tensor_t *t) { return lt_grad_fn(t) == NULL; }

int lt_set_requires_grad(lt_tensor_t *t, bool on) {
  if (!lt_is_leaf(t)) {
    if (on) return LT_OK;
    return lt_error("requires_grad: you can only change requires_grad flags of leaf variables. If you "
                    "want to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var:detach().");
  }
  if (on && lt_is_inference(t) && !lt_inference_mode)
    return lt_error("requires_grad: Setting requires_grad=True on inference tensor outside InferenceMode is not "
                    "allowed.");
  if (on && !lt_dtype_is_floating(t->dtype))
    return lt_error("requires_grad: only Tensors of floating point dtype can require gradients, got %s",
                    lt_dtype_name(t->dtype));
  t->requires_grad = on;
  return LT_OK;
}

int lt_retain_grad(lt_tensor_t *t) {
  if (!t->requires_grad)
    return lt_error("retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  lt_node_t *n = lt_grad_fn(t);
  if (!n) return LT_OK; /* leaves keep their grad anyway */
  n->retained[t->autograd->output_nr] = t;
  t->autograd->retains_grad = true;
  return LT_OK;
}

lt_tensor_t *lt_detach(lt_tensor_t *t) { return lt_alias(t); }

lt_grad_hooks_t **lt_grad_hooks_slot(lt_tensor_t *t, int *k) {
  lt_node_t *n = lt_grad_fn(t);
  if (n) {
    *k = t->autograd->output_nr;
    n->serial = true; /* the hooks are Lua functions: they run on the thread that called backward */
    return &n->hooks;
  }
  *k = 0;
  struct lt_autograd_meta *m = meta_of(t);
  return m ? &m->hooks : NULL;
}

/* ---- nodes ---- */
void lt_meta_of(lt_meta_t *m, const lt_tensor_t *t) {
  m->ndim = t->ndim;
  m->dtype = t->dtype;
  m->device = t->device;
  memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
}

#define ALIGN16(x) (((x) + 15) & ~(size_t)15)

lt_node_t *lt_node_new(const char *name, lt_backward_fn fn, int n_in, lt_tensor_t *const *inputs,
                       int n_out, size_t ctx_size) {
  size_t sz = ALIGN16(sizeof(lt_node_t)) + ALIGN16(sizeof(lt_edge_t) * (size_t)n_in) +
              ALIGN16(sizeof(lt_meta_t) * (size_t)n_out) + ALIGN16(2 * sizeof(void *) * (size_t)n_out) +
              ctx_size;
  char *p = calloc(1, sz);
  if (!p) { lt_error("%s: out of memory (autograd node)", name); return NULL; }
  lt_node_t *n = (lt_node_t *)p;
  p += ALIGN16(sizeof(lt_node_t));
  n->in = (lt_edge_t *)p;
  p += ALIGN16(sizeof(lt_edge_t) * (size_t)n_in);
  n->out = (lt_meta_t *)p;
  p += ALIGN16(sizeof(lt_meta_t) * (size_t)n_out);
  n->retained = (lt_tensor_t **)p;
  n->buf = n->retained + n_out;
  p += ALIGN16(2 * sizeof(void *) * (size_t)n_out);
  n->ctx = ctx_size ? p : NULL;
  atomic_init(&n->refcount, 1);
  n->name = name;
  n->backward = fn;
  n->want_trace = atomic_load_explicit(&lt_anomaly_on, memory_order_relaxed);
  n->n_in = n_in;
  n->n_out = n_out;
  for (int k = 0; k < n_out; k++) n->out[k].ndim = -1;
  for (int i = 0; i < n_in; i++) {
    lt_tensor_t *t = inputs[i];
    if (!t) continue;
    lt_edge_t *e = &n->in[i];
    lt_meta_of(&e->meta, t);
    if (!t->requires_grad) continue;
    lt_node_t *g = lt_grad_fn(t);
    if (g) {
      e->node = g;
      e->nr = t->autograd->output_nr;
      lt_node_retain(g);
    } else {
      e->leaf = t;
      lt_retain(t);
    }
  }
  return n;
}

void lt_node_retain(lt_node_t *n) { atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed); }

static void release_saved(lt_node_t *n) {
  for (int k = 0; k < LT_NODE_SAVED; k++) {
    lt_release(n->saved[k].t);
    lt_release(n->saved[k].var);
    n->saved[k].t = n->saved[k].var = NULL;
  }
  if (n->free_ctx && !n->released) n->free_ctx(n);
  n->released = true;
}

/* Freed iteratively: a long chain of nodes must not recurse once per node. */
void lt_node_release(lt_node_t *n) {
  if (!n || atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) != 1) return;
  lt_node_t *local[64], **stack = local;
  int sp = 0, cap = 64;
  stack[sp++] = n;
  while (sp) {
    lt_node_t *d = stack[--sp];
    release_saved(d);
    for (int k = 0; k < d->n_out; k++) lt_release(d->buf[k]);
    for (int i = 0; i < d->n_in; i++) {
      lt_edge_t *e = &d->in[i];
      lt_release(e->leaf);
      lt_node_t *c = e->node;
      if (!c || atomic_fetch_sub_explicit(&c->refcount, 1, memory_order_acq_rel) != 1) continue;
      if (sp == cap) {
        lt_node_t **bigger = malloc(sizeof *bigger * (size_t)cap * 2);
        if (!bigger) { lt_node_retain(c); lt_node_release(c); continue; } /* recurse instead */
        memcpy(bigger, stack, sizeof *stack * (size_t)sp);
        if (stack != local) free(stack);
        stack = bigger;
        cap *= 2;
      }
      stack[sp++] = c;
    }
    if (d->hooks) d->hooks->free(d->hooks);
    free(d->trace);
    free(d);
  }
  if (stack != local) free(stack);
}

/* ---- create_graph: a backward recorded as a graph of its own ----
   The engine runs with grad mode on and calls each node's backward_graph, whose ops record nodes.
   The tensors a backward reads (lt_node_saved) are then given back their history: an output of the
   node, or an input (by its edge), so the gradients depend on them as the forward values did. */
static _Thread_local const char *graph_op; /* set while a backward with create_graph runs here */

/* where t's history is, seen from n (t is an input or output of n, or neither) */
static void saved_origin(lt_node_t *n, lt_saved_t *s, const lt_tensor_t *t) {
  s->out = s->edge = -1;
  if (!t->requires_grad) return;
  const struct lt_autograd_meta *m = t->autograd;
  if (m && m->grad_fn == n) { s->out = (int16_t)m->output_nr; return; }
  for (int i = 0; i < n->n_in; i++) {
    const lt_edge_t *e = &n->in[i];
    if ((e->leaf && e->leaf == t) || (e->node && m && e->node == m->grad_fn && e->nr == m->output_nr)) {
      s->edge = (int16_t)i;
      return;
    }
  }
}

/* the saved tensor k with its history (borrowed: n holds it until its backward ends) */
static lt_tensor_t *saved_var(lt_node_t *n, int k) {
  lt_saved_t *s = &n->saved[k];
  if (s->var) return s->var;
  const lt_edge_t *e = s->edge >= 0 ? &n->in[s->edge] : NULL;
  if (e && e->leaf) { /* the leaf itself: its gradient must reach that tensor */
    lt_retain(e->leaf);
    return s->var = e->leaf;
  }
  lt_node_t *fn = s->out >= 0 ? n : e ? e->node : NULL;
  if (!fn) return s->t;
  lt_tensor_t *v = lt_alias(s->t);
  struct lt_autograd_meta *m = v ? meta_of(v) : NULL;
  if (!m) { lt_release(v); return NULL; }
  lt_node_retain(fn);
  m->grad_fn = fn;
  m->output_nr = s->out >= 0 ? s->out : e->nr;
  v->requires_grad = true;
  return s->var = v;
}

/* after the node's backward: the tensors with history go (an output's would hold the node) */
static void release_vars(lt_node_t *n) {
  for (int k = 0; k < LT_NODE_SAVED; k++) {
    lt_release(n->saved[k].var);
    n->saved[k].var = NULL;
  }
}

int lt_node_save(lt_node_t *n, int k, lt_tensor_t *t) {
  if (lt_is_inference(t) && !lt_inference_mode)
    return lt_error("%s: Inference tensors cannot be saved for backward. To work around you can make a clone to "
                    "get a normal tensor and use it in autograd.", n->name);
  lt_tensor_t *a = lt_alias(t);
  if (!a) return LT_ERR;
  lt_release(n->saved[k].t);
  n->saved[k].t = a;
  n->saved[k].version = atomic_load_explicit(&t->storage->version, memory_order_relaxed);
  n->needs_saved = true;
  saved_origin(n, &n->saved[k], t);
  return LT_OK;
}

lt_tensor_t *lt_node_saved(lt_node_t *n, int k) {
  lt_saved_t *s = &n->saved[k];
  if (n->released || !s->t) {
    lt_error("Trying to backward through the graph a second time (or directly access saved tensors "
             "after they have already been freed). Saved intermediate values of the graph are freed "
             "when you call backward() or autograd.grad(). Specify retain_graph = true if you need to "
             "backward through the graph a second time or if you need to access saved tensors after "
             "calling backward.");
    return NULL;
  }
  unsigned v = atomic_load_explicit(&s->t->storage->version, memory_order_relaxed);
  if (v != s->version) {
    char sh[128];
    lt_error("one of the variables needed for gradient computation has been modified by an inplace "
             "operation: [torch.%s %s], which is saved by %s, is at version %u; expected version %u "
             "instead.", lt_dtype_name(s->t->dtype), lt_shape_str(s->t->ndim, s->t->sizes, sh, sizeof sh),
             n->name, v, s->version);
    return NULL;
  }
  return graph_op ? saved_var(n, k) : s->t;
}

void lt_node_set_output(lt_node_t *n, int k, lt_tensor_t *t) {
  struct lt_autograd_meta *m = meta_of(t);
  lt_meta_of(&n->out[k], t);
  if (!m) return; /* out of memory: the tensor stays without history */
  lt_node_retain(n);
  lt_node_release(m->grad_fn);
  m->grad_fn = n;
  m->output_nr = k;
  t->requires_grad = true;
  if (m->retains_grad) n->retained[k] = t;
}

void lt_node_mark_view(lt_tensor_t *t) {
  if (t->autograd) t->autograd->is_view = true;
}

lt_node_t *lt_record(const char *name, lt_backward_fn fn, int n_in, lt_tensor_t *const *inputs,
                     lt_tensor_t *out, size_t ctx_size) {
  lt_node_t *n = lt_node_new(name, fn, n_in, inputs, 1, ctx_size);
  if (!n) return NULL;
  lt_node_set_output(n, 0, out);
  lt_node_release(n); /* out holds it */
  return n;
}

/* ---- in-place ops ---- */
int lt_ag_check_inplace(const char *op, lt_tensor_t *self) {
  if (lt_grad_off) return LT_OK;
  if (self->requires_grad && lt_is_leaf(self))
    return lt_error("%s: a leaf Variable that requires grad is being used in an in-place operation.", op);
  bool partial = self->offset != 0 || (size_t)self->numel * lt_elsize(self) != self->storage->nbytes;
  if ((self->autograd && self->autograd->is_view) || partial)
    return lt_error("%s: in-place operations on views of tensors that require grad are not supported "
                    "by lutorch's autograd; use the out-of-place op (or clone() first)", op);
  return LT_OK;
}

int lt_ag_inplace_begin(const char *op, lt_tensor_t *self, lt_tensor_t **copy) {
  LT_TRY(lt_ag_check_inplace(op, self));
  *copy = lt_clone(self); /* recorded (CloneBackward) when self has history */
  return *copy ? LT_OK : LT_ERR;
}

lt_tensor_t *lt_ag_inplace_end(lt_tensor_t *self, lt_tensor_t *copy, lt_tensor_t *result) {
  lt_release(copy);
  if (!result) return NULL;
  if (result->ndim != self->ndim ||
      memcmp(result->sizes, self->sizes, sizeof(int64_t) * (size_t)self->ndim) != 0) {
    char a[128], b[128];
    lt_error("output with shape %s doesn't match the broadcast shape %s",
             lt_shape_str(self->ndim, self->sizes, a, sizeof a),
             lt_shape_str(result->ndim, result->sizes, b, sizeof b));
    lt_release(result);
    return NULL;
  }
  bool prev = lt_set_grad_enabled(false);
  int rc = lt_copy_(self, result);
  lt_set_grad_enabled(prev);
  lt_node_t *n = lt_grad_fn(result);
  if (rc == LT_OK && n) {
    lt_node_set_output(n, result->autograd->output_nr, self);
    n->out[result->autograd->output_nr].dtype = self->dtype;
  }
  lt_release(result);
  if (rc != LT_OK) return NULL;
  lt_retain(self);
  return self;
}

/* ---- helpers for backward functions ---- */
lt_tensor_t *lt_zeros_meta(const lt_meta_t *m) {
  return lt_full(m->ndim, m->sizes, lt_int_operand(0), m->dtype, m->device);
}

lt_tensor_t *lt_sum_to(lt_tensor_t *g, int ndim, const int64_t *sizes) {
  if (g->ndim == ndim && memcmp(g->sizes, sizes, sizeof(int64_t) * (size_t)ndim) == 0) {
    lt_retain(g);
    return g;
  }
  int lead = g->ndim - ndim;
  int64_t dims[LT_MAX_DIM];
  int nd = 0;
  bool ok = lead >= 0;
  for (int i = 0; ok && i < lead; i++) dims[nd++] = i;
  for (int i = 0; ok && i < ndim; i++) {
    int64_t gs = g->sizes[lead + i];
    if (sizes[i] == gs) continue;
    if (sizes[i] == 1) dims[nd++] = lead + i;
    else ok = false;
  }
  if (!ok) {
    char a[128], b[128];
    lt_error("autograd: a gradient of shape %s can't be summed to shape %s",
             lt_shape_str(g->ndim, g->sizes, a, sizeof a), lt_shape_str(ndim, sizes, b, sizeof b));
    return NULL;
  }
  lt_tensor_t *s = nd ? lt_sum(g, nd, dims, true, LT_DTYPE_INVALID) : (lt_retain(g), g);
  if (!s) return NULL;
  lt_tensor_t *r = lt_reshape(s, ndim, sizes);
  lt_release(s);
  return r;
}

/* ---- the engine ---- */
static _Thread_local unsigned engine_gen;

typedef struct {
  lt_node_t **v;
  int n, cap;
} nodevec_t;

static int vec_push(nodevec_t *v, lt_node_t *n) {
  if (v->n == v->cap) {
    int cap = v->cap ? v->cap * 2 : 64;
    lt_node_t **p = realloc(v->v, sizeof *p * (size_t)cap);
    if (!p) return lt_error("backward: out of memory");
    v->v = p;
    v->cap = cap;
  }
  v->v[v->n++] = n;
  return LT_OK;
}

typedef struct {
  int n;
  lt_tensor_t *const *inputs;
  lt_tensor_t **results;
} capture_t;

/* *slot += g (consumes g); never writes into a tensor someone else may hold */
static int acc_into(lt_tensor_t **slot, lt_tensor_t *g) {
  if (!*slot) { *slot = g; return LT_OK; }
  /* in place into a buffer the engine alone holds (no new tensor a sum), else a new one */
  lt_tensor_t *s = *slot;
  bool in_place = !graph_op && lt_ag_owns(s) && s->dtype == g->dtype && lt_device_eq(s->device, g->device) &&
                  s->ndim == g->ndim && memcmp(s->sizes, g->sizes, sizeof(int64_t) * (size_t)s->ndim) == 0;
  lt_tensor_t *r = lt_binary(LT_BINARY_add, lt_tensor_operand(s), lt_tensor_operand(g), 1, in_place ? s : NULL);
  if (in_place && r) {
    lt_release(r); /* s itself */
    lt_release(g);
    return LT_OK;
  }
  lt_release(g);
  if (!r) return LT_ERR;
  lt_release(*slot);
  *slot = r;
  return LT_OK;
}

bool lt_ag_owns(const lt_tensor_t *t) {
  return atomic_load(&t->refcount) == 1 && atomic_load(&t->storage->refcount) == 1 && lt_is_contiguous(t) &&
         !t->autograd;
}

/* under create_graph: t.grad = g, or t.grad + g out of place, keeping g's history (consumes g) */
static int acc_grad_graph(lt_tensor_t *t, lt_tensor_t *g) {
  if (!t->grad && (g->requires_grad || (lt_ag_owns(g) && g->offset == 0))) { t->grad = g; return LT_OK; }
  if (!t->grad) { /* a gradient someone else holds too */
    t->grad = lt_clone(g);
    lt_release(g);
    return t->grad ? LT_OK : LT_ERR;
  }
  lt_tensor_t *r = lt_binary(LT_BINARY_add, lt_tensor_operand(t->grad), lt_tensor_operand(g), 1, NULL);
  lt_release(g);
  if (!r) return LT_ERR;
  lt_release(t->grad);
  t->grad = r;
  return LT_OK;
}

/* t.grad += g (consumes g), as AccumulateGrad: steal a fresh gradient, add in place otherwise */
static int acc_grad_field(lt_tensor_t *t, lt_tensor_t *g) {
  if (graph_op) return acc_grad_graph(t, g);
  if (!t->grad) {
    if (lt_ag_owns(g) && g->offset == 0) { t->grad = g; return LT_OK; }
    t->grad = lt_clone(g);
    lt_release(g);
    return t->grad ? LT_OK : LT_ERR;
  }
  lt_tensor_t *r = lt_binary(LT_BINARY_add, lt_tensor_operand(t->grad), lt_tensor_operand(g), 1, t->grad);
  lt_release(g);
  if (!r) return LT_ERR;
  lt_release(r);
  return LT_OK;
}

int lt_accumulate_grad(lt_tensor_t *t, lt_tensor_t *g) {
  return g->requires_grad ? acc_grad_graph(t, g) : acc_grad_field(t, g);
}

/* ---- hooks for DistributedDataParallel (core/comm.h) ----
   Called after a leaf's .grad took a gradient, and when a backward into .grad ends; set once by
   torch.distributed, read by every engine thread. */
static const lt_ag_hooks_t *_Atomic ag_hooks;

void lt_ag_set_hooks(const lt_ag_hooks_t *h) { atomic_store(&ag_hooks, h); }

static void hook_leaf(lt_tensor_t *leaf) {
  const lt_ag_hooks_t *h = atomic_load(&ag_hooks);
  if (h && h->leaf_grad) h->leaf_grad(h->ud, leaf);
}

static int hook_end(int rc) {
  const lt_ag_hooks_t *h = atomic_load(&ag_hooks);
  return h && h->backward_end ? h->backward_end(h->ud, rc) : rc;
}

/* ---- tensor hooks of leaves ----
   A leaf with hooks takes its gradient once, summed over every edge into it, as PyTorch's
   AccumulateGrad node: the engine counts the edges (hooked_count), sums what arrives, and when the
   last edge has run (hooked_done) runs the hooks on the sum before .grad takes it. */
typedef struct {
  lt_tensor_t *leaf;
  int deps;
  lt_tensor_t *g;
} hooked_leaf_t;

typedef struct {
  hooked_leaf_t *v;
  int n, cap;
  unsigned gen;
} hooked_t;

static hooked_leaf_t *hooked_of(hooked_t *h, const lt_tensor_t *leaf) {
  struct lt_autograd_meta *m = leaf->autograd;
  if (!h || !m || !m->hooks || m->hook_gen != h->gen || m->hook_slot >= h->n) return NULL;
  return h->v[m->hook_slot].leaf == leaf ? &h->v[m->hook_slot] : NULL;
}

static int hooked_count(hooked_t *h, lt_tensor_t *leaf) {
  struct lt_autograd_meta *m = leaf->autograd;
  if (!m || !m->hooks) return LT_OK;
  hooked_leaf_t *e = hooked_of(h, leaf);
  if (!e) {
    if (h->n == h->cap) {
      int cap = h->cap ? h->cap * 2 : 8;
      hooked_leaf_t *p = realloc(h->v, sizeof *p * (size_t)cap);
      if (!p) return lt_error("backward: out of memory");
      h->v = p;
      h->cap = cap;
    }
    m->hook_gen = h->gen;
    m->hook_slot = h->n;
    e = &h->v[h->n++];
    *e = (hooked_leaf_t){leaf, 0, NULL};
  }
  e->deps++;
  return LT_OK;
}

static int hooked_done(hooked_leaf_t *e) {
  if (--e->deps > 0 || !e->g) return LT_OK;
  lt_tensor_t *g = e->g;
  e->g = NULL;
  lt_grad_hooks_t *hs = e->leaf->autograd->hooks;
  int rc = hs->run(hs, 0, &g, NULL);
  if (rc != LT_OK) {
    lt_release(g);
    return rc;
  }
  rc = acc_grad_field(e->leaf, g);
  if (rc == LT_OK) hook_leaf(e->leaf);
  return rc;
}

static int deliver_leaf(lt_tensor_t *leaf, lt_tensor_t *g, capture_t *cap, hooked_t *h) {
  hooked_leaf_t *e = cap ? NULL : hooked_of(h, leaf);
  if (e) return acc_into(&e->g, g);
  if (!cap) {
    int rc = acc_grad_field(leaf, g);
    if (rc == LT_OK) hook_leaf(leaf);
    return rc;
  }
  for (int j = 0; j < cap->n; j++)
    if (cap->inputs[j] == leaf) {
      lt_retain(g);
      if (acc_into(&cap->results[j], g) != LT_OK) { lt_release(g); return LT_ERR; }
    }
  lt_release(g);
  return LT_OK;
}

/* the whole input's gradient from a view op's gradient of its part (n->scatter; consumes g) */
static lt_tensor_t *whole_view_grad(lt_node_t *n, lt_tensor_t *g) {
  lt_tensor_t *whole = NULL;
  if (n->scatter(n, &whole, g) != LT_OK) {
    lt_release(whole);
    return NULL;
  }
  return whole;
}

/* shape, dtype and device of a gradient made to fit its input (consumes g) */
static lt_tensor_t *fit(lt_node_t *n, int i, lt_tensor_t *g) {
  const lt_meta_t *m = &n->in[i].meta;
  lt_tensor_t *r = lt_sum_to(g, m->ndim, m->sizes);
  if (!r) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_last_error());
    lt_error("%s returned an invalid gradient at index %d: %s", n->name, i + 1, msg);
  }
  lt_release(g);
  if (!r) return NULL;
  if (r->dtype != m->dtype || !lt_device_eq(r->device, m->device)) {
    /* between CPU devices a gradient moves without a copy: the engine owns it, no one writes it */
    bool retag = r->dtype == m->dtype && r->device.type == LT_CPU && m->device.type == LT_CPU;
    lt_tensor_t *c = retag ? lt_device_alias(r, m->device) : lt_convert(r, m->dtype, m->device);
    lt_release(r);
    r = c;
  }
  return r;
}

static int node_backward_graph(lt_node_t *n, lt_tensor_t **gin) {
  if (!n->backward_graph)
    return lt_error("%s: create_graph: double backward through %s is not supported yet", graph_op, n->name);
  int rc = n->backward_graph(n, n->buf, gin);
  release_vars(n);
  return rc;
}

/* The first half of running a node: its backward, from the gradients summed in its buffers (zeros
   for outputs no gradient reached); gin[i] receives the gradient of input i. For autograd.grad, the
   gradients of the inputs made by the node are taken first (before their hooks, as PyTorch 1.13
   does), and a node that leads to no input only gives those. */
static int node_backward(lt_node_t *n, capture_t *cap, lt_tensor_t **gin) {
  int rc = LT_OK;
  bool runs = !cap || n->needed;
  for (int k = 0; k < n->n_out && rc == LT_OK; k++) {
    bool arrived = n->buf[k] != NULL;
    if (!n->buf[k] && n->out[k].ndim >= 0) {
      n->buf[k] = lt_zeros_meta(&n->out[k]);
      if (!n->buf[k]) rc = LT_ERR;
    }
    if (rc != LT_OK || !n->buf[k]) continue;
    if (cap)
      for (int j = 0; j < cap->n && rc == LT_OK; j++) {
        struct lt_autograd_meta *m = cap->inputs[j]->autograd;
        if (m && m->grad_fn == n && m->output_nr == k) {
          lt_retain(n->buf[k]);
          rc = acc_into(&cap->results[j], n->buf[k]);
        }
      }
    if (!runs) continue;
    lt_tensor_t *keep = n->retained[k], *at = NULL;
    /* a tensor's hooks, only on a gradient that reached it */
    if (rc == LT_OK && arrived && n->hooks) rc = n->hooks->run(n->hooks, k, &n->buf[k], keep ? &at : NULL);
    if (keep && rc == LT_OK) {
      if (!at) {
        at = n->buf[k];
        lt_retain(at);
      }
      if (keep->grad) rc = acc_grad_field(keep, at);
      else { keep->grad = lt_clone(at); lt_release(at); rc = keep->grad ? LT_OK : LT_ERR; }
    } else {
      lt_release(at);
    }
  }
  if (rc == LT_OK && runs) rc = graph_op ? node_backward_graph(n, gin) : n->backward(n, n->buf, gin);
  for (int k = 0; k < n->n_out; k++) { lt_release(n->buf[k]); n->buf[k] = NULL; }
  return rc;
}

static lt_tensor_t **gin_alloc(lt_node_t *n, lt_tensor_t **local) {
  lt_tensor_t **gin = local;
  if (n->n_in > 8 && !(gin = calloc((size_t)n->n_in, sizeof *gin))) {
    lt_error("backward: out of memory");
    return NULL;
  }
  memset(gin, 0, sizeof *gin * (size_t)(n->n_in < 8 ? 8 : n->n_in));
  return gin;
}

/* anomaly mode: an error if a gradient the node returned has a NaN */
static int check_nan(lt_node_t *n, lt_tensor_t *const *gin) {
  for (int i = 0; i < n->n_in; i++) {
    lt_tensor_t *g = gin[i];
    if (!g || !lt_dtype_is_floating(g->dtype)) continue;
    lt_tensor_t *ne = lt_compare(LT_COMPARE_ne, lt_tensor_operand(g), lt_tensor_operand(g), NULL);
    lt_tensor_t *any = ne ? lt_any(ne, 0, NULL, false) : NULL;
    lt_operand_t v = {0};
    int rc = any ? lt_item(any, &v) : LT_ERR;
    lt_release(ne);
    lt_release(any);
    if (rc != LT_OK) return rc;
    if (v.i || v.f != 0)
      return lt_error("Function '%s' returned nan values in its %d%s output.", n->name, i + 1,
                      i % 10 == 0 && i % 100 != 10 ? "st" : i % 10 == 1 && i % 100 != 11 ? "nd"
                      : i % 10 == 2 && i % 100 != 12 ? "rd" : "th");
  }
  return LT_OK;
}

/* anomaly mode: an error while running node n says where the forward recorded it */
static int anomaly_error(lt_node_t *n) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", lt_last_error());
  return lt_error("%s\nError detected in %s. Traceback of forward call that caused the error:\n%s", msg,
                  n->name, n->trace ? n->trace : "(not recorded: the node was made inside another op, or "
                  "before anomaly detection was enabled)");
}

static int run_node(lt_node_t *n, capture_t *cap, nodevec_t *ready, hooked_t *h) {
  bool runs = !cap || n->needed;
  if (runs && n->released && n->needs_saved) return lt_node_saved(n, 0) ? LT_OK : LT_ERR;
  lt_tensor_t *gin_local[8], **gin = gin_alloc(n, gin_local);
  if (!gin) return LT_ERR;
  int rc = node_backward(n, cap, gin);
  if (!runs) { /* autograd.grad: the node made an input but leads to none */
    if (gin != gin_local) free(gin);
    return rc;
  }
  if (rc == LT_OK && atomic_load_explicit(&lt_anomaly_on, memory_order_relaxed) &&
      atomic_load_explicit(&lt_anomaly_check_nan, memory_order_relaxed))
    rc = check_nan(n, gin);
  for (int i = 0; i < n->n_in; i++) {
    lt_edge_t *e = &n->in[i];
    lt_tensor_t *g = gin[i];
    gin[i] = NULL;
    if (rc == LT_OK && g && (e->node || e->leaf)) {
      if (i == 0 && n->scatter && !graph_op && e->node) { /* backward_graph gives the whole gradient */
        rc = n->scatter(n, &e->node->buf[e->nr], g);
        g = NULL;
      } else if (i == 0 && n->scatter && !graph_op && !(g = whole_view_grad(n, g))) {
        rc = LT_ERR;
      }
      if (g && !(g = fit(n, i, g))) rc = LT_ERR;
      else if (g && e->node) rc = acc_into(&e->node->buf[e->nr], g);
      else if (g) rc = deliver_leaf(e->leaf, g, cap, h);
    } else {
      lt_release(g);
    }
    if (e->node && --e->node->deps == 0 && rc == LT_OK) rc = vec_push(ready, e->node);
    hooked_leaf_t *hl = e->leaf && rc == LT_OK ? hooked_of(h, e->leaf) : NULL;
    if (hl) rc = hooked_done(hl);
  }
  if (gin != gin_local) free(gin);
  return rc;
}

/* ---- backward across devices ----
   When the graph's nodes live on several devices (DataParallel's replicas), each device's nodes run
   on a thread of their own: the caller's for the roots' device, a pooled engine thread for each
   other, as PyTorch's engine has a thread per device. A node runs on the thread of the device of its
   output; backward functions and the fitting of gradients run unlocked, the hand-over of gradients
   to the next node and the count of pending consumers under one lock; gradients for leaves are
   summed into .grad once every device is done, in device order, on all the caller's kernel threads
   (par_flush). The kernel threads of the machine are shared out between the devices. Graphs on one
   device, with a Lua backward, or for autograd.grad run on the caller's thread alone. */
#include <omp.h>
#include <pthread.h>
#include <time.h>

#define PAR_SLOTS 16

struct leaf_grad {
  lt_tensor_t *leaf, *g;
  int dev; /* the device of the node that made it: 0 for the leaf's own, else its index + 1 */
  int seq; /* the order of arrival, among the gradients of one device */
};

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nslots;
  lt_device_t dev[PAR_SLOTS];
  nodevec_t q[PAR_SLOTS];
  int left;          /* nodes not yet run */
  int active;        /* pooled threads still inside par_loop */
  bool stop;
  int rc;
  char err[1024];
  bool retain_graph;
  int threads;       /* kernel threads per device */
  bool spin;         /* wait for work by spinning first (the OpenMP team's threads are all ours) */
  unsigned gen;      /* bumped at every broadcast of cv, for the spinning waits */
  /* gradients for leaves, under mu: summed into .grad after the devices' threads finish */
  struct leaf_grad *pend;
  int npend, cap_pend;
} par_t;

static void par_wake(par_t *pe) {
  __atomic_add_fetch(&pe->gen, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pe->cv);
}

/* spins until *gen differs from g or ns nanoseconds passed; true if it changed */
static bool spin_for_change(const unsigned *gen, unsigned g, long ns) {
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 1;; i++) {
    if (__atomic_load_n(gen, __ATOMIC_ACQUIRE) != g) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > ns) return false;
    }
  }
}

static int slot_of(par_t *pe, lt_device_t d) {
  for (int s = 0; s < pe->nslots; s++)
    if (lt_device_eq(pe->dev[s], d)) return s;
  if (pe->nslots == PAR_SLOTS) return -1;
  pe->dev[pe->nslots] = d;
  return pe->nslots++;
}

static lt_device_t node_device(const lt_node_t *n) {
  for (int k = 0; k < n->n_out; k++)
    if (n->out[k].ndim >= 0) return n->out[k].device;
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i].node || n->in[i].leaf) return n->in[i].meta.device;
  return lt_device(LT_CPU, 0);
}

static void par_fail(par_t *pe, int rc) {
  if (rc == LT_OK || pe->rc != LT_OK) return;
  pe->rc = rc;
  snprintf(pe->err, sizeof pe->err, "%s", lt_last_error());
}

/* locks for the gradient sums, picked by the address of the node or leaf summed into */
#define STRIPES 64
static pthread_mutex_t stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static void stripes_init(void) {
  for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&stripes[i], NULL);
}
static pthread_mutex_t *stripe_of(const void *p) { return &stripes[((uintptr_t)p >> 6) % STRIPES]; }

/* Gradients for leaves wait until every device's part of the graph has run (under pe->mu; consumes
   g). Then par_flush sums them into .grad on the calling thread, with all of its kernel threads:
   each thread adds its share, so the sum and the optimizer step after it (split the same way) read
   memory their own core wrote; a gradient summed by the thread of the device that made it would
   cross to the other cores twice. The order is fixed: the gradient made on the leaf's device first
   (taken as .grad without a copy when nothing else holds it), then the others by device. */
static int par_defer_leaf(par_t *pe, lt_tensor_t *leaf, lt_tensor_t *g, lt_device_t from) {
  if (pe->npend == pe->cap_pend) {
    int cap = pe->cap_pend ? pe->cap_pend * 2 : 32;
    struct leaf_grad *p = realloc(pe->pend, sizeof *p * (size_t)cap);
    if (!p) {
      lt_release(g);
      return lt_error("backward: out of memory");
    }
    pe->pend = p;
    pe->cap_pend = cap;
  }
  bool own = lt_device_eq(from, leaf->device);
  pe->pend[pe->npend] = (struct leaf_grad){leaf, g, own ? 0 : from.index + 1, pe->npend};
  pe->npend++;
  return LT_OK;
}

static int leaf_grad_cmp(const void *a, const void *b) {
  const struct leaf_grad *x = a, *y = b;
  if (x->leaf != y->leaf) return (uintptr_t)x->leaf < (uintptr_t)y->leaf ? -1 : 1;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

static int par_flush(par_t *pe, int rc) {
  if (rc == LT_OK && pe->npend > 1) qsort(pe->pend, (size_t)pe->npend, sizeof *pe->pend, leaf_grad_cmp);
  for (int i = 0; i < pe->npend; i++) {
    lt_tensor_t *leaf = pe->pend[i].leaf, *g = pe->pend[i].g;
    if (rc != LT_OK) {
      lt_release(g);
      continue;
    }
    rc = acc_grad_field(leaf, g);
    if (rc == LT_OK) hook_leaf(leaf);
  }
  free(pe->pend);
  pe->pend = NULL;
  pe->npend = pe->cap_pend = 0;
  return rc;
}

static void par_run(par_t *pe, lt_node_t *n) {
  int rc = LT_OK;
  lt_tensor_t *gin_local[8], **gin = NULL;
  if (n->released && n->needs_saved) rc = lt_node_saved(n, 0) ? LT_OK : LT_ERR;
  else if (!(gin = gin_alloc(n, gin_local))) rc = LT_ERR;
  if (rc == LT_OK) rc = node_backward(n, NULL, gin);
  for (int i = 0; i < n->n_in; i++) {
    lt_edge_t *e = &n->in[i];
    lt_tensor_t *g = gin ? gin[i] : NULL;
    if (gin) gin[i] = NULL;
    bool scatter = false; /* g is a view op's gradient of part of a node's output (n->scatter) */
    if (rc == LT_OK && g && (e->node || e->leaf)) {
      if (i == 0 && n->scatter && e->node) scatter = true;
      else if (i == 0 && n->scatter && !(g = whole_view_grad(n, g))) rc = LT_ERR;
      if (g && !scatter && !(g = fit(n, i, g))) rc = LT_ERR;
    } else {
      lt_release(g);
      g = NULL;
    }
    if (g && e->node) { /* the sum runs under a lock of its target only, so other deliveries go on */
      pthread_mutex_t *m = stripe_of(e->node);
      pthread_mutex_lock(m);
      rc = scatter ? n->scatter(n, &e->node->buf[e->nr], g) : acc_into(&e->node->buf[e->nr], g);
      pthread_mutex_unlock(m);
    }
    pthread_mutex_lock(&pe->mu);
    if (g && !e->node) rc = par_defer_leaf(pe, e->leaf, g, pe->dev[n->slot]);
    if (e->node && --e->node->deps == 0 && rc == LT_OK) {
      rc = vec_push(&pe->q[e->node->slot], e->node);
      par_wake(pe);
    }
    if (rc != LT_OK) par_fail(pe, rc);
    pthread_mutex_unlock(&pe->mu);
  }
  if (gin && gin != gin_local) free(gin);
  if (!pe->retain_graph) release_saved(n);
  pthread_mutex_lock(&pe->mu);
  par_fail(pe, rc);
  if (--pe->left == 0 || pe->rc != LT_OK) pe->stop = true;
  par_wake(pe);
  pthread_mutex_unlock(&pe->mu);
}

/* serve the queues of slots first, first + step, ... until the graph is done or failed */
static void par_loop(par_t *pe, int first, int step) {
  bool prev = lt_set_grad_enabled(false);
  int limit_prev = lt_thread_num_threads();
  lt_set_thread_num_threads(pe->threads);
  pthread_mutex_lock(&pe->mu);
  while (!pe->stop) {
    nodevec_t *q = NULL;
    for (int s = first; s < pe->nslots && !q; s += step)
      if (pe->q[s].n) q = &pe->q[s];
    if (!q) {
      if (pe->spin) { /* up to 2 ms: a node of another device usually finishes sooner */
        unsigned g = __atomic_load_n(&pe->gen, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&pe->mu);
        bool changed = spin_for_change(&pe->gen, g, 2000000L);
        pthread_mutex_lock(&pe->mu);
        if (changed || __atomic_load_n(&pe->gen, __ATOMIC_ACQUIRE) != g) continue;
      }
      pthread_cond_wait(&pe->cv, &pe->mu);
      continue;
    }
    lt_node_t *n = q->v[--q->n];
    pthread_mutex_unlock(&pe->mu);
    par_run(pe, n);
    pthread_mutex_lock(&pe->mu);
  }
  pthread_mutex_unlock(&pe->mu);
  lt_set_thread_num_threads(limit_prev);
  lt_set_grad_enabled(prev);
}

/* the pooled engine threads, one per extra device of a backward; one backward at a time uses them */
typedef struct {
  pthread_t th;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  par_t *job;
  int slot;
} eworker_t;

static eworker_t eworkers[PAR_SLOTS];
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

static void *eworker_main(void *arg) {
  eworker_t *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (!w->job) pthread_cond_wait(&w->cv, &w->mu);
    par_t *pe = w->job;
    int slot = w->slot;
    pthread_mutex_unlock(&w->mu);
    par_loop(pe, slot, PAR_SLOTS);
    pthread_mutex_lock(&w->mu);
    w->job = NULL;
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_lock(&pe->mu);
    pe->active--;
    pthread_cond_broadcast(&pe->cv);
    pthread_mutex_unlock(&pe->mu);
  }
  return NULL;
}

/* engine_parallel on this thread's OpenMP team, with a core or less per device: thread t serves
   the devices t, t + n, ... of an n-thread team, waiting for work by spinning first. The team's
   workers are spinning, ready, after the forward's kernels; waking sleeping threads (the pooled
   engine threads) costs up to a millisecond on some virtual machines. */
static int engine_team(par_t *pe, int nall, nodevec_t *ready, bool retain_graph) {
  if (pthread_mutex_init(&pe->mu, NULL) != 0) return 1;
  if (pthread_cond_init(&pe->cv, NULL) != 0) {
    pthread_mutex_destroy(&pe->mu);
    return 1;
  }
  pe->left = nall;
  pe->retain_graph = retain_graph;
  pe->spin = true;
  int rc = LT_OK;
  for (int i = 0; i < ready->n && rc == LT_OK; i++) rc = vec_push(&pe->q[ready->v[i]->slot], ready->v[i]);
  ready->n = 0;
  if (rc == LT_OK) {
#pragma omp parallel num_threads(pe->nslots)
    par_loop(pe, omp_get_thread_num(), omp_get_num_threads());
    if (pe->rc != LT_OK) rc = lt_error("%s", pe->err);
  }
  rc = par_flush(pe, rc);
  for (int s = 0; s < PAR_SLOTS; s++) free(pe->q[s].v);
  pthread_cond_destroy(&pe->cv);
  pthread_mutex_destroy(&pe->mu);
  return rc;
}

/* Runs the ready roots and everything after them across devices. Returns 1 when the graph does not
   qualify (the caller runs it serially, nothing having been touched), else LT_OK or LT_ERR. */
static int engine_parallel(nodevec_t *all, nodevec_t *ready, bool retain_graph) {
  par_t pe;
  memset(&pe, 0, sizeof pe);
  for (int i = 0; i < all->n; i++) {
    lt_node_t *d = all->v[i];
    if (d->serial) return 1;
    if ((d->slot = slot_of(&pe, node_device(d))) < 0) return 1;
  }
  if (pe.nslots < 2) return 1;
  if (pthread_once(&stripes_once, stripes_init) != 0) return 1;
  int total = lt_num_threads();
  pe.threads = total / pe.nslots > 1 ? total / pe.nslots : 1;
  if (pe.threads == 1 && !omp_in_parallel()) return engine_team(&pe, all->n, ready, retain_graph);
  if (pthread_mutex_trylock(&pool_mu) != 0) return 1; /* another thread's backward holds the pool */
  int rc = LT_OK;
  for (int s = 1; s < pe.nslots && rc == LT_OK; s++) {
    eworker_t *w = &eworkers[s - 1];
    if (w->started) continue;
    if (pthread_mutex_init(&w->mu, NULL) != 0 || pthread_cond_init(&w->cv, NULL) != 0) rc = LT_ERR;
    else if (pthread_create(&w->th, NULL, eworker_main, w) != 0) rc = LT_ERR;
    else {
      pthread_detach(w->th);
      w->started = true;
    }
  }
  if (rc != LT_OK || pthread_mutex_init(&pe.mu, NULL) != 0) {
    pthread_mutex_unlock(&pool_mu);
    return 1;
  }
  if (pthread_cond_init(&pe.cv, NULL) != 0) {
    pthread_mutex_destroy(&pe.mu);
    pthread_mutex_unlock(&pool_mu);
    return 1;
  }
  pe.left = all->n;
  pe.retain_graph = retain_graph;
  for (int i = 0; i < ready->n && rc == LT_OK; i++) rc = vec_push(&pe.q[ready->v[i]->slot], ready->v[i]);
  ready->n = 0;
  if (rc == LT_OK) {
    pe.active = pe.nslots - 1;
    for (int s = 1; s < pe.nslots; s++) {
      eworker_t *w = &eworkers[s - 1];
      pthread_mutex_lock(&w->mu);
      w->job = &pe;
      w->slot = s;
      pthread_cond_signal(&w->cv);
      pthread_mutex_unlock(&w->mu);
    }
    par_loop(&pe, 0, PAR_SLOTS);
    pthread_mutex_lock(&pe.mu);
    while (pe.active > 0) pthread_cond_wait(&pe.cv, &pe.mu);
    pthread_mutex_unlock(&pe.mu);
    if (pe.rc != LT_OK) rc = lt_error("%s", pe.err);
  }
  rc = par_flush(&pe, rc);
  for (int s = 0; s < PAR_SLOTS; s++) free(pe.q[s].v);
  pthread_cond_destroy(&pe.cv);
  pthread_mutex_destroy(&pe.mu);
  pthread_mutex_unlock(&pool_mu);
  return rc;
}

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
  return (x > y) - (x < y);
}

static bool ptr_in(void *const *sorted, int n, const void *p) {
  return n && bsearch(&p, sorted, (size_t)n, sizeof *sorted, ptr_cmp) != NULL;
}

/* autograd.grad: marks the nodes whose backward leads to an input (n->needed), as PyTorch runs only
   those, and in each the inputs whose gradients lead to none (n->skip: its backward skips them, as
   PyTorch's should_compute_output does: the input gradient of a convolution whose weight is not
   asked for computes no weight gradient; not under create_graph, where the graphs those backwards
   record keep every input they read, so that what a later grad reaches does not change). In
   reverse topological order (Kahn's, on a copy of the counts in n->slot, which only the engine
   across devices uses): a node is needed when an edge goes to an input leaf, to a needed node, or
   to the node that made an input. */
static int mark_needed(int n, lt_tensor_t *const *roots, nodevec_t *all, capture_t *cap, bool skip) {
  nodevec_t order = {0}, q = {0};
  void **leaves = malloc(sizeof *leaves * (size_t)(cap->n + 1)), **makers = malloc(sizeof *makers * (size_t)(cap->n + 1));
  int nl = 0, nm = 0, rc = leaves && makers ? LT_OK : lt_error("autograd.grad: out of memory");
  for (int j = 0; j < cap->n && rc == LT_OK; j++) {
    lt_node_t *m = lt_grad_fn(cap->inputs[j]);
    if (m) makers[nm++] = m;
    else leaves[nl++] = cap->inputs[j];
  }
  if (rc == LT_OK) {
    qsort(leaves, (size_t)nl, sizeof *leaves, ptr_cmp);
    qsort(makers, (size_t)nm, sizeof *makers, ptr_cmp);
  }
  for (int i = 0; i < all->n; i++) {
    all->v[i]->slot = all->v[i]->deps;
    all->v[i]->needed = false;
  }
  for (int i = 0; i < n && rc == LT_OK; i++) {
    lt_node_t *g = lt_grad_fn(roots[i]);
    if (g && g->slot == 0) {
      g->slot = -1;
      rc = vec_push(&q, g);
    }
  }
  while (rc == LT_OK && q.n) {
    lt_node_t *d = q.v[--q.n];
    rc = vec_push(&order, d);
    for (int i = 0; i < d->n_in && rc == LT_OK; i++)
      if (d->in[i].node && --d->in[i].node->slot == 0) rc = vec_push(&q, d->in[i].node);
  }
  for (int j = order.n - 1; j >= 0 && rc == LT_OK; j--) {
    lt_node_t *d = order.v[j];
    for (int i = 0; i < d->n_in; i++) {
      lt_edge_t *e = &d->in[i];
      bool need = e->leaf ? ptr_in(leaves, nl, e->leaf)
                          : e->node && (e->node->needed || ptr_in(makers, nm, e->node));
      if (need) d->needed = true;
      else if (skip && i < 64) d->skip |= (uint64_t)1 << i;
    }
  }
  free(leaves);
  free(makers);
  free(order.v);
  free(q.v);
  return rc;
}

static int engine(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, bool retain_graph,
                  capture_t *cap, const char *create_graph) {
  unsigned gen = ++engine_gen;
  if (gen == 0) gen = ++engine_gen;
  nodevec_t all = {0}, ready = {0}, stack = {0};
  hooked_t hooked = {.gen = gen}, *hk = cap ? NULL : &hooked;
  bool anomaly = atomic_load_explicit(&lt_anomaly_on, memory_order_relaxed);
  int rc = LT_OK;
  bool prev = lt_set_grad_enabled(create_graph != NULL);
  const char *prev_graph = graph_op;
  graph_op = create_graph;
  /* 1. every node reachable from the roots, with the number of edges into it */
  for (int i = 0; i < n && rc == LT_OK; i++) {
    lt_tensor_t *r = roots[i];
    if (!r->requires_grad) {
      rc = lt_error("backward: element %d of tensors does not require grad and does not have a grad_fn", i + 1);
      break;
    }
    lt_node_t *g = lt_grad_fn(r);
    if (!g && hk) rc = hooked_count(hk, r);
    if (g && g->gen != gen) {
      g->gen = gen;
      g->deps = 0;
      g->skip = 0;
      if ((rc = vec_push(&all, g)) == LT_OK) rc = vec_push(&stack, g);
    }
  }
  while (rc == LT_OK && stack.n) {
    lt_node_t *d = stack.v[--stack.n];
    for (int i = 0; i < d->n_in && rc == LT_OK; i++) {
      lt_node_t *c = d->in[i].node;
      if (d->in[i].leaf && hk) rc = hooked_count(hk, d->in[i].leaf);
      if (!c) continue;
      if (c->gen != gen) {
        c->gen = gen;
        c->deps = 0;
        c->skip = 0;
        if ((rc = vec_push(&all, c)) == LT_OK) rc = vec_push(&stack, c);
      }
      c->deps++;
    }
  }
  /* 2. the roots' gradients */
  for (int i = 0; i < n && rc == LT_OK; i++) {
    lt_tensor_t *r = roots[i], *g = grads ? grads[i] : NULL;
    char a[128], b[128];
    if (!g) {
      if (r->numel != 1) { rc = lt_error("backward: grad can be implicitly created only for scalar outputs"); break; }
      g = lt_full(r->ndim, r->sizes, lt_int_operand(1), r->dtype, r->device);
      if (!g) { rc = LT_ERR; break; }
    } else if (g->ndim != r->ndim || memcmp(g->sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim) != 0) {
      rc = lt_error("backward: Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a "
                    "shape of %s", i + 1, lt_shape_str(g->ndim, g->sizes, a, sizeof a), i + 1,
                    lt_shape_str(r->ndim, r->sizes, b, sizeof b));
      break;
    } else if (g->dtype != r->dtype || !lt_device_eq(g->device, r->device)) {
      g = lt_convert(g, r->dtype, r->device);
      if (!g) { rc = LT_ERR; break; }
    } else {
      lt_retain(g);
    }
    lt_node_t *node = lt_grad_fn(r);
    if (node) rc = acc_into(&node->buf[r->autograd->output_nr], g);
    else rc = deliver_leaf(r, g, cap, hk);
    hooked_leaf_t *hl = !node && rc == LT_OK ? hooked_of(hk, r) : NULL;
    if (hl) rc = hooked_done(hl);
  }
  if (rc == LT_OK && cap) rc = mark_needed(n, roots, &all, cap, !create_graph);
  for (int i = 0; i < n && rc == LT_OK; i++) {
    lt_node_t *g = lt_grad_fn(roots[i]);
    if (g && g->deps == 0) {
      g->deps = -1; /* queued once */
      rc = vec_push(&ready, g);
    }
  }
  /* 3. run nodes whose every consumer has run: across devices when the graph spans several */
  if (rc == LT_OK && !cap && !create_graph && ready.n && !hooked.n && !anomaly) {
    int pr = engine_parallel(&all, &ready, retain_graph);
    if (pr != 1) rc = pr;
  }
  while (rc == LT_OK && ready.n) {
    lt_node_t *d = ready.v[--ready.n];
    rc = run_node(d, cap, &ready, hk);
    if (rc != LT_OK && anomaly) rc = anomaly_error(d);
    if (!retain_graph && (!cap || d->needed)) release_saved(d);
  }
  for (int i = 0; i < hooked.n; i++) lt_release(hooked.v[i].g); /* after an error */
  free(hooked.v);
  for (int i = 0; i < all.n; i++) /* after an error, gradients left in buffers */
    for (int k = 0; k < all.v[i]->n_out; k++) {
      lt_release(all.v[i]->buf[k]);
      all.v[i]->buf[k] = NULL;
    }
  free(all.v);
  free(ready.v);
  free(stack.v);
  if (!cap) rc = hook_end(rc);
  graph_op = prev_graph;
  lt_set_grad_enabled(prev);
  return rc;
}

int lt_backward(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, bool retain_graph) {
  return engine(n, roots, grads, retain_graph, NULL, NULL);
}

int lt_backward_create_graph(const char *op, int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads,
                             bool retain_graph) {
  return engine(n, roots, grads, retain_graph, NULL, op);
}

static int grad_engine(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, int n_in,
                       lt_tensor_t *const *inputs, bool retain_graph, bool allow_unused,
                       lt_tensor_t **results, const char *create_graph) {
  for (int j = 0; j < n_in; j++) {
    results[j] = NULL;
    if (!inputs[j]->requires_grad)
      return lt_error("autograd.grad: One of the differentiated Tensors (input %d) does not require grad", j + 1);
  }
  capture_t cap = {n_in, inputs, results};
  int rc = engine(n, roots, grads, retain_graph, &cap, create_graph);
  for (int j = 0; j < n_in && rc == LT_OK; j++)
    if (!results[j] && !allow_unused)
      rc = lt_error("autograd.grad: One of the differentiated Tensors (input %d) appears to not have "
                    "been used in the graph. Set allow_unused = true if this is the desired behavior.", j + 1);
  if (rc != LT_OK)
    for (int j = 0; j < n_in; j++) { lt_release(results[j]); results[j] = NULL; }
  return rc;
}

int lt_autograd_grad(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, int n_in,
                     lt_tensor_t *const *inputs, bool retain_graph, bool allow_unused,
                     lt_tensor_t **results) {
  return grad_engine(n, roots, grads, n_in, inputs, retain_graph, allow_unused, results, NULL);
}

int lt_autograd_grad_create_graph(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, int n_in,
                                  lt_tensor_t *const *inputs, bool retain_graph, bool allow_unused,
                                  lt_tensor_t **results) {
  return grad_engine(n, roots, grads, n_in, inputs, retain_graph, allow_unused, results, "autograd.grad");
}
