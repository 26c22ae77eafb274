/* torch._nn's softmax, log_softmax, batch_norm, layer_norm and nll_loss: the C side of
   torch.nn.functional (lua/torch/nn/functional.lua gives them PyTorch's arguments). */
#include "bindings/binding.h"
#include "core/loss.h"
#include "core/normalization.h"
#include "core/softmax.h"

#include <string.h>

/* a tensor argument, with an error that names the op and the argument */
static lt_tensor_t *tensor_arg(lua_State *L, int idx, const char *op, const char *what) {
  lt_tensor_t *t = lt_lua_totensor(L, idx);
  if (!t) luaL_error(L, "%s: expected %s (argument %d) to be a tensor, got %s", op, what, idx, luaL_typename(L, idx));
  return t;
}

/* a tensor or nil */
static lt_tensor_t *opt_tensor_arg(lua_State *L, int idx, const char *op, const char *what) {
  if (lua_isnoneornil(L, idx)) return NULL;
  lt_tensor_t *t = lt_lua_totensor(L, idx);
  if (!t) luaL_error(L, "%s: expected %s (argument %d) to be a tensor or nil, got %s", op, what, idx, luaL_typename(L, idx));
  return t;
}

static double number_arg(lua_State *L, int idx, const char *op, const char *what) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    luaL_error(L, "%s: expected %s (argument %d) to be a number, got %s", op, what, idx, luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

static int64_t integer_arg(lua_State *L, int idx, const char *op, const char *what) {
  int64_t v;
  if (!lt_lua_toint(L, idx, &v))
    luaL_error(L, "%s: expected %s (argument %d) to be an integer, got %s", op, what, idx,
               lua_type(L, idx) == LUA_TNUMBER ? "a non-integer number" : luaL_typename(L, idx));
  return v;
}

static int softmax_like(lua_State *L, bool log) {
  const char *op = log ? "log_softmax" : "softmax";
  lt_lua_checknargs(L, 2, op);
  lt_tensor_t *x = tensor_arg(L, 1, op, "input");
  int64_t dim = integer_arg(L, 2, op, "dim");
  dim = lt_lua_todim(L, dim, op);
  lt_lua_pushtensor(L, lt_softmax(x, dim, log));
  return 1;
}

/* softmax(x, dim), log_softmax(x, dim): dim 1-based or negative */
static int l_softmax(lua_State *L) { return softmax_like(L, false); }
static int l_log_softmax(lua_State *L) { return softmax_like(L, true); }

/* batch_norm(x, w, b, running_mean, running_var, training, momentum, eps) */
static int l_batch_norm(lua_State *L) {
  const char *op = "batch_norm";
  lt_lua_checknargs(L, 8, op);
  lt_tensor_t *x = tensor_arg(L, 1, op, "input");
  lt_tensor_t *w = opt_tensor_arg(L, 2, op, "weight");
  lt_tensor_t *b = opt_tensor_arg(L, 3, op, "bias");
  lt_tensor_t *rm = opt_tensor_arg(L, 4, op, "running_mean");
  lt_tensor_t *rv = opt_tensor_arg(L, 5, op, "running_var");
  if (!lua_isboolean(L, 6))
    luaL_error(L, "%s: expected training (argument 6) to be a boolean, got %s", op, luaL_typename(L, 6));
  bool training = lua_toboolean(L, 6);
  double momentum = number_arg(L, 7, op, "momentum");
  double eps = number_arg(L, 8, op, "eps");
  lt_lua_pushtensor(L, lt_batch_norm(x, w, b, rm, rv, training, momentum, eps));
  return 1;
}

/* layer_norm(x, n_normalized_dims, w, b, eps) */
static int l_layer_norm(lua_State *L) {
  const char *op = "layer_norm";
  lt_lua_checknargs(L, 5, op);
  lt_tensor_t *x = tensor_arg(L, 1, op, "input");
  int64_t n = integer_arg(L, 2, op, "the number of normalized dimensions");
  lt_tensor_t *w = opt_tensor_arg(L, 3, op, "weight");
  lt_tensor_t *b = opt_tensor_arg(L, 4, op, "bias");
  double eps = number_arg(L, 5, op, "eps");
  if (n < 1 || n > x->ndim)
    luaL_error(L, "%s: cannot normalise over the last %I dimensions of a %d-dimensional input", op, (lua_Integer)n,
               x->ndim);
  lt_lua_pushtensor(L, lt_layer_norm(x, (int)n, w, b, eps));
  return 1;
}

/* nll_loss(opname, logp, target, weight, ignore_index, reduction): target and ignore_index are
   1-based classes; reduction 0 none, 1 mean, 2 sum */
static int l_nll_loss(lua_State *L) {
  lt_lua_checknargs(L, 6, "nll_loss");
  const char *name = luaL_checkstring(L, 1);
  /* the node keeps the name: a string that lives as long as the program */
  const char *op = strcmp(name, "cross_entropy") == 0 ? "cross_entropy" : "nll_loss";
  lt_tensor_t *logp = tensor_arg(L, 2, op, "input");
  lt_tensor_t *target = tensor_arg(L, 3, op, "target");
  lt_tensor_t *weight = opt_tensor_arg(L, 4, op, "weight");
  bool has_ignore = !lua_isnoneornil(L, 5);
  int64_t ignore = has_ignore ? integer_arg(L, 5, op, "ignore_index") : 0;
  int64_t red = integer_arg(L, 6, op, "reduction");
  if (red < 0 || red > 2) luaL_error(L, "%s: invalid reduction code %I (0 none, 1 mean, 2 sum)", op, (lua_Integer)red);
  lt_lua_pushtensor(L, lt_nll_loss(op, logp, target, weight, has_ignore, ignore, (lt_reduction)red));
  return 1;
}

void lt_open_nn_norm(lua_State *L, int nn) {
  static const luaL_Reg fns[] = {{"softmax", l_softmax},       {"log_softmax", l_log_softmax},
                                 {"batch_norm", l_batch_norm}, {"layer_norm", l_layer_norm},
                                 {"nll_loss", l_nll_loss},     {NULL, NULL}};
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, nn, f->name);
  }
}
