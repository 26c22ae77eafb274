/* Elementwise ops, operators and reductions. */
#include "bindings/binding.h"
#include "core/autograd.h"
#include "core/reduce.h"
#include "core/sort.h"

#include <math.h>
#include <string.h>

/* ---- unary: torch.exp(x), x:exp(), x:exp_() ---- */
static int unary(lua_State *L, lt_unary_op op, bool inplace) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, lt_unary_name(op));
  lt_tensor_t *r = lt_unary(op, x, inplace ? x : NULL);
  lt_lua_pushresult(L, r, inplace);
  return 1;
}

#define LT_X(name, kind, fbody, ibody)                                              \
  static int u_##name(lua_State *L) { return unary(L, LT_UNARY_##name, false); }   \
  static int u_##name##_(lua_State *L) { return unary(L, LT_UNARY_##name, true); }
LT_UNARY_OPS(LT_X)
#undef LT_X

static const luaL_Reg unary_fns[] = {
#define LT_X(name, kind, fbody, ibody) {#name, u_##name},
    LT_UNARY_OPS(LT_X)
#undef LT_X
    {NULL, NULL}};
static const luaL_Reg unary_fns_[] = {
#define LT_X(name, kind, fbody, ibody) {#name "_", u_##name##_},
    LT_UNARY_OPS(LT_X)
#undef LT_X
    {NULL, NULL}};

/* ---- binary: torch.add(a, b, {alpha}), a:add(b), a:add_(b) ---- */
static double get_alpha(lua_State *L, int idx, const char *name) {
  if (lua_isnoneornil(L, idx)) return 1;
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  static const char *const keys[] = {"alpha", NULL};
  lt_lua_checkoptkeys(L, idx, name, keys);
  lua_getfield(L, idx, "alpha");
  double a = lua_isnil(L, -1) ? 1 : luaL_checknumber(L, -1);
  lua_pop(L, 1);
  return a;
}

/* torch.div's options {rounding_mode = nil | 'trunc' | 'floor'}: the op that rounds so */
static lt_binary_op div_mode(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return LT_BINARY_div;
  luaL_checktype(L, idx, LUA_TTABLE);
  static const char *const keys[] = {"rounding_mode", NULL};
  lt_lua_checkoptkeys(L, idx, "div", keys);
  lua_getfield(L, idx, "rounding_mode");
  const char *mode = lua_tostring(L, -1);
  lt_binary_op op = lua_isnil(L, -1)                           ? LT_BINARY_div
                    : mode && strcmp(mode, "trunc") == 0 ? LT_BINARY_div_trunc
                    : mode && strcmp(mode, "floor") == 0 ? LT_BINARY_floor_divide
                                                         : LT_NBINARY;
  if (op == LT_NBINARY)
    luaL_error(L, "div: rounding_mode must be nil, 'trunc' or 'floor', got %s", luaL_tolstring(L, -1, NULL));
  lua_pop(L, 1);
  return op;
}

static int binary(lua_State *L, lt_binary_op op, bool inplace) {
  bool div = op == LT_BINARY_div;
  if (div) {
    op = div_mode(L, 3);
    lt_lua_checknargs(L, 3, "div");
  }
  const char *name = lt_binary_name(op);
  lt_operand_t a = inplace ? lt_tensor_operand(lt_lua_checktensor(L, 1)) : lt_lua_checkoperand(L, 1);
  lt_operand_t b = lt_lua_checkoperand(L, 2);
  double alpha = 1;
  if (op == LT_BINARY_add || op == LT_BINARY_sub) {
    alpha = get_alpha(L, 3, name);
    lt_lua_checknargs(L, 3, name);
  } else if (!div) {
    lt_lua_checknargs(L, 2, name);
  }
  lt_tensor_t *r = lt_binary(op, a, b, alpha, inplace ? a.t : NULL);
  lt_lua_pushresult(L, r, inplace);
  return 1;
}

#define LT_X(name, kind, fbody, ibody)                                                \
  static int b_##name(lua_State *L) { return binary(L, LT_BINARY_##name, false); }   \
  static int b_##name##_(lua_State *L) { return binary(L, LT_BINARY_##name, true); }
LT_BINARY_OPS(LT_X)
#undef LT_X

/* the op table's internal ops (LT_INTERNAL) get no function: lt_lua_register skips them */
static const luaL_Reg binary_fns[] = {
#define LT_X(name, kind, fbody, ibody) {#name, (kind) & LT_INTERNAL ? NULL : b_##name},
    LT_BINARY_OPS(LT_X)
#undef LT_X
    {"mul", b_mul}, {"true_divide", b_div}, {"subtract", b_sub}, {"multiply", b_mul}, {"divide", b_div},
    {NULL, NULL}};
static const luaL_Reg binary_fns_[] = {
#define LT_X(name, kind, fbody, ibody) {#name "_", (kind) & LT_INTERNAL ? NULL : b_##name##_},
    LT_BINARY_OPS(LT_X)
#undef LT_X
    {NULL, NULL}};

/* operators: either side may be a number */
static int op_binary(lua_State *L, lt_binary_op op) {
  lt_operand_t a = lt_lua_checkoperand(L, 1), b = lt_lua_checkoperand(L, 2);
  lt_lua_pushtensor(L, lt_binary(op, a, b, 1, NULL));
  return 1;
}
static int op_add(lua_State *L) { return op_binary(L, LT_BINARY_add); }
static int op_sub(lua_State *L) { return op_binary(L, LT_BINARY_sub); }
static int op_mul(lua_State *L) { return op_binary(L, LT_BINARY_mul); }
static int op_div(lua_State *L) { return op_binary(L, LT_BINARY_div); }
static int op_pow(lua_State *L) { return op_binary(L, LT_BINARY_pow); }
static int op_mod(lua_State *L) { return op_binary(L, LT_BINARY_remainder); }
static int op_unm(lua_State *L) { lt_lua_pushtensor(L, lt_unary(LT_UNARY_neg, lt_lua_checktensor(L, 1), NULL)); return 1; }
/* Lua 5.4's integer operators: & | ~ (xor) << >> and unary ~ */
static int op_band(lua_State *L) { return op_binary(L, LT_BINARY_bitwise_and); }
static int op_bor(lua_State *L) { return op_binary(L, LT_BINARY_bitwise_or); }
static int op_bxor(lua_State *L) { return op_binary(L, LT_BINARY_bitwise_xor); }
static int op_shl(lua_State *L) { return op_binary(L, LT_BINARY_bitwise_left_shift); }
static int op_shr(lua_State *L) { return op_binary(L, LT_BINARY_bitwise_right_shift); }
static int op_bnot(lua_State *L) {
  lt_lua_pushtensor(L, lt_unary(LT_UNARY_bitwise_not, lt_lua_checktensor(L, 1), NULL));
  return 1;
}

/* ---- comparisons and logical ops ---- */
static int compare(lua_State *L, lt_compare_op op) {
  lt_operand_t a = lt_lua_checkoperand(L, 1), b = lt_lua_checkoperand(L, 2);
  lt_lua_checknargs(L, 2, lt_compare_name(op));
  lt_lua_pushtensor(L, lt_compare(op, a, b, NULL));
  return 1;
}
#define LT_X(name, body) static int c_##name(lua_State *L) { return compare(L, LT_COMPARE_##name); }
LT_COMPARE_OPS(LT_X)
#undef LT_X
static const luaL_Reg compare_fns[] = {
#define LT_X(name, body) {#name, c_##name},
    LT_COMPARE_OPS(LT_X)
#undef LT_X
    {"greater", c_gt}, {"less", c_lt}, {"greater_equal", c_ge}, {"less_equal", c_le}, {"not_equal", c_ne},
    {NULL, NULL}};

static int m_logical_not(lua_State *L) {
  lt_lua_pushtensor(L, lt_logical_not(lt_lua_checktensor(L, 1), NULL));
  return 1;
}

/* where(cond, a, b) with its three arguments at the given stack indices */
static int where_at(lua_State *L, int ci, int ai, int bi) {
  lt_tensor_t *cond = lt_lua_checktensor(L, ci);
  lt_operand_t a = lt_lua_checkoperand(L, ai), b = lt_lua_checkoperand(L, bi);
  lt_lua_checknargs(L, 3, "where");
  lt_lua_pushtensor(L, lt_where(cond, a, b));
  return 1;
}
static int m_where(lua_State *L) { return where_at(L, 1, 2, 3); }
/* x:where(cond, y) is torch.where(cond, x, y) */
static int t_where(lua_State *L) { return where_at(L, 2, 1, 3); }

static int clamp(lua_State *L, bool inplace, int which /* 0 both, 1 min only, 2 max only */) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_operand_t mn, mx;
  const lt_operand_t *pmin = NULL, *pmax = NULL;
  if (which == 0 && lua_istable(L, 2)) { /* clamp({min = a, max = b}) */
    lua_settop(L, 2);
    lua_getfield(L, 2, "min");
    lua_getfield(L, 2, "max");
    lua_remove(L, 2);
  }
  if (which != 2 && !lua_isnoneornil(L, 2)) { mn = lt_lua_checkoperand(L, 2); pmin = &mn; }
  int maxidx = which == 2 ? 2 : 3;
  if (which != 1 && !lua_isnoneornil(L, maxidx)) { mx = lt_lua_checkoperand(L, maxidx); pmax = &mx; }
  lt_lua_checknargs(L, which == 0 ? 3 : 2, "clamp");
  lt_tensor_t *r = lt_clamp(x, pmin, pmax, inplace ? x : NULL);
  lt_lua_pushresult(L, r, inplace);
  return 1;
}
static int m_clamp(lua_State *L) { return clamp(L, false, 0); }
static int m_clamp_(lua_State *L) { return clamp(L, true, 0); }
static int m_clamp_min(lua_State *L) { return clamp(L, false, 1); }
static int m_clamp_max(lua_State *L) { return clamp(L, false, 2); }
static int m_clamp_min_(lua_State *L) { return clamp(L, true, 1); }
static int m_clamp_max_(lua_State *L) { return clamp(L, true, 2); }

static int m_fill_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 2, "fill_");
  lt_lua_check(L, lt_fill_(x, lt_lua_checkoperand(L, 2)));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_zero_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "zero_");
  if (x->requires_grad) lt_lua_check(L, lt_ag_check_inplace("zero_", x)); /* named zero_, not fill_ */
  lt_lua_check(L, lt_fill_(x, lt_int_operand(0)));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_copy_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *src = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 3, "copy_");
  lt_lua_check(L, lt_copy_(x, src));
  lua_pushvalue(L, 1);
  return 1;
}
static int m_clone(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_pushtensor(L, lt_clone(x));
  return 1;
}
static int m_contiguous(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "contiguous");
  if (lt_is_contiguous(x)) { lua_pushvalue(L, 1); return 1; }
  lt_lua_pushtensor(L, lt_clone(x));
  return 1;
}
static int m_equal(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1), *b = lt_lua_checktensor(L, 2);
  bool eq;
  lt_lua_check(L, lt_equal(a, b, &eq));
  lua_pushboolean(L, eq);
  return 1;
}

/* ---- reductions ---- */
/* dims at idx: nil/none (all), a number, or a table of numbers */
static int reduce_dims(lua_State *L, int idx, int *n, int64_t *dims, const char *op) {
  *n = 0;
  if (lua_isnoneornil(L, idx)) return idx + 1;
  if (lua_type(L, idx) == LUA_TNUMBER || lua_istable(L, idx)) {
    if (lua_istable(L, idx) && lt_lua_todtype(L, idx) == LT_DTYPE_INVALID && lua_rawlen(L, idx) == 0) {
      lua_pushnil(L);
      if (lua_next(L, idx)) { lua_pop(L, 2); return idx; } /* an options table */
    }
    if (lua_type(L, idx) == LUA_TNUMBER) {
      dims[0] = lt_lua_todim(L, lt_lua_checkint(L, idx, op, "the dimension"), op);
      *n = 1;
      return idx + 1;
    }
    lt_lua_checkdims(L, idx, n, dims, op);
    return idx + 1;
  }
  if (lua_type(L, idx) == LUA_TBOOLEAN) return idx; /* keepdim without dims: invalid later */
  luaL_typeerror(L, idx, "dimension or table of dimensions");
  return idx;
}

/* {dtype = ...} at idx, or LT_DTYPE_INVALID; a bad value raises an error naming op. A non-table
   at idx is left for the argument count check. */
static lt_dtype opt_dtype(lua_State *L, int idx, const char *op) {
  if (!lua_istable(L, idx) || lt_lua_todtype(L, idx) != LT_DTYPE_INVALID) return LT_DTYPE_INVALID;
  static const char *const keys[] = {"dtype", NULL};
  lt_lua_checkoptkeys(L, idx, op, keys);
  lt_dtype dt = LT_DTYPE_INVALID;
  if (lua_getfield(L, idx, "dtype") != LUA_TNIL) {
    dt = lt_lua_todtype(L, -1);
    if (dt == LT_DTYPE_INVALID && lua_type(L, -1) == LUA_TSTRING) dt = lt_dtype_from_name(lua_tostring(L, -1));
    if (dt == LT_DTYPE_INVALID)
      luaL_error(L, "%s: unknown dtype %s (expected one of torch.float32, float64, float16, bfloat16, int64, "
                    "int32, int16, int8, uint8, bool)", op, luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, 1);
  return dt;
}

/* keepdim at idx: a boolean or nothing */
static bool opt_keepdim(lua_State *L, int idx, const char *op) {
  int t = lua_type(L, idx);
  if (t != LUA_TBOOLEAN && t != LUA_TNIL && t != LUA_TNONE)
    luaL_error(L, "%s: keepdim must be a boolean, got %s", op, luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

typedef lt_tensor_t *(*reduce_dtype_fn)(lt_tensor_t *, int, const int64_t *, bool, lt_dtype);

static int reduce_with_dtype(lua_State *L, reduce_dtype_fn fn, const char *op) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t dims[LT_MAX_DIM];
  int idx = reduce_dims(L, 2, &n, dims, op);
  bool keepdim = false;
  if (lua_type(L, idx) == LUA_TBOOLEAN) keepdim = lua_toboolean(L, idx++);
  else if (lua_isnil(L, idx) && idx > 2) idx++;
  else if (!lua_istable(L, idx) && !lua_isnone(L, idx)) opt_keepdim(L, idx, op);
  lt_dtype dt = opt_dtype(L, idx, op);
  lt_lua_checknargs(L, idx, op);
  lt_lua_pushtensor(L, fn(x, n, dims, keepdim, dt));
  return 1;
}
static int r_sum(lua_State *L) { return reduce_with_dtype(L, lt_sum, "sum"); }
static int r_mean(lua_State *L) { return reduce_with_dtype(L, lt_mean, "mean"); }
static int r_prod(lua_State *L) { return reduce_with_dtype(L, lt_prod, "prod"); }

typedef lt_tensor_t *(*reduce_fn)(lt_tensor_t *, int, const int64_t *, bool);
static int reduce_plain(lua_State *L, reduce_fn fn, const char *op) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t dims[LT_MAX_DIM];
  int idx = reduce_dims(L, 2, &n, dims, op);
  bool keepdim = opt_keepdim(L, idx, op);
  lt_lua_checknargs(L, idx, op);
  lt_lua_pushtensor(L, fn(x, n, dims, keepdim));
  return 1;
}
static int r_logsumexp(lua_State *L) { return reduce_plain(L, lt_logsumexp, "logsumexp"); }
static int r_amax(lua_State *L) { return reduce_plain(L, lt_amax, "amax"); }
static int r_amin(lua_State *L) { return reduce_plain(L, lt_amin, "amin"); }
static int r_any(lua_State *L) { return reduce_plain(L, lt_any, "any"); }
static int r_all(lua_State *L) { return reduce_plain(L, lt_all, "all"); }

/* var/std(dims, keepdim, {unbiased = true, correction}) */
static int reduce_var(lua_State *L, bool is_std) {
  const char *op = is_std ? "std" : "var";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t dims[LT_MAX_DIM];
  int idx = reduce_dims(L, 2, &n, dims, op);
  bool keepdim = false;
  if (lua_type(L, idx) == LUA_TBOOLEAN) keepdim = lua_toboolean(L, idx++);
  else if (lua_isnil(L, idx) && idx > 2) idx++;
  else if (!lua_istable(L, idx) && !lua_isnone(L, idx)) opt_keepdim(L, idx, op);
  int64_t correction = 1;
  if (lua_istable(L, idx)) {
    static const char *const keys[] = {"unbiased", "correction", NULL};
    lt_lua_checkoptkeys(L, idx, op, keys);
    if (lua_getfield(L, idx, "unbiased") != LUA_TNIL) correction = lua_toboolean(L, -1) ? 1 : 0;
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "correction") != LUA_TNIL) {
      if (!lua_isinteger(L, -1))
        return luaL_error(L, "%s: correction must be an integer, got %s", op, luaL_tolstring(L, -1, NULL));
      correction = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
  } else if (lua_type(L, idx) == LUA_TBOOLEAN) {
    correction = lua_toboolean(L, idx) ? 1 : 0; /* Torch7 style x:std(dim, unbiased) */
  }
  lt_lua_checknargs(L, idx, op);
  lt_lua_pushtensor(L, (is_std ? lt_std : lt_var)(x, n, dims, correction, keepdim));
  return 1;
}
static int r_var(lua_State *L) { return reduce_var(L, false); }
static int r_std(lua_State *L) { return reduce_var(L, true); }

/* norm(p = 2, dims, keepdim); p may be a number or 'fro' / 'inf' */
static int r_norm(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double p = 2;
  if (lua_type(L, 2) == LUA_TNUMBER) p = lua_tonumber(L, 2);
  else if (lua_type(L, 2) == LUA_TSTRING) {
    const char *s = lua_tostring(L, 2);
    if (strcmp(s, "fro") == 0) p = 2;
    else if (strcmp(s, "inf") == 0) p = INFINITY;
    else if (strcmp(s, "-inf") == 0) p = -INFINITY;
    else return luaL_error(L, "norm: unknown norm '%s' (expected a number, 'fro', 'inf' or '-inf')", s);
  } else if (!lua_isnoneornil(L, 2)) return luaL_typeerror(L, 2, "number");
  int n;
  int64_t dims[LT_MAX_DIM];
  int idx = reduce_dims(L, 3, &n, dims, "norm");
  bool keepdim = opt_keepdim(L, idx, "norm");
  lt_lua_checknargs(L, idx, "norm");
  lt_lua_pushtensor(L, lt_norm(x, p, n, dims, keepdim));
  return 1;
}


/* max(x) -> value; max(x, dim, keepdim) -> values, indices; max(a, b) -> maximum */
static int minmax(lua_State *L, bool is_max) {
  const char *op = is_max ? "max" : "min";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  if (lt_lua_totensor(L, 2)) {
    lt_lua_checknargs(L, 2, op);
    lt_lua_pushtensor(L, lt_binary(is_max ? LT_BINARY_maximum : LT_BINARY_minimum, lt_tensor_operand(x),
                                   lt_tensor_operand(lt_lua_totensor(L, 2)), 1, NULL));
    return 1;
  }
  if (lua_isnoneornil(L, 2)) {
    lt_lua_checknargs(L, 1, op);
    lt_lua_pushtensor(L, (is_max ? lt_max_all : lt_min_all)(x));
    return 1;
  }
  int64_t dim = lt_lua_checkdim(L, 2, op);
  bool keepdim = opt_keepdim(L, 3, op);
  lt_lua_checknargs(L, 3, op);
  lt_tensor_t *values = NULL, *indices = NULL;
  lt_lua_check(L, (is_max ? lt_max_dim : lt_min_dim)(x, dim, keepdim, &values, &indices));
  lt_lua_pushtensor(L, values);
  lt_lua_pushtensor(L, lt_lua_one_based(indices));
  return 2;
}
static int r_max(lua_State *L) { return minmax(L, true); }
static int r_min(lua_State *L) { return minmax(L, false); }

static int argminmax(lua_State *L, bool is_max) {
  const char *op = is_max ? "argmax" : "argmin";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  bool has_dim = !lua_isnoneornil(L, 2);
  int64_t dim = has_dim ? lt_lua_checkdim(L, 2, op) : 0;
  bool keepdim = opt_keepdim(L, 3, op);
  lt_lua_checknargs(L, 3, op);
  lt_tensor_t *r = (is_max ? lt_argmax : lt_argmin)(x, has_dim, dim, keepdim);
  lt_lua_pushtensor(L, lt_lua_one_based(r));
  return 1;
}
static int r_argmax(lua_State *L) { return argminmax(L, true); }
static int r_argmin(lua_State *L) { return argminmax(L, false); }

static int cumulative(lua_State *L, bool prod) {
  const char *op = prod ? "cumprod" : "cumsum";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, op);
  lt_dtype dt = opt_dtype(L, 3, op);
  lt_lua_checknargs(L, 3, op);
  lt_lua_pushtensor(L, (prod ? lt_cumprod : lt_cumsum)(x, dim, dt));
  return 1;
}
static int r_cumsum(lua_State *L) { return cumulative(L, false); }
static int r_cumprod(lua_State *L) { return cumulative(L, true); }

static int r_logcumsumexp(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "logcumsumexp");
  lt_lua_checknargs(L, 2, "logcumsumexp");
  lt_lua_pushtensor(L, lt_logcumsumexp(x, dim));
  return 1;
}

/* cummax(x, dim), cummin(x, dim) -> values, 1-based indices */
static int cumulative_extreme(lua_State *L, bool is_max) {
  const char *op = is_max ? "cummax" : "cummin";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, op);
  lt_lua_checknargs(L, 2, op);
  lt_tensor_t *values = NULL, *indices = NULL;
  lt_lua_check(L, (is_max ? lt_cummax : lt_cummin)(x, dim, &values, &indices));
  lt_lua_pushtensor(L, values);
  lt_lua_pushtensor(L, lt_lua_one_based(indices));
  return 2;
}
static int r_cummax(lua_State *L) { return cumulative_extreme(L, true); }
static int r_cummin(lua_State *L) { return cumulative_extreme(L, false); }

static const luaL_Reg other_fns[] = {
    {"logical_not", m_logical_not}, {"clamp", m_clamp}, {"clip", m_clamp}, {"clamp_min", m_clamp_min},
    {"clamp_max", m_clamp_max}, {"clone", m_clone}, {"equal", m_equal},
    {"sum", r_sum}, {"mean", r_mean}, {"prod", r_prod}, {"logsumexp", r_logsumexp}, {"amax", r_amax},
    {"amin", r_amin}, {"any", r_any}, {"all", r_all}, {"var", r_var}, {"std", r_std}, {"norm", r_norm},
    {"max", r_max}, {"min", r_min}, {"argmax", r_argmax}, {"argmin", r_argmin}, {"cumsum", r_cumsum},
    {"cumprod", r_cumprod}, {"logcumsumexp", r_logcumsumexp}, {"cummax", r_cummax}, {"cummin", r_cummin},
    {NULL, NULL}};
static const luaL_Reg method_only[] = {
    {"where", t_where}, {"clamp_", m_clamp_}, {"clip_", m_clamp_}, {"clamp_min_", m_clamp_min_},
    {"clamp_max_", m_clamp_max_}, {"fill_", m_fill_}, {"zero_", m_zero_}, {"copy_", m_copy_},
    {"contiguous", m_contiguous}, {NULL, NULL}};
/* torch._argsort(x, dim, descending): the 1-based positions that sort x along dim (core/sort.h);
   torch.sort and argsort (lua/torch/sort.lua) take values through gather when autograd needs them */
static int t_argsort(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "sort");
  bool descending = lua_toboolean(L, 3);
  lt_lua_pushtensor(L, lt_argsort(x, dim, descending, 1));
  return 1;
}

/* torch._topk(x, k, dim, largest) -> values, 1-based positions of the first k (nil: all) of the
   stable order along dim (largest: descending); the values have no autograd history
   (lua/torch/sort.lua) */
static int t_topk(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 3, "sort");
  bool largest = lua_toboolean(L, 4);
  int64_t k;
  if (lua_isnil(L, 2)) {
    int d;
    if (lt_wrap_dim("sort", dim, x->ndim, &d) != LT_OK) return lt_lua_error(L);
    k = x->ndim ? x->sizes[d] : 1;
  } else {
    k = luaL_checkinteger(L, 2);
  }
  lt_tensor_t *v = NULL;
  lt_tensor_t *i = lt_topk(x, k, dim, largest, 1, &v);
  if (!i) return lt_lua_error(L);
  lt_lua_pushtensor(L, v);
  lt_lua_pushtensor(L, i);
  return 2;
}

/* torch._leaky_relu(x, negative_slope), torch._elu(x, alpha), torch._celu(x, alpha): one op each on a
   floating x (nn.functional's F.leaky_relu, F.elu and F.celu, lua/torch/nn/functional.lua) */
static int parametric_activation(lua_State *L, lt_binary_op op) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  double p = luaL_checknumber(L, 2);
  lt_lua_checknargs(L, 2, lt_binary_name(op));
  lt_lua_pushtensor(L, lt_binary(op, lt_tensor_operand(x), lt_float_operand(p), 1, NULL));
  return 1;
}
static int t_leaky_relu(lua_State *L) { return parametric_activation(L, LT_BINARY_leaky_relu); }
static int t_elu(lua_State *L) { return parametric_activation(L, LT_BINARY_elu); }
static int t_celu(lua_State *L) { return parametric_activation(L, LT_BINARY_celu); }

static const luaL_Reg torch_only[] = {{"where", m_where}, {"_argsort", t_argsort}, {"_topk", t_topk},
                                     {"_leaky_relu", t_leaky_relu}, {"_elu", t_elu}, {"_celu", t_celu},
                                     {NULL, NULL}};

void lt_open_math(lua_State *L, int torch, int mtab) {
  lt_lua_register(L, torch, mtab, unary_fns, true, true);
  lt_lua_register(L, torch, mtab, unary_fns_, false, true);
  lt_lua_register(L, torch, mtab, binary_fns, true, true);
  lt_lua_register(L, torch, mtab, binary_fns_, false, true);
  lt_lua_register(L, torch, mtab, compare_fns, true, true);
  lt_lua_register(L, torch, mtab, other_fns, true, true);
  lt_lua_register(L, torch, mtab, method_only, false, true);
  lt_lua_register(L, torch, mtab, torch_only, true, false);
  /* torch.maximum / torch.minimum are in binary_fns; operators on the metatable: */
  luaL_getmetatable(L, LT_TENSOR_MT);
  static const luaL_Reg ops[] = {{"__add", op_add}, {"__sub", op_sub}, {"__mul", op_mul},
                                 {"__div", op_div}, {"__pow", op_pow}, {"__mod", op_mod},
                                 {"__unm", op_unm}, {"__band", op_band}, {"__bor", op_bor},
                                 {"__bxor", op_bxor}, {"__shl", op_shl}, {"__shr", op_shr},
                                 {"__bnot", op_bnot}, {NULL, NULL}};
  luaL_setfuncs(L, ops, 0);
  lua_pop(L, 1);
}
