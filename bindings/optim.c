/* torch._optim: the fused optimizer steps behind lua/torch/optim (contiguous CPU float32, float64,
   float16 and bfloat16 parameters, the last two with float32 state; the Lua optimizers check their
   options and take a tensor-op path for anything else). Each updates its
   tensors in place, records nothing for autograd and returns nothing. Positional arguments, as the
   optimizers call them once per parameter:

   sgd_step(p, grad, momentum_buf, first, lr, momentum, dampening, weight_decay, nesterov, maximize)
     momentum_buf: nil when momentum is 0, else a tensor like p (contiguous, state dtype); first = true at the
     buffer's first use, when the step sets it to the gradient instead of updating it.
   adam_step(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
             weight_decay, decoupled, maximize)
     max_exp_avg_sq: nil unless amsgrad; step: the step count including this step (1 first);
     decoupled = true for AdamW (p *= 1 - lr * weight_decay) and false for Adam (grad += wd * p).
   can_fuse(p, grad, state...): whether the fused steps take p: a contiguous CPU or CUDA parameter of a
     floating dtype, a gradient of its dtype, and contiguous state tensors (nil entries skipped) of
     its state dtype (float32 for float16/bfloat16). One call instead of a handful of property reads
     per parameter and step. */
#include "bindings/binding.h"
#include "core/optim.h"

static lt_tensor_t *opt_tensor(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : lt_lua_checktensor(L, idx);
}

static int l_sgd_step(lua_State *L) {
  lt_tensor_t *p = lt_lua_checktensor(L, 1), *g = lt_lua_checktensor(L, 2), *buf = opt_tensor(L, 3);
  bool first = lua_toboolean(L, 4);
  lt_sgd_opts_t o = {luaL_checknumber(L, 5), luaL_checknumber(L, 6), luaL_checknumber(L, 7),
                     luaL_checknumber(L, 8), lua_toboolean(L, 9), lua_toboolean(L, 10)};
  lt_lua_checknargs(L, 10, "sgd_step");
  lt_lua_check(L, lt_sgd_step(p, g, buf, first, &o));
  return 0;
}

static int l_can_fuse(lua_State *L) {
  lt_tensor_t *p = lt_lua_checktensor(L, 1), *g = lt_lua_checktensor(L, 2);
  lt_dtype dt = p->dtype;
  bool ok = (dt == LT_FLOAT32 || dt == LT_FLOAT64 || dt == LT_FLOAT16 || dt == LT_BFLOAT16) &&
            g->dtype == dt && (p->device.type == LT_CPU || p->device.type == LT_CUDA) && lt_is_contiguous(p);
  lt_dtype sdt = (dt == LT_FLOAT16 || dt == LT_BFLOAT16) ? LT_FLOAT32 : dt;
  for (int i = 3, n = lua_gettop(L); ok && i <= n; i++) {
    if (lua_isnil(L, i)) continue;
    lt_tensor_t *s = lt_lua_checktensor(L, i);
    ok = s->dtype == sdt && lt_is_contiguous(s);
  }
  lua_pushboolean(L, ok);
  return 1;
}

static int l_adam_step(lua_State *L) {
  lt_tensor_t *p = lt_lua_checktensor(L, 1), *g = lt_lua_checktensor(L, 2);
  lt_tensor_t *m = lt_lua_checktensor(L, 3), *v = lt_lua_checktensor(L, 4), *vmax = opt_tensor(L, 5);
  double step = luaL_checknumber(L, 6);
  lt_adam_opts_t o = {luaL_checknumber(L, 7), luaL_checknumber(L, 8), luaL_checknumber(L, 9),
                      luaL_checknumber(L, 10), luaL_checknumber(L, 11), lua_toboolean(L, 12),
                      lua_toboolean(L, 13)};
  lt_lua_checknargs(L, 13, "adam_step");
  lt_lua_check(L, lt_adam_step(p, g, m, v, vmax, step, &o));
  return 0;
}

void lt_open_optim(lua_State *L, int torch) {
  static const luaL_Reg fns[] = {{"sgd_step", l_sgd_step}, {"adam_step", l_adam_step},
                                 {"can_fuse", l_can_fuse}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, torch, "_optim");
}
