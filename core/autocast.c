/* Autocast's per-thread state, its cast cache and the operand casts the ops ask for
   (PyTorch's aten/src/ATen/autocast_mode.cpp: cached_cast and the per-device op lists). */
#include "core/autocast.h"
#include "core/autograd.h"
#include "core/elementwise.h"
#include "core/grad.h"

#include <stdlib.h>

_Thread_local bool lt_autocast_on;

static _Thread_local lt_autocast_state_t state = {
  .enabled = {false, false}, .dtype = {LT_BFLOAT16, LT_FLOAT16}, .cache_enabled = true, .depth = 0};

/* The casts of float32 leaves that require grad, made in the outermost region: each entry holds
   a reference to its source (so that its address cannot be reused by another tensor meanwhile). */
typedef struct {
  lt_tensor_t *src, *cast;
  bool with_history; /* made while autograd recorded: a cast made under no_grad has none */
} cache_entry_t;
static _Thread_local cache_entry_t *cache;
static _Thread_local int cache_n, cache_cap;

void lt_autocast_clear_cache(void) {
  for (int i = 0; i < cache_n; i++) {
    lt_release(cache[i].src);
    lt_release(cache[i].cast);
  }
  free(cache);
  cache = NULL;
  cache_n = cache_cap = 0;
}

void lt_autocast_get_state(lt_autocast_state_t *s) { *s = state; }

int lt_autocast_set_state(const lt_autocast_state_t *s) {
  for (int d = 0; d < LT_AC_NDEV; d++)
    if (s->dtype[d] != LT_FLOAT16 && s->dtype[d] != LT_BFLOAT16 && s->dtype[d] != LT_FLOAT32)
      return lt_error("autocast: invalid state (dtype %d)", (int)s->dtype[d]);
  if (s->depth < 0) return lt_error("autocast: invalid state (depth %d)", s->depth);
  state = *s;
  lt_autocast_on = state.enabled[LT_AC_CPU] || state.enabled[LT_AC_CUDA];
  if (state.depth == 0 || !lt_autocast_on) lt_autocast_clear_cache();
  return LT_OK;
}

/* x cast to dt, recorded by autograd when x needs it */
static lt_tensor_t *cast(lt_tensor_t *x, lt_dtype dt) {
  if (lt_ag_needed(x, NULL)) return lt_ag_convert(x, dt, x->device);
  return lt_convert(x, dt, x->device);
}

static lt_tensor_t *cached_cast(lt_tensor_t *x, lt_dtype dt) {
  bool cacheable = state.cache_enabled && state.depth > 0 && x->dtype == LT_FLOAT32 && x->requires_grad &&
                   lt_is_leaf(x) && !(x->autograd && x->autograd->is_view);
  if (!cacheable) return cast(x, dt);
  bool hist = lt_grad_enabled();
  for (int i = 0; i < cache_n; i++) {
    cache_entry_t *e = &cache[i];
    if (e->src != x || e->cast->dtype != dt) continue;
    if (e->with_history || !hist) {
      lt_retain(e->cast);
      return e->cast;
    }
    /* made under no_grad, wanted with history: remake it */
    lt_tensor_t *c = cast(x, dt);
    if (!c) return NULL;
    lt_release(e->cast);
    e->cast = c;
    e->with_history = true;
    lt_retain(c);
    return c;
  }
  lt_tensor_t *c = cast(x, dt);
  if (!c) return NULL;
  if (cache_n == cache_cap) {
    int cap = cache_cap ? 2 * cache_cap : 16;
    cache_entry_t *m = realloc(cache, sizeof *m * (size_t)cap);
    if (!m) return c; /* no room to remember it: the cast is still right */
    cache = m;
    cache_cap = cap;
  }
  lt_retain(x);
  lt_retain(c);
  cache[cache_n++] = (cache_entry_t){x, c, hist};
  return c;
}

/* the dtype policy p gives an eligible operand on a device of type d; LT_DTYPE_INVALID: none */
static lt_dtype target(lt_autocast_policy p, int d) {
  switch (p) {
  case LT_AC_LOWER: return state.dtype[d];
  case LT_AC_FP32: return LT_FLOAT32;
  case LT_AC_LOWER_CUDA: return d == LT_AC_CUDA ? state.dtype[d] : LT_DTYPE_INVALID;
  case LT_AC_FP32_CUDA: return d == LT_AC_CUDA ? LT_FLOAT32 : LT_DTYPE_INVALID;
  case LT_AC_PROMOTE_CUDA: return LT_DTYPE_INVALID; /* resolved over all operands */
  }
  return LT_DTYPE_INVALID;
}

static int dev_index(lt_device_t dev) {
  if (dev.type == LT_CPU) return LT_AC_CPU;
  if (dev.type == LT_CUDA) return LT_AC_CUDA;
  return -1;
}

/* float16, bfloat16 and float32 take part; float64, integers and bool run as written */
static bool eligible(const lt_tensor_t *x) {
  return x && (x->dtype == LT_FLOAT32 || x->dtype == LT_FLOAT16 || x->dtype == LT_BFLOAT16);
}

lt_tensor_t *lt_autocast_arg(lt_tensor_t *x, lt_autocast_policy p, lt_device_t dev) {
  if (!x) return NULL;
  int d = dev_index(dev);
  lt_dtype dt = d >= 0 && state.enabled[d] ? target(p, d) : LT_DTYPE_INVALID;
  if (dt == LT_DTYPE_INVALID || !eligible(x) || x->dtype == dt || dev_index(x->device) != d) {
    lt_retain(x);
    return x;
  }
  return p == LT_AC_FP32 || p == LT_AC_FP32_CUDA ? cast(x, dt) : cached_cast(x, dt);
}

int lt_autocast_args(lt_autocast_policy p, int n, lt_tensor_t *const *ts, lt_tensor_t **out) {
  int first = -1;
  for (int i = 0; i < n && first < 0; i++)
    if (ts[i]) first = i;
  if (first < 0) return 0;
  lt_device_t dev = ts[first]->device;
  int d = dev_index(dev);
  if (d < 0 || !state.enabled[d]) return 0;
  if (p == LT_AC_PROMOTE_CUDA) {
    if (d != LT_AC_CUDA) return 0;
    lt_dtype w = LT_DTYPE_INVALID;
    for (int i = 0; i < n; i++)
      if (eligible(ts[i])) w = w == LT_DTYPE_INVALID ? ts[i]->dtype : lt_promote_types(w, ts[i]->dtype);
    if (w == LT_DTYPE_INVALID) return 0;
    bool change = false;
    for (int i = 0; i < n; i++) change |= eligible(ts[i]) && ts[i]->dtype != w && dev_index(ts[i]->device) == d;
    if (!change) return 0;
    for (int i = 0; i < n; i++) {
      out[i] = NULL;
      if (!ts[i]) continue;
      bool c = eligible(ts[i]) && ts[i]->dtype != w && dev_index(ts[i]->device) == d;
      out[i] = c ? cast(ts[i], w) : (lt_retain(ts[i]), ts[i]);
      if (!out[i]) { lt_autocast_release(i, out); return LT_ERR; }
    }
    return 1;
  }
  lt_dtype dt = target(p, d);
  if (dt == LT_DTYPE_INVALID) return 0;
  bool change = false;
  for (int i = 0; i < n; i++) change |= eligible(ts[i]) && ts[i]->dtype != dt && dev_index(ts[i]->device) == d;
  if (!change) return 0;
  for (int i = 0; i < n; i++) {
    out[i] = NULL;
    if (!ts[i]) continue;
    if (!(out[i] = lt_autocast_arg(ts[i], p, dev))) { lt_autocast_release(i, out); return LT_ERR; }
  }
  return 1;
}

void lt_autocast_release(int n, lt_tensor_t **ts) {
  for (int i = 0; i < n; i++) lt_release(ts[i]);
}
