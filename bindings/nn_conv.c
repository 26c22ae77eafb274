/* torch._nn: conv2d and 2-D pooling (the C side of torch.nn.functional's conv2d, max_pool2d,
   avg_pool2d and adaptive_avg_pool2d; lua/torch/nn/functional.lua gives them PyTorch's arguments). */
#include "bindings/binding.h"
#include "core/conv.h"
#include "core/pool.h"


/* a (height, width) pair from arguments idx and idx + 1 */
static void check_pair(lua_State *L, int idx, const char *op, const char *what, int64_t out[2]) {
  out[0] = lt_lua_checkint(L, idx, op, what);
  out[1] = lt_lua_checkint(L, idx + 1, op, what);
}

/* a boolean argument; nil is false */
static bool check_bool(lua_State *L, int idx, const char *op, const char *what) {
  if (lua_isnoneornil(L, idx)) return false;
  if (!lua_isboolean(L, idx)) luaL_error(L, "%s: %s must be a boolean, got %s", op, what, luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

/* conv2d(x, w, b_or_nil, sh, sw, ph, pw, dh, dw, groups) */
static int l_conv2d(lua_State *L) {
  const char *op = "conv2d";
  lt_lua_checknargs(L, 10, op);
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *w = lt_lua_checktensor(L, 2), *b = NULL;
  if (!lua_isnil(L, 3)) {
    b = lt_lua_totensor(L, 3);
    if (!b) return luaL_error(L, "%s: expected bias to be a tensor or nil, got %s", op, luaL_typename(L, 3));
  }
  int64_t stride[2];
  check_pair(L, 4, op, "stride", stride);
  int64_t padding[2];
  check_pair(L, 6, op, "padding", padding);
  int64_t dilation[2];
  check_pair(L, 8, op, "dilation", dilation);
  int64_t groups = lt_lua_checkint(L, 10, op, "groups");
  lt_lua_pushtensor(L, lt_conv2d(x, w, b, stride, padding, dilation, groups));
  return 1;
}

/* max_pool2d(x, kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode) -> y, indices (1-based within each plane) */
static int l_max_pool2d(lua_State *L) {
  const char *op = "max_pool2d";
  lt_lua_checknargs(L, 10, op);
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t k[2];
  check_pair(L, 2, op, "kernel_size", k);
  int64_t s[2];
  check_pair(L, 4, op, "stride", s);
  int64_t p[2];
  check_pair(L, 6, op, "padding", p);
  int64_t d[2];
  check_pair(L, 8, op, "dilation", d);
  bool ceil_mode = check_bool(L, 10, op, "ceil_mode");
  lt_tensor_t *y, *idx;
  lt_lua_check(L, lt_max_pool2d(x, k, s, p, d, ceil_mode, &y, &idx));
  lt_lua_pushtensor(L, y);
  lt_lua_pushtensor(L, idx);
  return 2;
}

/* avg_pool2d(x, kh, kw, sh, sw, ph, pw, ceil_mode, count_include_pad, divisor_override (0: none)) */
static int l_avg_pool2d(lua_State *L) {
  const char *op = "avg_pool2d";
  lt_lua_checknargs(L, 10, op);
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t k[2];
  check_pair(L, 2, op, "kernel_size", k);
  int64_t s[2];
  check_pair(L, 4, op, "stride", s);
  int64_t p[2];
  check_pair(L, 6, op, "padding", p);
  bool ceil_mode = check_bool(L, 8, op, "ceil_mode");
  bool cip = lua_isnoneornil(L, 9) ? true : check_bool(L, 9, op, "count_include_pad");
  int64_t divisor = lua_isnoneornil(L, 10) ? 0 : lt_lua_checkint(L, 10, op, "divisor_override");
  lt_lua_pushtensor(L, lt_avg_pool2d(x, k, s, p, ceil_mode, cip, divisor));
  return 1;
}

/* adaptive_avg_pool2d(x, oh, ow) */
static int l_adaptive_avg_pool2d(lua_State *L) {
  const char *op = "adaptive_avg_pool2d";
  lt_lua_checknargs(L, 3, op);
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t size[2];
  check_pair(L, 2, op, "output_size", size);
  lt_lua_pushtensor(L, lt_adaptive_avg_pool2d(x, size));
  return 1;
}

void lt_open_nn_conv(lua_State *L, int nn) {
  static const luaL_Reg fns[] = {{"conv2d", l_conv2d},
                                 {"max_pool2d", l_max_pool2d},
                                 {"avg_pool2d", l_avg_pool2d},
                                 {"adaptive_avg_pool2d", l_adaptive_avg_pool2d},
                                 {NULL, NULL}};
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, nn, f->name);
  }
}
