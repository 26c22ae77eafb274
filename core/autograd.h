/* Reverse-mode autograd: graph nodes recorded by differentiable ops, the engine that walks them
   backward, per-thread grad mode, and the rules for in-place ops on tensors that need gradients.

   An op on inputs that require grad (with grad mode on) runs its plain computation with grad mode
   off, then records one node: where the gradient of each input goes (an edge to the node that made
   it, or to a leaf tensor), the tensors its backward needs (saved as aliases with their storage
   version, so an in-place change is detected at backward time), and its scalar arguments in a
   context. Backward functions see the gradient of every output (zeros where none arrived) and return
   one gradient per input, in any shape the input broadcasts to and any dtype: the engine sums it
   to the input's shape and converts it to the input's dtype and device, as PyTorch's engine does. */
#ifndef LT_AUTOGRAD_H
#define LT_AUTOGRAD_H

#include "core/tensor.h"

#include <stdbool.h>

typedef struct lt_node lt_node_t;

/* A tensor's hooks (x:register_hook), kept by its node (one list per output) or, for a leaf, by its
   autograd state; the lists are the bindings' (Lua functions), the engine only runs them. */
typedef struct lt_grad_hooks lt_grad_hooks_t;
struct lt_grad_hooks {
  /* Runs the hooks of output k (0 for a leaf) on *g, which they may replace (the old one released).
     *at_retain (when not NULL) receives a new reference to the gradient at retain_grad's place among
     the hooks, or is left NULL when retain_grad is not among them. */
  int (*run)(lt_grad_hooks_t *h, int k, lt_tensor_t **g, lt_tensor_t **at_retain);
  void (*free)(lt_grad_hooks_t *h); /* called where the owner dies (any thread) */
};

/* grad_out[k] for each output (never NULL); grad_in[i] set to a new reference or left NULL (no
   gradient, or input i does not need one: see lt_node_needs). */
typedef int (*lt_backward_fn)(lt_node_t *n, lt_tensor_t *const *grad_out, lt_tensor_t **grad_in);

typedef struct {
  int ndim;
  lt_dtype dtype;
  lt_device_t device;
  int64_t sizes[LT_MAX_DIM];
} lt_meta_t;

typedef struct {
  lt_node_t *node;   /* the node that made the input (output `nr` of it), or */
  lt_tensor_t *leaf; /* the leaf tensor whose .grad receives it; both NULL: no gradient */
  int nr;
  lt_meta_t meta;    /* the input's shape, dtype and device */
} lt_edge_t;

#define LT_NODE_SAVED 4

typedef struct {
  lt_tensor_t *t;    /* an alias (no autograd state), so saving an output makes no cycle */
  unsigned version;
  /* where its history is, for a backward with create_graph: output `out` of the node, or the
     input that came by edge `edge` (-1: neither, the tensor has no history to keep) */
  int16_t out, edge;
  lt_tensor_t *var;  /* during such a backward: the tensor with that history (lt_node_saved) */
} lt_saved_t;

struct lt_node {
  atomic_int refcount;
  const char *name;        /* PyTorch's: "MulBackward0" */
  lt_backward_fn backward;
  /* the backward a backward with create_graph runs (grad mode on): made of recorded ops, so the
     gradients it returns have history and can be differentiated again; NULL: double backward
     through this node is not supported */
  lt_backward_fn backward_graph;
  void (*free_ctx)(lt_node_t *n); /* releases what ctx holds; NULL when plain data */
  bool released;           /* saved state freed after a backward without retain_graph */
  bool needs_saved;        /* its backward reads saved state */
  bool serial;             /* its backward must run on the thread that called backward (Lua) */
  int n_in, n_out;
  lt_edge_t *in;
  lt_meta_t *out;
  lt_tensor_t **retained;  /* per output: a tensor (weak) whose .grad is kept, or NULL */
  lt_saved_t saved[LT_NODE_SAVED];
  void *ctx;               /* op arguments, zeroed, ctx_size bytes */
  /* For view ops that take part of their input (narrow, select, slice): their backward gives
     input 0 the gradient of the view only, which this adds into that part of the input's gradient
     *slot, making the zeros where the slot is empty (consumes g). A loop over x[t] then adds each
     step's gradient into its row instead of a whole zero-padded copy of x. NULL for other ops. */
  int (*scatter)(lt_node_t *n, lt_tensor_t **slot, lt_tensor_t *g);
  /* engine scratch */
  unsigned gen;
  int deps;
  int slot;                /* the device queue it runs from, when backward runs across devices */
  lt_tensor_t **buf;       /* per output: the gradient summed so far */
  bool needed;             /* autograd.grad: its backward leads to an input (else it does not run) */
  uint64_t skip;           /* autograd.grad: bit i set when input i's gradient leads to no input (its
                              backward need not compute it: lt_node_needs); 0 for backward */
  lt_grad_hooks_t *hooks;  /* its outputs' tensor hooks, or NULL (the node then runs serially) */
  bool want_trace;         /* recorded in anomaly mode */
  char *trace;             /* anomaly mode: where the forward made it (malloc'd), or NULL */
};

/* per-tensor state, hanging off lt_tensor_t.autograd */
struct lt_autograd_meta {
  lt_node_t *grad_fn;      /* NULL for leaves */
  int output_nr;
  bool retains_grad;
  bool is_view;            /* made by a view op from a tensor with history */
  lt_grad_hooks_t *hooks;  /* a leaf's tensor hooks, or NULL */
  unsigned hook_gen;       /* engine scratch: the backward that counts its gradients (hook_slot) */
  int hook_slot;
};

/* ---- grad mode (per thread) ---- */
extern _Thread_local bool lt_grad_off;
static inline bool lt_grad_enabled(void) { return !lt_grad_off; }
/* set, returning the previous state */
static inline bool lt_set_grad_enabled(bool on) { bool prev = !lt_grad_off; lt_grad_off = !on; return prev; }

/* Whether an op on these inputs records a node (NULL entries allowed). */
static inline bool lt_ag_needed(const lt_tensor_t *a, const lt_tensor_t *b) {
  return ((a && a->requires_grad) || (b && b->requires_grad)) && !lt_grad_off;
}
bool lt_ag_needed_n(int n, lt_tensor_t *const *ts);

/* ---- tensors ---- */
/* x.requires_grad = on: leaves only, floating dtypes only. */
int lt_set_requires_grad(lt_tensor_t *t, bool on);
bool lt_is_leaf(const lt_tensor_t *t);
lt_node_t *lt_grad_fn(const lt_tensor_t *t); /* borrowed; NULL for leaves */
int lt_retain_grad(lt_tensor_t *t);
/* a new tensor sharing t's data, without history */
lt_tensor_t *lt_detach(lt_tensor_t *t);

/* The hook lists of t (which requires grad) and the index of t's among them: its node's (marked to
   run serially) or, for a leaf, its own. NULL + error when out of memory. */
lt_grad_hooks_t **lt_grad_hooks_slot(lt_tensor_t *t, int *k);

/* ---- anomaly mode (torch.autograd.set_detect_anomaly), for every thread ----
   When on, the engine runs serially, checks every gradient a backward function returns for NaN,
   and an error raised while running a node names the node and where its forward was recorded: a
   node recorded in anomaly mode wants a trace (want_trace), which the bindings give it (a Lua
   traceback, malloc'd) when its output first reaches Lua. */
extern _Atomic bool lt_anomaly_on;
/* whether anomaly mode checks the gradients for NaN (torch.set_anomaly_enabled's check_nan; true) */
extern _Atomic bool lt_anomaly_check_nan;

/* ---- recording (used by the ops) ---- */
/* A node for an op with n_in inputs (NULL entries: no gradient flows there) and n_out outputs,
   with ctx_size bytes of zeroed context. NULL + error when out of memory. */
lt_node_t *lt_node_new(const char *name, lt_backward_fn fn, int n_in, lt_tensor_t *const *inputs,
                       int n_out, size_t ctx_size);
/* Save t (an input or output) in slot k for backward. */
int lt_node_save(lt_node_t *n, int k, lt_tensor_t *t);
/* The tensor saved in slot k (borrowed), or NULL + the PyTorch error when it was changed in place
   or freed by an earlier backward. */
lt_tensor_t *lt_node_saved(lt_node_t *n, int k);
/* Output k of the node is t: t gets the history (requires_grad, grad_fn) */
void lt_node_set_output(lt_node_t *n, int k, lt_tensor_t *t);
/* Mark t as a view made by a recorded op (in-place changes to it are refused). */
void lt_node_mark_view(lt_tensor_t *t);
/* Whether input i wants a gradient. */
static inline bool lt_node_needs(const lt_node_t *n, int i) {
  return (n->in[i].node || n->in[i].leaf) && !(i < 64 && (n->skip >> i & 1));
}
void lt_node_retain(lt_node_t *n);
void lt_node_release(lt_node_t *n);
/* Record a one-output node: make it, set output, release the maker's reference. Returns the node
   (borrowed: owned by out) for saving, or NULL + error. */
lt_node_t *lt_record(const char *name, lt_backward_fn fn, int n_in, lt_tensor_t *const *inputs,
                     lt_tensor_t *out, size_t ctx_size);

/* ---- in-place ops ----
   An in-place op whose target or inputs need gradients runs as: begin (refuses a leaf that requires
   grad and views, and returns a copy of self's values with self's history), the op out of place on
   that copy, then end (writes the result into self, which takes the result's history). */
int lt_ag_inplace_begin(const char *op, lt_tensor_t *self, lt_tensor_t **copy);
/* consumes copy and result; returns self retained, or NULL */
lt_tensor_t *lt_ag_inplace_end(lt_tensor_t *self, lt_tensor_t *copy, lt_tensor_t *result);
/* Refuse an in-place write to self when autograd forbids it (out= arguments too). */
int lt_ag_check_inplace(const char *op, lt_tensor_t *self);

/* ---- engine ---- */
/* Backward from roots: grads[i] NULL means ones (roots[i] must then have one element).
   Gradients accumulate into .grad of the leaves. */
int lt_backward(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, bool retain_graph);
/* Gradients of roots with respect to inputs, returned in results (new references; NULL where
   unused and allow_unused); .grad is not touched. */
int lt_autograd_grad(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, int n_in,
                     lt_tensor_t *const *inputs, bool retain_graph, bool allow_unused,
                     lt_tensor_t **results);
/* The same with create_graph: the backward runs with grad mode on, each node through its
   backward_graph, so the gradients have history (higher-order derivatives); a node without one
   raises "<op>: create_graph: double backward through <node> is not supported yet". op names the
   caller in errors. */
int lt_backward_create_graph(const char *op, int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads,
                             bool retain_graph);
int lt_autograd_grad_create_graph(int n, lt_tensor_t *const *roots, lt_tensor_t *const *grads, int n_in,
                                  lt_tensor_t *const *inputs, bool retain_graph, bool allow_unused,
                                  lt_tensor_t **results);
/* t.grad += g as the engine does (consumes g): out of place, keeping g's history, when g has one */
int lt_accumulate_grad(lt_tensor_t *t, lt_tensor_t *g);

/* ---- helpers for backward functions ---- */
/* g summed over the dims that broadcasting added or expanded, to shape (ndim, sizes) */
lt_tensor_t *lt_sum_to(lt_tensor_t *g, int ndim, const int64_t *sizes);
lt_tensor_t *lt_zeros_meta(const lt_meta_t *m);
/* Whether the engine holds t alone (no other reference to it or its storage), contiguous and
   without history: a gradient it may write into in place or hand on as it is. */
bool lt_ag_owns(const lt_tensor_t *t);
void lt_meta_of(lt_meta_t *m, const lt_tensor_t *t);

#endif
