/* Shared helpers of the Lua bindings: the tensor userdata, argument parsing, raising core errors.
   Bindings check Lua arguments, call the core, push results; no math here. */
#ifndef LT_BINDING_H
#define LT_BINDING_H

#include "core/tensor.h"
#include "core/elementwise.h"

#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#define LT_TENSOR_MT "torch.Tensor"
#define LT_DEVICE_MT "torch.device"
#define LT_DTYPE_MT "torch.dtype"

/* ---- tensors ---- */
lt_tensor_t *lt_lua_totensor(lua_State *L, int idx);            /* NULL if not a tensor */
lt_tensor_t *lt_lua_checktensor(lua_State *L, int idx);         /* raises "bad argument" */
/* Push a new reference (consumed); raises the core's error when t is NULL. */
void lt_lua_pushtensor(lua_State *L, lt_tensor_t *t);
/* Indices the core gives 0-based, made 1-based in place: idx itself, or NULL with the error set
   (idx released) when that fails; NULL passes through. */
lt_tensor_t *lt_lua_one_based(lt_tensor_t *idx);
/* Push an op's result: for an in-place op (the result is self, argument 1) push argument 1 and
   drop the extra reference, else push the new tensor. Raises the core's error when r is NULL. */
void lt_lua_pushresult(lua_State *L, lt_tensor_t *r, bool inplace);
/* Raise the core's last error as a Lua error. */
int lt_lua_error(lua_State *L);
/* bindings/error_position.c: luaL_error, luaL_argerror and luaL_typeerror, but an error raised for
   the library's own Lua code names the user's line that called into the library, as the library's
   Lua errors do; the bindings' are these. lt_open_error_position: package.loaded["torch._error"],
   the `error` of the library's modules. */
int lt_lua_errorf(lua_State *L, const char *fmt, ...);
int lt_lua_argerror(lua_State *L, int arg, const char *extramsg);
int lt_lua_typeerror(lua_State *L, int arg, const char *tname);
#define luaL_error(...) lt_lua_errorf(__VA_ARGS__)
#define luaL_argerror(...) lt_lua_argerror(__VA_ARGS__)
#define luaL_typeerror(...) lt_lua_typeerror(__VA_ARGS__)
void lt_open_error_position(lua_State *L);
/* lauxlib's argument checks, luaL_checkinteger to luaL_checkoption: the same conversions (a string
   that converts to a number is a number, a number is a string) and the same messages ("bad argument
   #2 to 'f' (number expected, got string)", "number has no integer representation"), raised
   through lt_lua_argerror and lt_lua_typeerror, so that a bad value the library's Lua code passed
   on names the user's line as well. The checks are inline and make the API calls lauxlib's make:
   only the raise differs (lt_lua_interror, lt_lua_tagerror: lauxlib's interror and tag_error, in
   bindings/error_position.c). luaL_checkstack is lauxlib's: no argument of the user's. */
int lt_lua_interror(lua_State *L, int arg);
int lt_lua_tagerror(lua_State *L, int arg, int tag);
static inline lua_Integer lt_lua_checkinteger(lua_State *L, int arg) {
  int isnum;
  lua_Integer d = lua_tointegerx(L, arg, &isnum);
  if (luai_unlikely(!isnum)) lt_lua_interror(L, arg);
  return d;
}
static inline lua_Integer lt_lua_optinteger(lua_State *L, int arg, lua_Integer def) {
  return lua_isnoneornil(L, arg) ? def : lt_lua_checkinteger(L, arg);
}
static inline lua_Number lt_lua_checknumber(lua_State *L, int arg) {
  int isnum;
  lua_Number d = lua_tonumberx(L, arg, &isnum);
  if (luai_unlikely(!isnum)) lt_lua_tagerror(L, arg, LUA_TNUMBER);
  return d;
}
static inline lua_Number lt_lua_optnumber(lua_State *L, int arg, lua_Number def) {
  return lua_isnoneornil(L, arg) ? def : lt_lua_checknumber(L, arg);
}
static inline const char *lt_lua_checklstring(lua_State *L, int arg, size_t *len) {
  const char *s = lua_tolstring(L, arg, len);
  if (luai_unlikely(s == NULL)) lt_lua_tagerror(L, arg, LUA_TSTRING);
  return s;
}
static inline const char *lt_lua_optlstring(lua_State *L, int arg, const char *def, size_t *len) {
  if (lua_isnoneornil(L, arg)) {
    if (len) *len = def ? strlen(def) : 0;
    return def;
  }
  return lt_lua_checklstring(L, arg, len);
}
static inline void lt_lua_checktype(lua_State *L, int arg, int t) {
  if (luai_unlikely(lua_type(L, arg) != t)) lt_lua_tagerror(L, arg, t);
}
static inline void lt_lua_checkany(lua_State *L, int arg) {
  if (luai_unlikely(lua_type(L, arg) == LUA_TNONE)) lt_lua_argerror(L, arg, "value expected");
}
static inline void *lt_lua_checkudata(lua_State *L, int arg, const char *tname) {
  void *p = luaL_testudata(L, arg, tname);
  if (luai_unlikely(p == NULL)) lt_lua_typeerror(L, arg, tname);
  return p;
}
int lt_lua_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]);
#define luaL_checkinteger(...) lt_lua_checkinteger(__VA_ARGS__)
#define luaL_optinteger(...) lt_lua_optinteger(__VA_ARGS__)
#define luaL_checknumber(...) lt_lua_checknumber(__VA_ARGS__)
#define luaL_optnumber(...) lt_lua_optnumber(__VA_ARGS__)
#define luaL_checklstring(...) lt_lua_checklstring(__VA_ARGS__)
#define luaL_optlstring(...) lt_lua_optlstring(__VA_ARGS__)
#define luaL_checktype(...) lt_lua_checktype(__VA_ARGS__)
#define luaL_checkany(...) lt_lua_checkany(__VA_ARGS__)
#define luaL_checkudata(...) lt_lua_checkudata(__VA_ARGS__)
#define luaL_checkoption(...) lt_lua_checkoption(__VA_ARGS__)
/* Raise when the core call failed. */
static inline void lt_lua_check(lua_State *L, int rc) { if (rc != LT_OK) lt_lua_error(L); }

/* ---- arguments ---- */
/* A tensor, number or boolean at idx as an operand (numbers by value). */
lt_operand_t lt_lua_checkoperand(lua_State *L, int idx);
/* An integer parameter (a size, dim, index, count): an integer, or a float with an exact integer
   value (3.0, as Lua's own library takes it: n / 2 is a float in Lua 5.4). lt_lua_toint: true with
   *v set when the value at idx is such a number (never a string); lt_lua_checkint raises
   "op: what must be an integer, got 2.5" for anything else (non-integral, NaN, inf, out of range). */
bool lt_lua_toint(lua_State *L, int idx, int64_t *v);
int64_t lt_lua_checkint(lua_State *L, int idx, const char *op, const char *what);
/* A user dimension (1-based, or negative from the end) to a core dimension (0-based or negative). */
int64_t lt_lua_checkdim(lua_State *L, int idx, const char *op);
int64_t lt_lua_todim(lua_State *L, int64_t d, const char *op);
/* A user index (1-based, or negative) to the core's (0-based or negative). */
int64_t lt_lua_index(lua_State *L, int64_t i, const char *op);
/* Sizes from numbers at idx.. or one array table at idx; returns the index after them. */
int lt_lua_checksizes(lua_State *L, int idx, int *ndim, int64_t *sizes, const char *op);
/* Sizes and strides as two tables at idx and idx + 1, of equal lengths (their values unchecked:
   the core checks them); returns idx + 2. */
int lt_lua_checkstrided(lua_State *L, int idx, int *ndim, int64_t *sizes, int64_t *strides, const char *op);
/* A list of dims: numbers at idx.. or one table; returns the index after them. */
int lt_lua_checkdims(lua_State *L, int idx, int *n, int64_t *dims, const char *op);
/* The options table at idx (or none): dtype, device, requires_grad. */
typedef struct {
  lt_dtype dtype;      /* LT_DTYPE_INVALID when not given */
  bool has_device;
  lt_device_t device;
  bool requires_grad;
  struct lt_generator *generator; /* the generator option (random functions only); NULL: the default */
} lt_lua_opts_t;
void lt_lua_checkopts(lua_State *L, int idx, lt_lua_opts_t *o);
/* The same for the random functions, which also take {generator = g} (a torch.Generator). */
void lt_lua_checkrandopts(lua_State *L, int idx, lt_lua_opts_t *o);
/* bindings/generator.c: the torch.Generator at idx (NULL for nil: the default generator), or an
   error "op: generator should be a torch.Generator"; optgenerator: the generator of an options
   table {generator = g} at idx (NULL when idx is no such table); setgenstate: loads the state
   tensor at idx into g, checking it ("op: expected a uint8 tensor ...") */
struct lt_generator *lt_lua_checkgenerator(lua_State *L, int idx, const char *op);
struct lt_generator *lt_lua_optgenerator(lua_State *L, int idx, const char *op);
void lt_lua_setgenstate(lua_State *L, struct lt_generator *g, int idx, const char *op);
/* Raises "op: unknown option 'k' (its options are a, b)" when the table at idx has a key not in
   keys (NULL-terminated); a non-table is left to the caller's own check. */
void lt_lua_checkoptkeys(lua_State *L, int idx, const char *op, const char *const *keys);
/* lua_pcall's message handler for code run on behalf of C: the message with a traceback. */
int lt_lua_msgh(lua_State *L);
/* dtype objects (torch.float32 ...) */
void lt_lua_pushdtype(lua_State *L, lt_dtype t);
lt_dtype lt_lua_todtype(lua_State *L, int idx);   /* LT_DTYPE_INVALID if not a dtype */
lt_dtype lt_lua_checkdtype(lua_State *L, int idx);
/* devices: a device object or a string */
void lt_lua_pushdevice(lua_State *L, lt_device_t d);
bool lt_lua_todevice(lua_State *L, int idx, lt_device_t *d); /* false if not a device/string; raises on a bad string */
lt_device_t lt_lua_checkdevice(lua_State *L, int idx);
/* Number of arguments of a function is checked by the functions: too many raise this. */
void lt_lua_checknargs(lua_State *L, int max, const char *op);

/* ---- registration of the parts (one per binding file) ---- */
void lt_open_tensor(lua_State *L, int torch, int methods);
void lt_open_math(lua_State *L, int torch, int methods);
void lt_open_shape(lua_State *L, int torch, int methods);
void lt_open_factory(lua_State *L, int torch, int methods);
void lt_open_device(lua_State *L, int torch, int methods);
void lt_open_linalg(lua_State *L, int torch, int methods);
void lt_open_random(lua_State *L, int torch, int methods);
void lt_open_autograd(lua_State *L, int torch, int methods);
/* torch._nn (the C side of torch.nn.functional) and torch._optim (fused optimizer steps): one
   table each, filled by one file per family of ops */
void lt_open_nn(lua_State *L, int torch);
void lt_open_nn_conv(lua_State *L, int nn);  /* bindings/nn_conv.c: conv2d and pooling */
void lt_open_nn_norm(lua_State *L, int nn);  /* bindings/nn_norm.c: softmax, norms, nll_loss */
void lt_open_optim(lua_State *L, int torch); /* bindings/optim.c */
void lt_open_data(lua_State *L, int torch);  /* bindings/data.c: torch._read_idx */
void lt_open_generator(lua_State *L, int torch); /* bindings/generator.c: torch.Generator */
void lt_open_data_worker(lua_State *L, int torch); /* bindings/data_worker.c: DataLoader worker threads */
void lt_open_serialize(lua_State *L, int torch); /* bindings/serialize.c: torch._safetensors_* */
void lt_open_cuda(lua_State *L, int torch, int methods); /* bindings/cuda.c: torch._cuda, pin_memory */
void lt_open_stream(lua_State *L, int torch, int methods); /* bindings/stream.c: streams, events */
void lt_open_lua_thread(lua_State *L, int torch); /* bindings/lua_thread.c: torch._lua_thread */
/* bindings/autograd.c: the registry references of freed Lua autograd functions, dropped by their
   state at safe points (drain) or forgotten when it closes (forget: main is its main thread);
   lt_lua_finalizing: the state (main thread) whose tensor-box finalizer this thread is running */
void lt_lua_unrefs_drain(lua_State *L);
/* anomaly mode: t's node, recorded in it and without a trace yet, takes the Lua traceback here */
void lt_lua_anomaly_trace(lua_State *L, lt_tensor_t *t);
void lt_lua_unrefs_forget(lua_State *main);
extern _Thread_local lua_State *lt_lua_finalizing;
void lt_open_distributed(lua_State *L, int torch); /* bindings/distributed.c: torch._dist */
void lt_open_amp(lua_State *L, int torch); /* bindings/amp.c: torch._autocast_*, torch._amp_* */

/* Register a function in torch (as torch.name) and/or in the tensor methods; entries without a
   function are skipped. */
void lt_lua_register(lua_State *L, int torch, int methods, const luaL_Reg *fns, bool in_torch, bool as_method);

#endif
