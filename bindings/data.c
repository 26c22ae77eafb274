/* The C side of torch.data: torch._read_idx(path) (IDX files, see core/idx.h) and
   torch._data_generator(seed), a private random generator for reproducible shuffling with the
   loader's `seed` option, so that shuffling with a seed leaves torch's global generator alone. */
#include "bindings/binding.h"
#include "core/factory.h"
#include "core/idx.h"
#include "core/random.h"

#define GEN_MT "torch.data.Generator"

typedef struct {
  lt_generator_t *g;
} gen_box_t;

static int l_read_idx(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lt_lua_checknargs(L, 1, "_read_idx");
  lt_lua_pushtensor(L, lt_idx_read(path));
  return 1;
}

static lt_generator_t *check_gen(lua_State *L) {
  gen_box_t *b = luaL_checkudata(L, 1, GEN_MT);
  if (!b->g) luaL_error(L, "data generator: already freed");
  return b->g;
}

/* torch._data_generator(seed): a generator of its own, seeded as torch.Generator():manual_seed(seed) */
static int l_generator(lua_State *L) {
  lua_Integer seed = luaL_checkinteger(L, 1);
  lt_lua_checknargs(L, 1, "_data_generator");
  gen_box_t *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->g = NULL;
  luaL_setmetatable(L, GEN_MT);
  b->g = lt_generator_new((uint64_t)seed);
  if (!b->g) return lt_lua_error(L);
  return 1;
}

static int gen_gc(lua_State *L) {
  gen_box_t *b = luaL_checkudata(L, 1, GEN_MT);
  lt_generator_free(b->g);
  b->g = NULL;
  return 0;
}

/* g:randperm(n): a permutation of 1..n (int64), drawn as torch.randperm(n, generator = g) + 1 */
static int gen_randperm(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (n < 0) return luaL_error(L, "randperm: expected a non-negative number of elements, got %d", (int)n);
  lt_tensor_t *t = lt_randperm(n, LT_INT64, lt_device(LT_CPU, 0), g);
  if (t) {
    int64_t *p = lt_data(t);
    for (int64_t i = 0; i < t->numel; i++) p[i] += 1;
  }
  lt_lua_pushtensor(L, t);
  return 1;
}

/* g:randint(low, high, n): n int64 values uniform in [low, high) */
static int gen_randint(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  lua_Integer low = luaL_checkinteger(L, 2), high = luaL_checkinteger(L, 3), n = luaL_checkinteger(L, 4);
  if (n < 0) return luaL_error(L, "randint: expected a non-negative count, got %d", (int)n);
  int64_t sizes[1] = {n};
  lt_tensor_t *t = lt_empty(1, sizes, LT_INT64, lt_device(LT_CPU, 0));
  if (t && lt_random_int(g, LT_INT64, lt_data(t), n, low, high) != LT_OK) {
    lt_release(t);
    t = NULL;
  }
  lt_lua_pushtensor(L, t);
  return 1;
}

static int gen_manual_seed(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  lt_generator_seed(g, (uint64_t)luaL_checkinteger(L, 2));
  lua_settop(L, 1);
  return 1;
}

static int gen_initial_seed(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lt_generator_initial_seed(check_gen(L)));
  return 1;
}

void lt_open_data(lua_State *L, int torch) {
  static const luaL_Reg methods[] = {{"randperm", gen_randperm},       {"randint", gen_randint},
                                     {"manual_seed", gen_manual_seed}, {"initial_seed", gen_initial_seed},
                                     {NULL, NULL}};
  luaL_newmetatable(L, GEN_MT);
  lua_pushcfunction(L, gen_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"_read_idx", l_read_idx}, {"_data_generator", l_generator}, {NULL, NULL}};
  lua_pushvalue(L, torch);
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
