/* Matrix products, the LU factorisation and triangular solves torch.linalg's solvers are made of,
   and the decompositions LAPACK computes (core/lapack.h). */
#include "bindings/binding.h"
#include "core/linalg.h"
#include "core/lapack.h"
#include "core/lu.h"

typedef lt_tensor_t *(*pair_fn)(lt_tensor_t *, lt_tensor_t *);

static int pair(lua_State *L, pair_fn fn, const char *op) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1), *b = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 2, op);
  lt_lua_pushtensor(L, fn(a, b));
  return 1;
}
static int l_mm(lua_State *L) { return pair(L, lt_mm, "mm"); }
static int l_bmm(lua_State *L) { return pair(L, lt_bmm, "bmm"); }
static int l_matmul(lua_State *L) { return pair(L, lt_matmul, "matmul"); }
static int l_mv(lua_State *L) { return pair(L, lt_mv, "mv"); }
static int l_dot(lua_State *L) { return pair(L, lt_dot, "dot"); }

/* addmm(c, a, b, {beta = 1, alpha = 1}) */
static int l_addmm(lua_State *L) {
  lt_tensor_t *c = lt_lua_checktensor(L, 1), *a = lt_lua_checktensor(L, 2), *b = lt_lua_checktensor(L, 3);
  double beta = 1, alpha = 1;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "beta");
    if (!lua_isnil(L, -1)) beta = luaL_checknumber(L, -1);
    lua_getfield(L, 4, "alpha");
    if (!lua_isnil(L, -1)) alpha = luaL_checknumber(L, -1);
    lua_pop(L, 2);
  } else if (!lua_isnoneornil(L, 4)) {
    return luaL_typeerror(L, 4, "options table {beta, alpha}");
  }
  lt_lua_checknargs(L, 4, "addmm");
  lt_lua_pushtensor(L, lt_addmm(c, a, b, beta, alpha));
  return 1;
}

/* torch._lu_factor(a) -> lu, pivots (1-based), info (core/lu.h) */
static int l_lu_factor(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "_lu_factor");
  lt_tensor_t *lu, *piv, *info;
  if (lt_lu_factor(a, &lu, &piv, &info) != LT_OK) return luaL_error(L, "%s", lt_last_error());
  lt_lua_pushtensor(L, lu);
  lt_lua_pushtensor(L, piv);
  lt_lua_pushtensor(L, info);
  return 3;
}

/* torch._lu_solve(lu, pivots, b, trans) -> x = A^-1 b, or A^-T b when trans */
static int l_lu_solve(lua_State *L) {
  lt_tensor_t *lu = lt_lua_checktensor(L, 1), *piv = lt_lua_checktensor(L, 2), *b = lt_lua_checktensor(L, 3);
  bool trans = lua_toboolean(L, 4);
  lt_lua_checknargs(L, 4, "_lu_solve");
  lt_lua_pushtensor(L, lt_lu_solve(lu, piv, b, trans));
  return 1;
}

/* torch._lu_inverse(lu, pivots) -> A^-1 */
static int l_lu_inverse(lua_State *L) {
  lt_tensor_t *lu = lt_lua_checktensor(L, 1), *piv = lt_lua_checktensor(L, 2);
  lt_lua_checknargs(L, 2, "_lu_inverse");
  lt_lua_pushtensor(L, lt_lu_inverse(lu, piv));
  return 1;
}

/* torch._solve_triangular(a, b, upper, trans, unit) -> op(A)^-1 b */
static int l_solve_triangular(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1), *b = lt_lua_checktensor(L, 2);
  bool upper = lua_toboolean(L, 3), trans = lua_toboolean(L, 4), unit = lua_toboolean(L, 5);
  lt_lua_checknargs(L, 5, "_solve_triangular");
  lt_lua_pushtensor(L, lt_triangular_solve(a, b, upper, trans, unit));
  return 1;
}

/* pushes the tensors (nil for NULL), or raises the error */
static int push_all(lua_State *L, int rc, lt_tensor_t **ts, int n) {
  if (rc != LT_OK) return lt_lua_error(L);
  for (int i = 0; i < n; i++) {
    if (ts[i]) lt_lua_pushtensor(L, ts[i]);
    else lua_pushnil(L);
  }
  return n;
}

/* torch._lapack_available() -> whether the loaded BLAS has LAPACK's decompositions */
static int l_lapack_available(lua_State *L) {
  lua_pushboolean(L, lt_lapack_available());
  return 1;
}

/* torch._cholesky(a, upper) -> L, info */
static int l_cholesky(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  bool upper = lua_toboolean(L, 2);
  lt_lua_checknargs(L, 2, "_cholesky");
  lt_tensor_t *ts[2];
  int rc = lt_cholesky(a, upper, &ts[0], &ts[1]);
  return push_all(L, rc, ts, 2);
}

/* torch._qr(a, mode) -> Q, R */
static int l_qr(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  const char *mode = luaL_optstring(L, 2, "reduced");
  lt_lua_checknargs(L, 2, "_qr");
  lt_tensor_t *ts[2];
  int rc = lt_qr(a, mode, &ts[0], &ts[1]);
  return push_all(L, rc, ts, 2);
}

/* torch._eigh(a, upper, vectors) -> eigenvalues, eigenvectors (nil without vectors) */
static int l_eigh(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  bool upper = lua_toboolean(L, 2), vectors = lua_toboolean(L, 3);
  lt_lua_checknargs(L, 3, "_eigh");
  lt_tensor_t *ts[2];
  int rc = lt_eigh(a, upper, vectors, &ts[0], &ts[1]);
  return push_all(L, rc, ts, 2);
}

/* torch._svd(a, full, vectors) -> U, S, Vh (U and Vh nil without vectors) */
static int l_svd(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  bool full = lua_toboolean(L, 2), vectors = lua_toboolean(L, 3);
  lt_lua_checknargs(L, 3, "_svd");
  lt_tensor_t *ts[3];
  int rc = lt_svd(a, full, vectors, &ts[0], &ts[1], &ts[2]);
  return push_all(L, rc, ts, 3);
}

/* torch._geqrf(a) -> the factors as geqrf leaves them, tau */
static int l_geqrf(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "_geqrf");
  lt_tensor_t *ts[2];
  int rc = lt_geqrf(a, &ts[0], &ts[1]);
  return push_all(L, rc, ts, 2);
}

/* torch._ldl_factor(a) -> LD, pivots (int32), info (int32) */
static int l_ldl_factor(lua_State *L) {
  lt_tensor_t *a = lt_lua_checktensor(L, 1);
  lt_lua_checknargs(L, 1, "_ldl_factor");
  lt_tensor_t *ts[3];
  int rc = lt_ldl_factor(a, &ts[0], &ts[1], &ts[2]);
  return push_all(L, rc, ts, 3);
}

/* torch._ldl_solve(ld, pivots, b) -> A^-1 b */
static int l_ldl_solve(lua_State *L) {
  lt_tensor_t *ld = lt_lua_checktensor(L, 1), *piv = lt_lua_checktensor(L, 2), *b = lt_lua_checktensor(L, 3);
  lt_lua_checknargs(L, 3, "_ldl_solve");
  lt_lua_pushtensor(L, lt_ldl_solve(ld, piv, b));
  return 1;
}

void lt_open_linalg(lua_State *L, int torch, int mtab) {
  static const luaL_Reg fns[] = {{"mm", l_mm}, {"bmm", l_bmm}, {"matmul", l_matmul}, {"mv", l_mv},
                                 {"dot", l_dot}, {"addmm", l_addmm}, {NULL, NULL}};
  lt_lua_register(L, torch, mtab, fns, true, true);
  static const luaL_Reg lu_fns[] = {{"_lu_factor", l_lu_factor}, {"_lu_solve", l_lu_solve},
                                    {"_lu_inverse", l_lu_inverse}, {"_solve_triangular", l_solve_triangular},
                                    {"_cholesky", l_cholesky},
                                    {"_qr", l_qr}, {"_eigh", l_eigh}, {"_svd", l_svd},
                                    {"_ldl_factor", l_ldl_factor}, {"_ldl_solve", l_ldl_solve}, {"_geqrf", l_geqrf},
                                    {"_lapack_available", l_lapack_available}, {NULL, NULL}};
  lt_lua_register(L, torch, mtab, lu_fns, true, false);
}
