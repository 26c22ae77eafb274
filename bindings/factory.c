/* Creation functions: torch.tensor, zeros, ones, full, arange, linspace, eye, the *_like and
   new_* families, and random tensors with the seeded generator. */
#include "bindings/binding.h"
#include "core/factory.h"

#include <math.h>
#include <string.h>

/* Apply the common options to a new tensor and push it. */
static void push_new(lua_State *L, lt_tensor_t *t, const lt_lua_opts_t *o) {
  if (t && o->requires_grad) {
    if (!lt_dtype_is_floating(t->dtype)) {
      lt_release(t);
      luaL_error(L, "only tensors of floating point dtype can require gradients");
    }
    t->requires_grad = true; /* a new leaf */
  }
  lt_lua_pushtensor(L, t);
}

/* torch.empty and its kin leave the allocation's bytes, as PyTorch's do, except in a bool tensor,
   whose elements must hold 0 or 1 (reading another byte as C's bool is undefined): false there */
static lt_tensor_t *defined_bools(lt_tensor_t *t) {
  if (t && t->dtype == LT_BOOL && lt_fill_(t, lt_int_operand(0)) != LT_OK) {
    lt_release(t);
    return NULL;
  }
  return t;
}

static lt_device_t opt_device(const lt_lua_opts_t *o, lt_device_t dflt) {
  return o->has_device ? o->device : dflt;
}

/* ---- torch.tensor ---- */
typedef struct {
  int ndim;
  int64_t sizes[LT_MAX_DIM];
  bool any_float, any_int, any_bool;
} nested_info_t;

static void scan_nested(lua_State *L, int idx, int depth, nested_info_t *info) {
  luaL_checkstack(L, 4, "tensor: nesting too deep");
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (depth != info->ndim) luaL_error(L, "tensor: expected a sequence of length %d at depth %d, got a number", (int)info->sizes[depth], depth + 1);
    if (lua_isinteger(L, idx)) info->any_int = true;
    else info->any_float = true;
    return;
  }
  if (lua_type(L, idx) == LUA_TBOOLEAN) {
    if (depth != info->ndim) luaL_error(L, "tensor: expected a sequence at depth %d, got a boolean", depth + 1);
    info->any_bool = true;
    return;
  }
  if (!lua_istable(L, idx)) luaL_error(L, "tensor: expected numbers, booleans or nested tables of them, got %s", luaL_typename(L, idx));
  if (depth >= info->ndim) luaL_error(L, "tensor: inconsistent nesting: a table where a number was expected at depth %d", depth + 1);
  int64_t n = (int64_t)lua_rawlen(L, idx);
  if (n != info->sizes[depth])
    luaL_error(L, "tensor: expected a sequence of length %d at depth %d (got %d)", (int)info->sizes[depth], depth + 1, (int)n);
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    scan_nested(L, lua_gettop(L), depth + 1, info);
    lua_pop(L, 1);
  }
}

/* Write the leaves in row-major order into a host buffer of doubles or int64s. */
static void fill_nested(lua_State *L, int idx, bool as_float, void *buf, int64_t *pos) {
  if (lua_istable(L, idx)) {
    int64_t n = (int64_t)lua_rawlen(L, idx);
    for (int64_t i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      fill_nested(L, lua_gettop(L), as_float, buf, pos);
      lua_pop(L, 1);
    }
    return;
  }
  if (as_float) ((double *)buf)[(*pos)++] = lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
  else ((int64_t *)buf)[(*pos)++] = lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tointeger(L, idx);
}

static lt_tensor_t *tensor_from_lua(lua_State *L, int idx, lt_dtype dt, lt_device_t dev) {
  lt_tensor_t *src = lt_lua_totensor(L, idx);
  if (src) return lt_convert(src, dt == LT_DTYPE_INVALID ? src->dtype : dt, dev);
  nested_info_t info = {0};
  /* the shape from the first elements */
  lua_pushvalue(L, idx);
  while (lua_istable(L, -1)) {
    if (info.ndim >= LT_MAX_DIM) luaL_error(L, "tensor: at most %d dimensions", LT_MAX_DIM);
    info.sizes[info.ndim++] = (int64_t)lua_rawlen(L, -1);
    if (lua_rawlen(L, -1) == 0) break;
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  scan_nested(L, idx, 0, &info);
  if (dt == LT_DTYPE_INVALID) {
    if (info.any_float) dt = lt_default_float();
    else if (info.any_int) dt = LT_INT64;
    else if (info.any_bool) dt = LT_BOOL;
    else dt = lt_default_float(); /* empty */
  }
  /* the values in float64 (any float among them) or int64, then converted to dtype and device */
  bool as_float = info.any_float;
  lt_tensor_t *host = lt_empty(info.ndim, info.sizes, as_float ? LT_FLOAT64 : LT_INT64, lt_device(LT_CPU, 0));
  if (!host) lt_lua_error(L);
  int64_t pos = 0;
  fill_nested(L, idx, as_float, lt_data(host), &pos);
  lt_device_t r;
  if (lt_device_resolve(dev, &r) != LT_OK) { lt_release(host); lt_lua_error(L); }
  lt_tensor_t *t = lt_convert(host, dt, r);
  lt_release(host);
  return t;
}

static int f_tensor(lua_State *L) {
  lt_lua_opts_t o;
  lt_lua_checkopts(L, 2, &o);
  lt_lua_checknargs(L, 2, "tensor");
  if (lua_isnoneornil(L, 1)) return luaL_error(L, "tensor: expected a number, a boolean or a (nested) table of them");
  push_new(L, tensor_from_lua(L, 1, o.dtype, opt_device(&o, lt_device(LT_CPU, -1))), &o);
  return 1;
}

/* sizes..., opts: returns the index of opts */
static int sizes_and_opts(lua_State *L, int idx, int *nd, int64_t *sizes, lt_lua_opts_t *o, const char *op) {
  int next = lt_lua_checksizes(L, idx, nd, sizes, op);
  lt_lua_checkopts(L, next, o);
  lt_lua_checknargs(L, next, op);
  return next;
}
/* the same for the random factories, which take {generator = g} too */
static int sizes_and_randopts(lua_State *L, int idx, int *nd, int64_t *sizes, lt_lua_opts_t *o, const char *op) {
  int next = lt_lua_checksizes(L, idx, nd, sizes, op);
  lt_lua_checkrandopts(L, next, o);
  lt_lua_checknargs(L, next, op);
  return next;
}

static int filled(lua_State *L, lt_operand_t v, const char *op) {
  int nd;
  int64_t sizes[LT_MAX_DIM];
  lt_lua_opts_t o;
  sizes_and_opts(L, 1, &nd, sizes, &o, op);
  lt_dtype dt = o.dtype == LT_DTYPE_INVALID ? lt_default_float() : o.dtype;
  lt_device_t dev = opt_device(&o, lt_device(LT_CPU, -1));
  if (v.kind == LT_OPERAND_TENSOR) push_new(L, defined_bools(lt_empty(nd, sizes, dt, dev)), &o);
  else push_new(L, lt_full(nd, sizes, v, dt, dev), &o);
  return 1;
}
static int f_zeros(lua_State *L) { return filled(L, lt_int_operand(0), "zeros"); }
static int f_ones(lua_State *L) { return filled(L, lt_int_operand(1), "ones"); }
static int f_empty(lua_State *L) { return filled(L, lt_tensor_operand(NULL), "empty"); }

static lt_dtype dtype_of_value(lt_operand_t v) {
  return v.kind == LT_OPERAND_FLOAT ? lt_default_float() : v.kind == LT_OPERAND_BOOL ? LT_BOOL : LT_INT64;
}

/* torch.full(sizes, value, opts) */
static int f_full(lua_State *L) {
  int nd;
  int64_t sizes[LT_MAX_DIM];
  int next = lt_lua_checksizes(L, 1, &nd, sizes, "full");
  if (lua_type(L, next) != LUA_TNUMBER && lua_type(L, next) != LUA_TBOOLEAN)
    return luaL_error(L, "full: expected the fill value (a number or boolean) after the sizes");
  lt_operand_t v = lt_lua_checkoperand(L, next);
  lt_lua_opts_t o;
  lt_lua_checkopts(L, next + 1, &o);
  lt_lua_checknargs(L, next + 1, "full");
  lt_dtype dt = o.dtype == LT_DTYPE_INVALID ? dtype_of_value(v) : o.dtype;
  push_new(L, lt_full(nd, sizes, v, dt, opt_device(&o, lt_device(LT_CPU, -1))), &o);
  return 1;
}

/* torch.arange(end) / (start, end) / (start, end, step), opts */
static int f_arange(lua_State *L) {
  double v[3];
  int n = 0;
  bool any_float = false;
  while (n < 3 && lua_type(L, n + 1) == LUA_TNUMBER) {
    if (!lua_isinteger(L, n + 1)) any_float = true;
    v[n] = lua_tonumber(L, n + 1);
    n++;
  }
  if (n == 0) return luaL_error(L, "arange: expected arange(end), arange(start, end) or arange(start, end, step)");
  lt_lua_opts_t o;
  lt_lua_checkopts(L, n + 1, &o);
  lt_lua_checknargs(L, n + 1, "arange");
  double start = n >= 2 ? v[0] : 0, end = n >= 2 ? v[1] : v[0], step = n == 3 ? v[2] : 1;
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : any_float ? lt_default_float() : LT_INT64;
  push_new(L, lt_arange(start, end, step, dt, opt_device(&o, lt_device(LT_CPU, -1))), &o);
  return 1;
}

static int f_linspace(lua_State *L) {
  double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
  lua_Integer steps = luaL_checkinteger(L, 3);
  lt_lua_opts_t o;
  lt_lua_checkopts(L, 4, &o);
  lt_lua_checknargs(L, 4, "linspace");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : lt_default_float();
  push_new(L, lt_linspace(a, b, steps, dt, opt_device(&o, lt_device(LT_CPU, -1))), &o);
  return 1;
}

/* torch.empty_strided(sizes, strides, opts) */
static int f_empty_strided(lua_State *L) {
  int nd;
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  lt_lua_checkstrided(L, 1, &nd, sizes, strides, "empty_strided");
  lt_lua_opts_t o;
  lt_lua_checkopts(L, 3, &o);
  lt_lua_checknargs(L, 3, "empty_strided");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : lt_default_float();
  push_new(L, defined_bools(lt_empty_strided(nd, sizes, strides, dt, opt_device(&o, lt_device(LT_CPU, -1)))), &o);
  return 1;
}

static int f_eye(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  int oi = 2;
  lua_Integer m = n;
  if (lua_type(L, 2) == LUA_TNUMBER) { m = luaL_checkinteger(L, 2); oi = 3; }
  lt_lua_opts_t o;
  lt_lua_checkopts(L, oi, &o);
  lt_lua_checknargs(L, oi, "eye");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : lt_default_float();
  push_new(L, lt_eye(n, m, dt, opt_device(&o, lt_device(LT_CPU, -1))), &o);
  return 1;
}

/* ---- *_like(x, opts) and x:new_*(sizes, opts) ---- */
typedef enum { K_ZEROS, K_ONES, K_EMPTY, K_FULL, K_RAND, K_RANDN } fill_kind;

static lt_tensor_t *make_filled(lt_lua_opts_t *o, int nd, const int64_t *sizes, lt_dtype dt, lt_device_t dev,
                                fill_kind k, lt_operand_t v) {
  lt_tensor_t *t = lt_empty(nd, sizes, dt, dev);
  if (!t) return NULL;
  int rc = LT_OK;
  switch (k) {
    case K_ZEROS: rc = lt_fill_(t, lt_int_operand(0)); break;
    case K_ONES: rc = lt_fill_(t, lt_int_operand(1)); break;
    case K_FULL: rc = lt_fill_(t, v); break;
    case K_RAND: rc = lt_uniform_(t, 0, 1, o->generator); break;
    case K_RANDN: rc = lt_normal_(t, 0, 1, o->generator); break;
    case K_EMPTY: return defined_bools(t);
  }
  if (rc != LT_OK) { lt_release(t); return NULL; }
  return t;
}

static int like(lua_State *L, fill_kind k, const char *op) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_operand_t v = lt_int_operand(0);
  int oi = 2;
  if (k == K_FULL) { v = lt_lua_checkoperand(L, 2); oi = 3; }
  lt_lua_opts_t o;
  if (k == K_RAND || k == K_RANDN) lt_lua_checkrandopts(L, oi, &o);
  else lt_lua_checkopts(L, oi, &o);
  lt_lua_checknargs(L, oi, op);
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : x->dtype;
  push_new(L, make_filled(&o, x->ndim, x->sizes, dt, opt_device(&o, x->device), k, v), &o);
  return 1;
}
static int f_zeros_like(lua_State *L) { return like(L, K_ZEROS, "zeros_like"); }
static int f_ones_like(lua_State *L) { return like(L, K_ONES, "ones_like"); }
static int f_empty_like(lua_State *L) { return like(L, K_EMPTY, "empty_like"); }
static int f_full_like(lua_State *L) { return like(L, K_FULL, "full_like"); }
static int f_rand_like(lua_State *L) { return like(L, K_RAND, "rand_like"); }
static int f_randn_like(lua_State *L) { return like(L, K_RANDN, "randn_like"); }

static int new_(lua_State *L, fill_kind k, const char *op) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int nd;
  int64_t sizes[LT_MAX_DIM];
  int next = lt_lua_checksizes(L, 2, &nd, sizes, op);
  lt_operand_t v = lt_int_operand(0);
  if (k == K_FULL) {
    if (lua_type(L, next) != LUA_TNUMBER && lua_type(L, next) != LUA_TBOOLEAN)
      return luaL_error(L, "%s: expected the fill value after the sizes", op);
    v = lt_lua_checkoperand(L, next++);
  }
  lt_lua_opts_t o;
  lt_lua_checkopts(L, next, &o);
  lt_lua_checknargs(L, next, op);
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : x->dtype;
  push_new(L, make_filled(&o, nd, sizes, dt, opt_device(&o, x->device), k, v), &o);
  return 1;
}
static int m_new_zeros(lua_State *L) { return new_(L, K_ZEROS, "new_zeros"); }
static int m_new_ones(lua_State *L) { return new_(L, K_ONES, "new_ones"); }
static int m_new_empty(lua_State *L) { return new_(L, K_EMPTY, "new_empty"); }
static int m_new_full(lua_State *L) { return new_(L, K_FULL, "new_full"); }
static int m_new_tensor(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_opts_t o;
  lt_lua_checkopts(L, 3, &o);
  lt_lua_checknargs(L, 3, "new_tensor");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : x->dtype;
  push_new(L, tensor_from_lua(L, 2, dt, opt_device(&o, x->device)), &o);
  return 1;
}

/* ---- random ---- */
static int f_rand(lua_State *L) {
  int nd;
  int64_t sizes[LT_MAX_DIM];
  lt_lua_opts_t o;
  sizes_and_randopts(L, 1, &nd, sizes, &o, "rand");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : lt_default_float();
  push_new(L, make_filled(&o, nd, sizes, dt, opt_device(&o, lt_device(LT_CPU, -1)), K_RAND, lt_int_operand(0)), &o);
  return 1;
}
static int f_randn(lua_State *L) {
  int nd;
  int64_t sizes[LT_MAX_DIM];
  lt_lua_opts_t o;
  sizes_and_randopts(L, 1, &nd, sizes, &o, "randn");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : lt_default_float();
  push_new(L, make_filled(&o, nd, sizes, dt, opt_device(&o, lt_device(LT_CPU, -1)), K_RANDN, lt_int_operand(0)), &o);
  return 1;
}

/* randint(low, high, sizes, opts) or randint(high, sizes, opts) */
static int f_randint(lua_State *L) {
  lua_Integer low = 0, high;
  int si;
  int64_t a, b, c;
  if (lt_lua_toint(L, 1, &a) && lt_lua_toint(L, 2, &b) && (lua_istable(L, 3) || lt_lua_toint(L, 3, &c))) {
    low = a;
    high = b;
    si = 3;
  } else {
    high = lt_lua_checkint(L, 1, "randint", "high");
    si = 2;
  }
  if (!lua_istable(L, si) && lua_type(L, si) != LUA_TNUMBER) return luaL_error(L, "randint: expected sizes after the bounds (randint(low, high, sizes))");
  int nd;
  int64_t sizes[LT_MAX_DIM];
  lt_lua_opts_t o;
  sizes_and_randopts(L, si, &nd, sizes, &o, "randint");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : LT_INT64;
  lt_tensor_t *t = lt_empty(nd, sizes, dt, opt_device(&o, lt_device(LT_CPU, -1)));
  if (t && lt_random_int_(t, low, high, o.generator) != LT_OK) { lt_release(t); t = NULL; }
  push_new(L, t, &o);
  return 1;
}

static int f_randperm(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lt_lua_opts_t o;
  lt_lua_checkrandopts(L, 2, &o);
  lt_lua_checknargs(L, 2, "randperm");
  lt_dtype dt = o.dtype != LT_DTYPE_INVALID ? o.dtype : LT_INT64;
  static const int64_t maxv[LT_NDTYPES] = {[LT_INT32] = INT32_MAX, [LT_INT16] = INT16_MAX, [LT_INT8] = INT8_MAX,
                                           [LT_UINT8] = UINT8_MAX};
  if (maxv[dt] && n > maxv[dt])
    return luaL_error(L, "randperm: the 1-based values 1..%d do not fit in %s (at most %d)", (int)n,
                      lt_dtype_name(dt), (int)maxv[dt]);
  lt_tensor_t *t = lt_randperm(n, dt, opt_device(&o, lt_device(LT_CPU, -1)), o.generator);
  if (t && !lt_dtype_is_floating(dt)) t = lt_lua_one_based(t); /* 1-based, like every index in lutorch */
  push_new(L, t, &o);
  return 1;
}

/* the in-place random methods take an options table {generator = g} last: read and dropped */
static lt_generator_t *trailing_generator(lua_State *L, const char *op) {
  int top = lua_gettop(L);
  if (top < 2) return NULL;
  lt_generator_t *g = lt_lua_optgenerator(L, top, op);
  if (lua_istable(L, top) && !lt_lua_totensor(L, top)) lua_settop(L, top - 1);
  return g;
}

static int m_uniform_(lua_State *L) {
  lt_generator_t *g = trailing_generator(L, "uniform_");
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double a = luaL_optnumber(L, 2, 0), b = luaL_optnumber(L, 3, 1);
  lt_lua_checknargs(L, 3, "uniform_");
  lt_lua_check(L, lt_uniform_(x, a, b, g));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_normal_(lua_State *L) {
  lt_generator_t *g = trailing_generator(L, "normal_");
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double m = luaL_optnumber(L, 2, 0), s = luaL_optnumber(L, 3, 1);
  lt_lua_checknargs(L, 3, "normal_");
  lt_lua_check(L, lt_normal_(x, m, s, g));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_random_(lua_State *L) {
  lt_generator_t *g = trailing_generator(L, "random_");
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lua_Integer a = luaL_checkinteger(L, 2);
  lua_Integer lo = 0, hi = a;
  if (!lua_isnoneornil(L, 3)) { lo = a; hi = luaL_checkinteger(L, 3); }
  lt_lua_checknargs(L, 3, "random_");
  lt_lua_check(L, lt_random_int_(x, lo, hi, g));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_bernoulli_(lua_State *L) {
  lt_generator_t *g = trailing_generator(L, "bernoulli_");
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double p = luaL_optnumber(L, 2, 0.5);
  lt_lua_checknargs(L, 2, "bernoulli_");
  if (!(p >= 0 && p <= 1)) return luaL_error(L, "bernoulli_: expected p in [0, 1], got %f", p);
  lt_lua_check(L, lt_bernoulli_(x, p, g));
  lua_pushvalue(L, 1);
  return 1;
}

/* x:name(a = da, b = db, {generator = g}) for the samplers with one or two number parameters
   (nparams); a NaN default makes the parameter required. */
typedef int (*sampler_fn)(lt_tensor_t *x, double a, double b, lt_generator_t *g);
static int sample_(lua_State *L, const char *name, sampler_fn f, int nparams, double da, double db) {
  lt_generator_t *g = trailing_generator(L, name);
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double a = isnan(da) ? luaL_checknumber(L, 2) : luaL_optnumber(L, 2, da);
  double b = nparams > 1 ? luaL_optnumber(L, 3, db) : 0;
  lt_lua_checknargs(L, 1 + nparams, name);
  lt_lua_check(L, f(x, a, b, g));
  lua_pushvalue(L, 1);
  return 1;
}
static int exponential2(lt_tensor_t *x, double a, double b, lt_generator_t *g) { (void)b; return lt_exponential_(x, a, g); }
static int geometric2(lt_tensor_t *x, double a, double b, lt_generator_t *g) { (void)b; return lt_geometric_(x, a, g); }
static int m_exponential_(lua_State *L) { return sample_(L, "exponential_", exponential2, 1, 1, 0); }
static int m_geometric_(lua_State *L) { return sample_(L, "geometric_", geometric2, 1, NAN, 0); }
static int m_cauchy_(lua_State *L) { return sample_(L, "cauchy_", lt_cauchy_, 2, 0, 1); }
static int m_log_normal_(lua_State *L) { return sample_(L, "log_normal_", lt_log_normal_, 2, 1, 2); }

static int f_manual_seed(lua_State *L) {
  lua_Integer s = luaL_checkinteger(L, 1);
  lt_generator_seed(lt_default_generator(), (uint64_t)s);
  return 0;
}
static int f_initial_seed(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lt_generator_initial_seed(lt_default_generator()));
  return 1;
}
static int f_get_rng_state(lua_State *L) {
  int64_t n = (int64_t)lt_generator_state_size();
  lt_tensor_t *t = lt_empty(1, &n, LT_UINT8, lt_device(LT_CPU, 0));
  if (t) lt_generator_get_state(lt_default_generator(), lt_data(t));
  lt_lua_pushtensor(L, t);
  return 1;
}
static int f_set_rng_state(lua_State *L) {
  lt_lua_checknargs(L, 1, "set_rng_state");
  lt_lua_setgenstate(L, lt_default_generator(), 1, "set_rng_state");
  return 0;
}

/* torch._from_bytes(s, offset, count, dtype): a new 1-D CPU tensor of count elements, a copy of
   the string's bytes from the 0-based byte offset on (the machine's byte order); torch.frombuffer
   and torch.from_file (lua/torch/buffers.lua) check their arguments first */
static int f_from_bytes(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_Integer off = luaL_checkinteger(L, 2), count = luaL_checkinteger(L, 3);
  lt_dtype dt = lt_lua_checkdtype(L, 4);
  size_t es = lt_dtype_size(dt);
  if (off < 0 || count < 0 || (size_t)off > len || (len - (size_t)off) / es < (size_t)count)
    return luaL_error(L, "_from_bytes: %d elements of %d bytes from byte %d are past the %d bytes given", (int)count,
                      (int)es, (int)off, (int)len);
  int64_t n = (int64_t)count;
  lt_tensor_t *t = lt_empty(1, &n, dt, lt_device(LT_CPU, 0));
  if (t && n > 0) memcpy(lt_data(t), s + off, (size_t)n * es);
  lt_lua_pushtensor(L, t);
  return 1;
}

void lt_open_factory(lua_State *L, int torch, int mtab) {
  static const luaL_Reg fns[] = {
      {"tensor", f_tensor}, {"zeros", f_zeros}, {"ones", f_ones}, {"empty", f_empty}, {"full", f_full},
      {"arange", f_arange}, {"linspace", f_linspace}, {"eye", f_eye}, {"empty_strided", f_empty_strided}, {"zeros_like", f_zeros_like},
      {"ones_like", f_ones_like}, {"empty_like", f_empty_like}, {"full_like", f_full_like},
      {"rand_like", f_rand_like}, {"randn_like", f_randn_like}, {"rand", f_rand}, {"randn", f_randn},
      {"randint", f_randint}, {"randperm", f_randperm}, {"manual_seed", f_manual_seed}, {"_from_bytes", f_from_bytes},
      {"initial_seed", f_initial_seed}, {"get_rng_state", f_get_rng_state},
      {"set_rng_state", f_set_rng_state}, {NULL, NULL}};
  static const luaL_Reg methods[] = {
      {"new_zeros", m_new_zeros}, {"new_ones", m_new_ones}, {"new_empty", m_new_empty},
      {"new_full", m_new_full}, {"new_tensor", m_new_tensor}, {"uniform_", m_uniform_},
      {"normal_", m_normal_}, {"random_", m_random_}, {"bernoulli_", m_bernoulli_},
      {"exponential_", m_exponential_}, {"geometric_", m_geometric_}, {"cauchy_", m_cauchy_},
      {"log_normal_", m_log_normal_}, {NULL, NULL}};
  lt_lua_register(L, torch, mtab, fns, true, false);
  lt_lua_register(L, torch, mtab, methods, false, true);
}
