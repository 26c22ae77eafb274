/* torch.Generator: PyTorch's CPU random generator as a Lua object (manual_seed, initial_seed, seed,
   get_state, set_state, device), torch.default_generator (the global one), the `generator` option
   of the random functions (lt_lua_checkgenerator) and torch._data_generator(seed), the old private
   name of torch.Generator():manual_seed(seed). A generator also has randperm(n) (1-based) and
   randint(low, high, n), which torch.data's samplers draw from. */
#include "bindings/binding.h"
#include "core/factory.h"
#include "core/random.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define GEN_MT "torch.Generator"

typedef struct {
  lt_generator_t *g; /* NULL for torch.default_generator: the calling thread's default generator */
} gen_box_t;

static lt_generator_t *box_gen(const gen_box_t *b) { return b->g ? b->g : lt_default_generator(); }

lt_generator_t *lt_lua_checkgenerator(lua_State *L, int idx, const char *op) {
  if (lua_isnoneornil(L, idx)) return NULL;
  gen_box_t *b = luaL_testudata(L, idx, GEN_MT);
  if (!b) {
    luaL_error(L, "%s: generator should be a torch.Generator, got %s", op, luaL_typename(L, idx));
    return NULL;
  }
  return box_gen(b);
}

lt_generator_t *lt_lua_optgenerator(lua_State *L, int idx, const char *op) {
  if (!lua_istable(L, idx) || lt_lua_totensor(L, idx)) return NULL;
  static const char *const keys[] = {"generator", NULL};
  lt_lua_checkoptkeys(L, idx, op, keys);
  lua_getfield(L, idx, "generator");
  lt_generator_t *g = lt_lua_checkgenerator(L, lua_gettop(L), op);
  lua_pop(L, 1);
  return g;
}

static lt_generator_t *check_gen(lua_State *L) { return box_gen(luaL_checkudata(L, 1, GEN_MT)); }

static void push_new_gen(lua_State *L, uint64_t seed) {
  gen_box_t *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->g = NULL;
  luaL_setmetatable(L, GEN_MT);
  b->g = lt_generator_new(seed);
  if (!b->g) lt_lua_error(L);
}

/* torch.Generator(), torch.Generator('cpu'), torch.Generator({device = 'cpu'}) */
static int l_generator(lua_State *L) {
  lt_lua_checknargs(L, 1, "Generator");
  int idx = 1;
  if (lua_istable(L, 1) && lt_lua_todtype(L, 1) == LT_DTYPE_INVALID && !luaL_testudata(L, 1, LT_DEVICE_MT)) {
    static const char *const keys[] = {"device", NULL};
    lt_lua_checkoptkeys(L, 1, "Generator", keys);
    lua_getfield(L, 1, "device");
    idx = lua_gettop(L);
  }
  if (lua_type(L, idx) == LUA_TSTRING && strncmp(lua_tostring(L, idx), "cpu", 3) != 0)
    return luaL_error(L, "Generator: only CPU generators are supported, got device '%s'", lua_tostring(L, idx));
  if (!lua_isnoneornil(L, idx)) {
    lt_device_t d = lt_lua_checkdevice(L, idx);
    if (d.type != LT_CPU) {
      char buf[32];
      return luaL_error(L, "Generator: only CPU generators are supported, got device '%s'",
                        lt_device_format(d, buf, sizeof buf));
    }
  }
  push_new_gen(L, LT_DEFAULT_SEED);
  return 1;
}

/* torch._data_generator(seed): torch.Generator():manual_seed(seed) */
static int l_data_generator(lua_State *L) {
  lua_Integer seed = luaL_checkinteger(L, 1);
  lt_lua_checknargs(L, 1, "_data_generator");
  push_new_gen(L, (uint64_t)seed);
  return 1;
}

/* torch._is_generator(v): whether v is a torch.Generator */
static int l_is_generator(lua_State *L) {
  lua_pushboolean(L, luaL_testudata(L, 1, GEN_MT) != NULL);
  return 1;
}

static int gen_gc(lua_State *L) {
  gen_box_t *b = luaL_checkudata(L, 1, GEN_MT);
  lt_generator_free(b->g); /* NULL (the default generator) is ignored */
  b->g = NULL;
  return 0;
}

static int gen_tostring(lua_State *L) {
  lua_pushfstring(L, "<torch._C.Generator object at %p>", lua_touserdata(L, 1));
  return 1;
}

static int gen_manual_seed(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  lt_generator_seed(g, (uint64_t)luaL_checkinteger(L, 2));
  lt_lua_checknargs(L, 2, "manual_seed");
  lua_settop(L, 1);
  return 1;
}

static int gen_initial_seed(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lt_generator_initial_seed(check_gen(L)));
  return 1;
}

/* g:seed(): a non-deterministic seed (63 bits, so a non-negative Lua integer), set and returned */
static int gen_seed(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&s, sizeof s, 1, f) != 1) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    s = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
  }
  if (f) fclose(f);
  s &= UINT64_MAX >> 1;
  lt_generator_seed(g, s);
  lua_pushinteger(L, (lua_Integer)s);
  return 1;
}

/* g:get_state(): a uint8 tensor, torch.get_rng_state's format */
static int gen_get_state(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  int64_t n = (int64_t)lt_generator_state_size();
  lt_tensor_t *t = lt_empty(1, &n, LT_UINT8, lt_device(LT_CPU, 0));
  if (t) lt_generator_get_state(g, lt_data(t));
  lt_lua_pushtensor(L, t);
  return 1;
}

void lt_lua_setgenstate(lua_State *L, lt_generator_t *g, int idx, const char *op) {
  lt_tensor_t *t = lt_lua_totensor(L, idx);
  if (!t) luaL_error(L, "%s: expected a uint8 tensor from get_state, got %s", op, luaL_typename(L, idx));
  if (t->dtype != LT_UINT8 || !lt_is_contiguous(t) || t->device.type != LT_CPU)
    luaL_error(L, "%s: expected a contiguous uint8 CPU tensor from get_state, got %s", op, lt_dtype_name(t->dtype));
  lt_lua_check(L, lt_generator_set_state(g, lt_data(t), (size_t)t->numel));
}

static int gen_set_state(lua_State *L) {
  lt_generator_t *g = check_gen(L);
  lt_lua_checknargs(L, 2, "set_state");
  lt_lua_setgenstate(L, g, 2, "set_state");
  lua_settop(L, 1);
  return 1;
}

/* g:randperm(n): a permutation of 1..n (int64), torch.randperm(n, {generator = g}) */
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

static int gen_index(lua_State *L) {
  luaL_checkudata(L, 1, GEN_MT);
  const char *k = lua_tostring(L, 2);
  if (k && strcmp(k, "device") == 0) {
    lt_lua_pushdevice(L, lt_device(LT_CPU, -1));
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

void lt_open_generator(lua_State *L, int torch) {
  static const luaL_Reg methods[] = {{"manual_seed", gen_manual_seed}, {"initial_seed", gen_initial_seed},
                                     {"seed", gen_seed},               {"get_state", gen_get_state},
                                     {"set_state", gen_set_state},     {"randperm", gen_randperm},
                                     {"randint", gen_randint},         {NULL, NULL}};
  luaL_newmetatable(L, GEN_MT);
  lua_pushcfunction(L, gen_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, gen_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "torch.Generator");
  lua_setfield(L, -2, "__name");
  luaL_newlib(L, methods);
  lua_pushcclosure(L, gen_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"Generator", l_generator}, {"_data_generator", l_data_generator},
                                 {"_is_generator", l_is_generator}, {NULL, NULL}};
  lua_pushvalue(L, torch);
  luaL_setfuncs(L, fns, 0);
  gen_box_t *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->g = NULL; /* the default generator, never freed */
  luaL_setmetatable(L, GEN_MT);
  lua_setfield(L, -2, "default_generator");
  lua_pop(L, 1);
}
