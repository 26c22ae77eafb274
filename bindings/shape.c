/* Shape, view and indexing ops. User dims and indices are 1-based (negative from the end); the
   core's are 0-based, so index tensors are shifted on the way in, and out for nonzero. */
#include "bindings/binding.h"
#include "core/autograd.h"
#include "core/index.h"
#include "core/shape.h"

#include <stdlib.h>
#include <string.h>

/* one size at idx: an integer or an integral float (3.0) */
static int64_t size_arg(lua_State *L, int idx, const char *op) {
  int64_t v;
  if (!lt_lua_toint(L, idx, &v)) luaL_error(L, "%s: sizes must be integers, got %s", op, luaL_tolstring(L, idx, NULL));
  return v;
}

/* sizes (may hold -1) as numbers at 2.. or one table at 2; returns the index after them */
static int view_sizes(lua_State *L, int *n, int64_t *sizes, const char *op) {
  int idx = 2;
  *n = 0;
  if (lua_istable(L, 2)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
    if (len > LT_MAX_DIM) luaL_error(L, "%s: at most %d dimensions", op, LT_MAX_DIM);
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, 2, i);
      sizes[(*n)++] = size_arg(L, -1, op);
      lua_pop(L, 1);
    }
    return 3;
  }
  while (lua_type(L, idx) == LUA_TNUMBER) {
    if (*n >= LT_MAX_DIM) luaL_error(L, "%s: at most %d dimensions", op, LT_MAX_DIM);
    sizes[(*n)++] = size_arg(L, idx++, op);
  }
  return idx;
}

static int s_view(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t sizes[LT_MAX_DIM];
  int next = view_sizes(L, &n, sizes, "view");
  lt_lua_checknargs(L, next - 1, "view");
  lt_lua_pushtensor(L, lt_view(x, n, sizes));
  return 1;
}

/* x:_as_strided(sizes, strides, storage_offset = x's): the raw view (lua/torch/shapes.lua adds
   autograd and the public names) */
static int s_as_strided(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int nd;
  int64_t sizes[LT_MAX_DIM], strides[LT_MAX_DIM];
  lt_lua_checkstrided(L, 2, &nd, sizes, strides, "as_strided");
  int64_t offset = luaL_optinteger(L, 4, x->offset);
  lt_lua_checknargs(L, 4, "as_strided");
  lt_lua_pushtensor(L, lt_as_strided(x, nd, sizes, strides, offset));
  return 1;
}

/* x:_resize_(sizes): the core's resize_ (lua/torch/inplace.lua adds the checks and the names) */
static int s_resize_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t sizes[LT_MAX_DIM];
  int next = view_sizes(L, &n, sizes, "resize_");
  lt_lua_checknargs(L, next - 1, "resize_");
  lt_lua_check(L, lt_resize_(x, n, sizes));
  lua_settop(L, 1);
  return 1;
}

/* x:_set_view_(v): x takes the geometry of v, a view of x's storage that a view op made from x
   (x:squeeze(), x:t(), ...), and v's history when the op was recorded: the in-place view ops
   (squeeze_, t_, as_strided_, ...), whose node then leads from x back to x's old history. The
   version counter is bumped as by PyTorch's in-place ops. Autograd's leaf check is the caller's. */
static int s_set_view_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *v = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 2, "_set_view_");
  if (v->storage != x->storage || v->dtype != x->dtype)
    return luaL_error(L, "_set_view_: expected a view of the tensor's own storage and dtype");
  x->ndim = v->ndim;
  x->numel = v->numel;
  x->offset = v->offset;
  memcpy(x->sizes, v->sizes, sizeof x->sizes);
  memcpy(x->strides, v->strides, sizeof x->strides);
  lt_node_t *fn = lt_grad_fn(v);
  if (fn) lt_node_set_output(fn, v->autograd->output_nr, x);
  lt_bump_version(x);
  lua_settop(L, 1);
  return 1;
}

static int s_reshape(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t sizes[LT_MAX_DIM];
  int next = view_sizes(L, &n, sizes, "reshape");
  lt_lua_checknargs(L, next - 1, "reshape");
  lt_lua_pushtensor(L, lt_reshape(x, n, sizes));
  return 1;
}

static int as_shape_of(lua_State *L, int which) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *o = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 2, which == 0 ? "view_as" : which == 1 ? "reshape_as" : "expand_as");
  lt_tensor_t *r = which == 0 ? lt_view(x, o->ndim, o->sizes)
                 : which == 1 ? lt_reshape(x, o->ndim, o->sizes)
                              : lt_expand(x, o->ndim, o->sizes);
  lt_lua_pushtensor(L, r);
  return 1;
}
static int s_view_as(lua_State *L) { return as_shape_of(L, 0); }
static int s_reshape_as(lua_State *L) { return as_shape_of(L, 1); }
static int s_expand_as(lua_State *L) { return as_shape_of(L, 2); }

static int s_permute(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t dims[LT_MAX_DIM];
  int next = lt_lua_checkdims(L, 2, &n, dims, "permute");
  lt_lua_checknargs(L, next - 1, "permute");
  lt_lua_pushtensor(L, lt_permute(x, n, dims));
  return 1;
}

static int s_transpose(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t a = lt_lua_checkdim(L, 2, "transpose"), b = lt_lua_checkdim(L, 3, "transpose");
  lt_lua_checknargs(L, 3, "transpose");
  lt_lua_pushtensor(L, lt_transpose(x, a, b));
  return 1;
}

static int s_t(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "t");
  lt_lua_pushtensor(L, lt_t(x));
  return 1;
}

static int s_squeeze(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 2, "squeeze");
  if (lua_isnoneornil(L, 2)) lt_lua_pushtensor(L, lt_squeeze(x));
  else lt_lua_pushtensor(L, lt_squeeze_dim(x, lt_lua_checkdim(L, 2, "squeeze")));
  return 1;
}

static int s_unsqueeze(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 2, "unsqueeze");
  lt_lua_pushtensor(L, lt_unsqueeze(x, lt_lua_checkdim(L, 2, "unsqueeze")));
  return 1;
}

static int s_expand(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int n;
  int64_t sizes[LT_MAX_DIM];
  int next = view_sizes(L, &n, sizes, "expand");
  lt_lua_checknargs(L, next - 1, "expand");
  lt_lua_pushtensor(L, lt_expand(x, n, sizes));
  return 1;
}

static int s_flatten(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t a = lua_isnoneornil(L, 2) ? 0 : lt_lua_checkdim(L, 2, "flatten");
  int64_t b = lua_isnoneornil(L, 3) ? -1 : lt_lua_checkdim(L, 3, "flatten");
  lt_lua_checknargs(L, 3, "flatten");
  lt_lua_pushtensor(L, lt_flatten(x, a, b));
  return 1;
}

static int s_narrow(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "narrow");
  int64_t start = lt_lua_index(L, luaL_checkinteger(L, 3), "narrow");
  int64_t len = luaL_checkinteger(L, 4);
  lt_lua_checknargs(L, 4, "narrow");
  lt_lua_pushtensor(L, lt_narrow(x, dim, start, len));
  return 1;
}

static int s_select(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "select");
  int64_t i = lt_lua_index(L, luaL_checkinteger(L, 3), "select");
  lt_lua_checknargs(L, 3, "select");
  lt_lua_pushtensor(L, lt_select(x, dim, i));
  return 1;
}

/* a Lua array of tensors at idx; the caller frees the array */
static lt_tensor_t **tensor_list(lua_State *L, int idx, int *n, const char *op) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
  if (len == 0) luaL_error(L, "%s: expected a non-empty list of tensors", op);
  if (len > 1000000) luaL_error(L, "%s: too many tensors", op);
  lt_tensor_t **xs = lua_newuserdatauv(L, sizeof(lt_tensor_t *) * (size_t)len, 0); /* freed by the GC */
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, idx, i);
    xs[i - 1] = lt_lua_totensor(L, -1);
    if (!xs[i - 1]) luaL_error(L, "%s: element %d of the list is a %s, not a tensor", op, (int)i, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  *n = (int)len;
  return xs;
}

static int s_cat(lua_State *L) {
  int n;
  int64_t dim = lua_isnoneornil(L, 2) ? 0 : lt_lua_checkdim(L, 2, "cat");
  lt_lua_checknargs(L, 2, "cat");
  lt_tensor_t **xs = tensor_list(L, 1, &n, "cat");
  lt_lua_pushtensor(L, lt_cat(n, xs, dim));
  return 1;
}

static int s_stack(lua_State *L) {
  int n;
  int64_t dim = lua_isnoneornil(L, 2) ? 0 : lt_lua_checkdim(L, 2, "stack");
  lt_lua_checknargs(L, 2, "stack");
  lt_tensor_t **xs = tensor_list(L, 1, &n, "stack");
  lt_lua_pushtensor(L, lt_stack(n, xs, dim));
  return 1;
}

static int push_pieces(lua_State *L, int rc, lt_tensor_t **pieces, int n) {
  if (rc != LT_OK) return lt_lua_error(L);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lt_lua_pushtensor(L, pieces[i]);
    lua_rawseti(L, -2, i + 1);
  }
  free(pieces);
  return 1;
}

static int s_split(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lua_isnoneornil(L, 3) ? 0 : lt_lua_checkdim(L, 3, "split");
  lt_lua_checknargs(L, 3, "split");
  lt_tensor_t **pieces = NULL;
  int n = 0, rc;
  if (lua_istable(L, 2)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
    int64_t *sizes = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(len ? len : 1), 0);
    for (lua_Integer i = 1; i <= len; i++) {
      lua_rawgeti(L, 2, i);
      sizes[i - 1] = size_arg(L, -1, "split");
      lua_pop(L, 1);
    }
    rc = lt_split_sizes(x, (int)len, sizes, dim, &pieces, &n);
  } else {
    rc = lt_split(x, luaL_checkinteger(L, 2), dim, &pieces, &n);
  }
  return push_pieces(L, rc, pieces, n);
}

static int s_chunk(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t chunks = luaL_checkinteger(L, 2);
  int64_t dim = lua_isnoneornil(L, 3) ? 0 : lt_lua_checkdim(L, 3, "chunk");
  lt_lua_checknargs(L, 3, "chunk");
  lt_tensor_t **pieces = NULL;
  int n = 0;
  int rc = lt_chunk(x, chunks, dim, &pieces, &n);
  return push_pieces(L, rc, pieces, n);
}

static int s_unbind(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 2, "unbind");
  int64_t dim = lua_isnoneornil(L, 2) ? 0 : lt_lua_checkdim(L, 2, "unbind");
  int d;
  lt_lua_check(L, lt_wrap_dim("unbind", dim, x->ndim, &d));
  if (x->ndim == 0) return luaL_error(L, "unbind: a 0-dim tensor cannot be unbound");
  lua_createtable(L, (int)x->sizes[d], 0);
  for (int64_t i = 0; i < x->sizes[d]; i++) {
    lt_lua_pushtensor(L, lt_select(x, d, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* ---- indexing with index tensors (1-based values) ---- */
/* The user's index tensor at idx (1-based values) as a 0-based tensor of the same dtype; int32
   indices are shifted in int64 so that the shift cannot wrap. */
static lt_tensor_t *zero_based(lua_State *L, int idx, const char *op, bool allow_int32) {
  lt_tensor_t *t = lt_lua_checktensor(L, idx);
  if (t->dtype != LT_INT64 && !(allow_int32 && t->dtype == LT_INT32))
    luaL_error(L, "%s: expected an %s index tensor, got %s", op, allow_int32 ? "int64 or int32" : "int64",
               lt_dtype_name(t->dtype));
  lt_tensor_t *w = t->dtype == LT_INT64 ? (lt_retain(t), t) : lt_convert(t, LT_INT64, t->device);
  lt_tensor_t *r = w ? lt_binary(LT_BINARY_sub, lt_tensor_operand(w), lt_int_operand(1), 1, NULL) : NULL;
  lt_release(w);
  if (!r) lt_lua_error(L);
  return r;
}

static int s_index_select(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "index_select");
  lt_lua_checknargs(L, 3, "index_select");
  lt_tensor_t *idx = zero_based(L, 3, "index_select", true);
  lt_tensor_t *r = lt_index_select(x, dim, idx);
  lt_release(idx);
  lt_lua_pushtensor(L, r);
  return 1;
}

static int s_masked_select(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *mask = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 2, "masked_select");
  lt_lua_pushtensor(L, lt_masked_select(x, mask));
  return 1;
}

static int masked_fill(lua_State *L, bool inplace) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1), *mask = lt_lua_checktensor(L, 2);
  lt_operand_t v = lt_lua_checkoperand(L, 3);
  lt_lua_checknargs(L, 3, "masked_fill");
  lt_tensor_t *r = lt_masked_fill(x, mask, v, inplace ? x : NULL);
  lt_lua_pushresult(L, r, inplace);
  return 1;
}
static int s_masked_fill(lua_State *L) { return masked_fill(L, false); }
static int s_masked_fill_(lua_State *L) { return masked_fill(L, true); }

static int s_gather(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "gather");
  lt_lua_checknargs(L, 3, "gather");
  lt_tensor_t *idx = zero_based(L, 3, "gather", false);
  lt_tensor_t *r = lt_gather(x, dim, idx);
  lt_release(idx);
  lt_lua_pushtensor(L, r);
  return 1;
}

static int scatter(lua_State *L, bool inplace, bool add) {
  const char *op = add ? "scatter_add" : "scatter";
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, op);
  lt_operand_t src = lt_lua_checkoperand(L, 4);
  lt_lua_checknargs(L, 4, op);
  if (add && src.kind != LT_OPERAND_TENSOR) return luaL_error(L, "scatter_add: src must be a tensor");
  lt_tensor_t *idx = zero_based(L, 3, op, false);
  lt_tensor_t *r = add ? lt_scatter_add(x, dim, idx, src.t, inplace ? x : NULL)
                       : lt_scatter(x, dim, idx, src, inplace ? x : NULL);
  lt_release(idx);
  lt_lua_pushresult(L, r, inplace);
  return 1;
}
static int s_scatter(lua_State *L) { return scatter(L, false, false); }
static int s_scatter_(lua_State *L) { return scatter(L, true, false); }
static int s_scatter_add(lua_State *L) { return scatter(L, false, true); }
static int s_scatter_add_(lua_State *L) { return scatter(L, true, true); }

static int s_index_add_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "index_add_");
  lt_tensor_t *src = lt_lua_checktensor(L, 4);
  double alpha = 1;
  if (lua_istable(L, 5)) {
    lua_getfield(L, 5, "alpha");
    if (!lua_isnil(L, -1)) alpha = luaL_checknumber(L, -1);
    lua_pop(L, 1);
  }
  lt_lua_checknargs(L, 5, "index_add_");
  lt_tensor_t *idx = zero_based(L, 3, "index_add_", true);
  int rc = lt_index_add_(x, dim, idx, src, alpha);
  lt_release(idx);
  lt_lua_check(L, rc);
  lua_pushvalue(L, 1);
  return 1;
}

static int s_index_fill_(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  int64_t dim = lt_lua_checkdim(L, 2, "index_fill_");
  lt_operand_t v = lt_lua_checkoperand(L, 4);
  lt_lua_checknargs(L, 4, "index_fill_");
  lt_tensor_t *idx = zero_based(L, 3, "index_fill_", true);
  int rc = lt_index_fill_(x, dim, idx, v);
  lt_release(idx);
  lt_lua_check(L, rc);
  lua_pushvalue(L, 1);
  return 1;
}

static int s_nonzero(lua_State *L) {
  lt_tensor_t *x = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "nonzero");
  lt_lua_pushtensor(L, lt_lua_one_based(lt_nonzero(x)));
  return 1;
}

void lt_open_shape(lua_State *L, int torch, int mtab) {
  static const luaL_Reg both[] = {
      {"reshape", s_reshape}, {"permute", s_permute}, {"transpose", s_transpose}, {"t", s_t},
      {"squeeze", s_squeeze}, {"unsqueeze", s_unsqueeze}, {"flatten", s_flatten},
      {"narrow", s_narrow}, {"select", s_select}, {"split", s_split}, {"chunk", s_chunk},
      {"unbind", s_unbind}, {"index_select", s_index_select}, {"masked_select", s_masked_select},
      {"masked_fill", s_masked_fill}, {"gather", s_gather}, {"scatter", s_scatter},
      {"scatter_add", s_scatter_add}, {"nonzero", s_nonzero}, {NULL, NULL}};
  static const luaL_Reg methods_only[] = {
      {"view", s_view}, {"view_as", s_view_as}, {"reshape_as", s_reshape_as},
      {"expand", s_expand}, {"expand_as", s_expand_as}, {"masked_fill_", s_masked_fill_},
      {"scatter_", s_scatter_}, {"scatter_add_", s_scatter_add_}, {"index_add_", s_index_add_},
      {"index_fill_", s_index_fill_}, {"_as_strided", s_as_strided},
      {"_resize_", s_resize_}, {"_set_view_", s_set_view_}, {NULL, NULL}};
  static const luaL_Reg torch_only[] = {{"cat", s_cat}, {"concat", s_cat}, {"stack", s_stack}, {NULL, NULL}};
  lt_lua_register(L, torch, mtab, both, true, true);
  lt_lua_register(L, torch, mtab, methods_only, false, true);
  lt_lua_register(L, torch, mtab, torch_only, true, false);
}
