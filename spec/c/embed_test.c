/* C unit tests of the embedding API (bindings/lutorch.h), through that header only: tensors of every
   dtype pushed from C (copied and wrapped, contiguous and strided) and read back, release callbacks,
   errors with tracebacks and an unchanged stack, lutorch_pcall, and two states training two models
   on two threads at once with the same results as each alone. Prints one line per failed check and
   ends with `N passed, N failed`.

   `embed_test threads` runs only the two-states test (the ThreadSanitizer build in .ci/run). */
#include "bindings/lutorch.h"

#include <lauxlib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (cond) passed++;                           \
    else {                                        \
      failed++;                                   \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

/* ---- element values: small integers k, exactly representable in every dtype ---- */

/* IEEE half of a small non-negative integer (exact for k < 2048) */
static uint16_t half_of_int(unsigned k) {
  if (k == 0) return 0;
  int e = 31 - __builtin_clz(k);
  return (uint16_t)(((unsigned)(e + 15) << 10) | ((k << (10 - e)) & 0x3ffu));
}

static uint16_t bf16_of_int(unsigned k) {
  float f = (float)k;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* exact: small integers have zero low bits */
}

static void put(lutorch_dtype dt, void *buf, int64_t i, unsigned k) {
  switch (dt) {
    case LUTORCH_FLOAT32: ((float *)buf)[i] = (float)k; break;
    case LUTORCH_FLOAT64: ((double *)buf)[i] = (double)k; break;
    case LUTORCH_FLOAT16: ((uint16_t *)buf)[i] = half_of_int(k); break;
    case LUTORCH_BFLOAT16: ((uint16_t *)buf)[i] = bf16_of_int(k); break;
    case LUTORCH_INT64: ((int64_t *)buf)[i] = (int64_t)k; break;
    case LUTORCH_INT32: ((int32_t *)buf)[i] = (int32_t)k; break;
    case LUTORCH_INT16: ((int16_t *)buf)[i] = (int16_t)k; break;
    case LUTORCH_INT8: ((int8_t *)buf)[i] = (int8_t)k; break;
    case LUTORCH_UINT8: ((uint8_t *)buf)[i] = (uint8_t)k; break;
    case LUTORCH_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(k != 0); break;
    default: break;
  }
}

static unsigned value_of(lutorch_dtype dt, unsigned k) { return dt == LUTORCH_BOOL ? (k != 0) : k; }

/* runs code, which must succeed */
static void run(lua_State *L, const char *code) {
  int st = lutorch_dostring(L, code, NULL);
  CHECK(st == LUTORCH_OK, "%s: %s", code, lutorch_errmsg(L));
}

static double global_number(lua_State *L, const char *name) {
  lua_getglobal(L, name);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* ---- every dtype: copy in, transpose in Lua, read back ---- */
static void test_dtypes(lua_State *L) {
  for (int d = 0; d < LUTORCH_NDTYPES; d++) {
    lutorch_dtype dt = (lutorch_dtype)d;
    const char *name = lutorch_dtype_name(dt);
    size_t es = lutorch_dtype_size(dt);
    unsigned char buf[6 * 8], back[6 * 8];
    int64_t sizes[2] = {2, 3};
    unsigned vals[6] = {0, 1, 2, 3, 5, 7};
    for (int i = 0; i < 6; i++) put(dt, buf, i, vals[i]);
    int top = lua_gettop(L);
    int st = lutorch_push_tensor(L, buf, 2, sizes, dt, lutorch_cpu(0));
    CHECK(st == LUTORCH_OK && lua_gettop(L) == top + 1, "%s: push: %s", name, lutorch_errmsg(L));
    if (st != LUTORCH_OK) continue;
    lua_setglobal(L, "x");
    /* Lua's view of the values: its own sum, dtype name and shape */
    run(L, "y = x:t(); s = x:double():sum():item(); dt = tostring(x.dtype); n1, n2 = x:size(1), x:size(2)");
    unsigned want = 0;
    for (int i = 0; i < 6; i++) want += value_of(dt, vals[i]);
    CHECK(global_number(L, "s") == (double)want, "%s: Lua's sum %g, want %u", name, global_number(L, "s"), want);
    lua_getglobal(L, "dt");
    CHECK(lua_tostring(L, -1) && strstr(lua_tostring(L, -1), name), "%s: Lua dtype %s", name, lua_tostring(L, -1));
    lua_pop(L, 1);
    CHECK(global_number(L, "n1") == 2 && global_number(L, "n2") == 3, "%s: Lua shape", name);
    /* y = x:t() is not contiguous: read back as a contiguous 3x2 copy */
    lutorch_tensor y;
    st = lutorch_get_global_tensor(L, "y", &y);
    CHECK(st == LUTORCH_OK, "%s: get y: %s", name, lutorch_errmsg(L));
    if (st != LUTORCH_OK) continue;
    CHECK(y.ndim == 2 && y.sizes[0] == 3 && y.sizes[1] == 2 && y.numel == 6 && y.nbytes == 6 * es,
          "%s: y's geometry %d [%lld, %lld]", name, y.ndim, (long long)y.sizes[0], (long long)y.sizes[1]);
    CHECK(y.dtype == dt && y.device.type == LUTORCH_CPU && y.device.index == 0, "%s: y's dtype/device", name);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++) put(dt, back, i * 2 + j, vals[j * 3 + i]);
    CHECK(memcmp(y.data, back, 6 * es) == 0, "%s: y's elements are not x transposed", name);
    lutorch_tensor_release(&y);
    CHECK(y.handle == NULL && y.data == NULL, "%s: release clears", name);
    lutorch_tensor_release(&y); /* twice is harmless */
    /* from the stack, by negative index: x is contiguous, so data is its own memory */
    lua_getglobal(L, "x");
    lutorch_tensor x;
    st = lutorch_get_tensor(L, -1, &x);
    CHECK(st == LUTORCH_OK && memcmp(x.data, buf, 6 * es) == 0, "%s: get x from the stack", name);
    CHECK(lua_gettop(L) == top + 1, "%s: get leaves the stack", name);
    lua_pop(L, 1);
    lutorch_tensor_release(&x);
  }
  /* a 0-dim tensor and an empty one */
  double v = 2.5;
  CHECK(lutorch_push_tensor(L, &v, 0, NULL, LUTORCH_FLOAT64, lutorch_cpu(0)) == LUTORCH_OK, "0-dim push");
  lua_setglobal(L, "z");
  run(L, "zz = z:item() * 2; e = torch.zeros(0, 3)");
  CHECK(global_number(L, "zz") == 5.0, "0-dim value %g", global_number(L, "zz"));
  int64_t es[2] = {0, 4};
  CHECK(lutorch_push_tensor(L, NULL, 2, es, LUTORCH_INT32, lutorch_cpu(0)) == LUTORCH_OK, "empty push: %s", lutorch_errmsg(L));
  lua_setglobal(L, "e2");
  run(L, "en = e2:numel(); es = e2:size(2)");
  CHECK(global_number(L, "en") == 0 && global_number(L, "es") == 4, "empty tensor's shape");
  lutorch_tensor e;
  CHECK(lutorch_get_global_tensor(L, "e", &e) == LUTORCH_OK && e.numel == 0 && e.ndim == 2 && e.sizes[1] == 3,
        "empty read back");
  lutorch_tensor_release(&e);
}

/* ---- wrapping caller memory ---- */
static int released;
static void *released_ctx, *released_data;
static void on_release(void *ctx, void *data) {
  released++;
  released_ctx = ctx;
  released_data = data;
}

static void test_wrap(void) {
  lua_State *L = lutorch_newstate();
  CHECK(L != NULL, "newstate: %s", lutorch_errmsg(NULL));
  if (!L) return;
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t sizes[2] = {2, 3};
  int ctx = 42;
  released = 0;
  CHECK(lutorch_push_tensor_wrap(L, buf, 2, sizes, NULL, LUTORCH_FLOAT32, lutorch_cpu(0), on_release, &ctx) == LUTORCH_OK,
        "wrap: %s", lutorch_errmsg(L));
  lua_setglobal(L, "w");
  run(L, "w:mul_(10); v = w:t()");  /* writes through to buf; v keeps the memory too */
  for (int i = 0; i < 6; i++) CHECK(buf[i] == 10.0f * (float)(i + 1), "wrap: buf[%d] = %g after w:mul_(10)", i, buf[i]);
  run(L, "w = nil; collectgarbage(); collectgarbage()");
  CHECK(released == 0, "wrap: released while the view v still uses it");
  run(L, "s = v:sum():item()");
  CHECK(global_number(L, "s") == 210.0, "wrap: sum through the view %g", global_number(L, "s"));
  /* strided: a 3x2 view of the 2x3 buffer as its transpose (strides 1, 3) */
  float sbuf[6] = {1, 2, 3, 4, 5, 6};
  int64_t tsz[2] = {3, 2}, tst[2] = {1, 3};
  CHECK(lutorch_push_tensor_wrap(L, sbuf, 2, tsz, tst, LUTORCH_FLOAT32, lutorch_cpu(0), NULL, NULL) == LUTORCH_OK,
        "strided wrap: %s", lutorch_errmsg(L));
  lua_setglobal(L, "t");
  run(L, "a = t[1][2]; b = t[3][1]; c = t:is_contiguous()");
  CHECK(global_number(L, "a") == 4.0 && global_number(L, "b") == 3.0, "strided wrap: t[1][2] %g t[3][1] %g",
        global_number(L, "a"), global_number(L, "b"));
  lua_getglobal(L, "c");
  CHECK(!lua_toboolean(L, -1), "strided wrap: is_contiguous");
  lua_pop(L, 1);
  /* a read-back copy outlives the state */
  lutorch_tensor keep;
  CHECK(lutorch_get_global_tensor(L, "v", &keep) == LUTORCH_OK, "get v");
  lutorch_close(L);
  CHECK(released == 1 && released_ctx == &ctx && released_data == buf, "wrap: release ran %d times at close", released);
  CHECK(keep.data && ((float *)keep.data)[1] == 40.0f, "read-back copy after close");
  lutorch_tensor_release(&keep);
  lutorch_close(NULL);
  /* cpu:1, where LUTORCH_CPU_DEVICES gives the process a second virtual CPU device */
  L = lutorch_newstate();
  if (!L) return;
  float one[2] = {3, 4};
  int64_t two[1] = {2};
  if (lutorch_push_tensor(L, one, 1, two, LUTORCH_FLOAT32, lutorch_cpu(1)) == LUTORCH_OK) {
    lutorch_tensor t1;
    CHECK(lutorch_get_tensor(L, -1, &t1) == LUTORCH_OK && t1.device.type == LUTORCH_CPU && t1.device.index == 1 &&
              ((float *)t1.data)[1] == 4.0f, "a tensor on cpu:1");
    lutorch_tensor_release(&t1);
  } else {
    CHECK(strstr(lutorch_errmsg(L), "cpu:1") != NULL, "no cpu:1, but: %s", lutorch_errmsg(L));
  }
  lutorch_close(L);
}

/* ---- errors ---- */
static void test_errors(lua_State *L) {
  int top = lua_gettop(L);
  int st = lutorch_dostring(L, "local function f() error('boom here') end\nf()", "=chunk");
  CHECK(st == LUA_ERRRUN, "runtime error status %d", st);
  const char *m = lutorch_errmsg(L);
  CHECK(strstr(m, "chunk:1: boom here") && strstr(m, "stack traceback:") && strstr(m, "in local 'f'"),
        "runtime error message with a traceback: %s", m);
  CHECK(lua_gettop(L) == top, "stack after a runtime error");
  st = lutorch_dostring(L, "x = = 1", "=chunk");
  CHECK(st == LUA_ERRSYNTAX && strstr(lutorch_errmsg(L), "chunk:1:"), "syntax error: %d %s", st, lutorch_errmsg(L));
  st = lutorch_dofile(L, "/nonexistent/dir/script.lua");
  CHECK(st == LUA_ERRFILE && strstr(lutorch_errmsg(L), "/nonexistent/dir/script.lua"), "missing file: %s", lutorch_errmsg(L));
  st = lutorch_dostring(L, "torch.zeros(2, 3):matmul(torch.zeros(2, 3))", NULL);
  CHECK(st == LUA_ERRRUN && strstr(lutorch_errmsg(L), "matmul") && strstr(lutorch_errmsg(L), "traceback"),
        "a torch error names the op: %s", lutorch_errmsg(L));
  run(L, "ok = 1");
  CHECK(lutorch_errmsg(L)[0] == '\0', "errmsg cleared by a success");
  CHECK(lutorch_dostring(L, NULL, NULL) == LUA_ERRRUN, "NULL code");

  float f = 1;
  int64_t sz[1] = {1}, neg[1] = {-2};
  st = lutorch_push_tensor(L, &f, 1, sz, (lutorch_dtype)99, lutorch_cpu(0));
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "lutorch_push_tensor: invalid dtype 99"), "bad dtype: %s", lutorch_errmsg(L));
  st = lutorch_push_tensor(L, &f, 1, neg, LUTORCH_FLOAT32, lutorch_cpu(0));
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "negative"), "negative size: %s", lutorch_errmsg(L));
  st = lutorch_push_tensor(L, &f, 17, sz, LUTORCH_FLOAT32, lutorch_cpu(0));
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "ndim"), "too many dims: %s", lutorch_errmsg(L));
  st = lutorch_push_tensor(L, NULL, 1, sz, LUTORCH_FLOAT32, lutorch_cpu(0));
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "data is NULL"), "NULL data: %s", lutorch_errmsg(L));
  st = lutorch_push_tensor(L, &f, 1, sz, LUTORCH_FLOAT32, lutorch_cpu(63));
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "cpu:63"), "missing device: %s", lutorch_errmsg(L));
  int cuda = lutorch_push_tensor(L, &f, 1, sz, LUTORCH_FLOAT32, lutorch_cuda(0));
  if (cuda != LUTORCH_OK) CHECK(strstr(lutorch_errmsg(L), "cuda") != NULL, "no CUDA: %s", lutorch_errmsg(L));
  else lua_pop(L, 1);
  released = 0;
  st = lutorch_push_tensor_wrap(L, &f, 1, neg, NULL, LUTORCH_FLOAT32, lutorch_cpu(0), on_release, NULL);
  CHECK(st != LUTORCH_OK && released == 0, "failed wrap does not release");
  CHECK(lua_gettop(L) == top, "stack after failed pushes");

  lutorch_tensor t;
  run(L, "notatensor = {1, 2}");
  st = lutorch_get_global_tensor(L, "notatensor", &t);
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "global 'notatensor' is not a tensor (a table)") && t.data == NULL,
        "get a non-tensor: %s", lutorch_errmsg(L));
  st = lutorch_get_global_tensor(L, "undefined_name", &t);
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "(a nil)"), "get an undefined global: %s", lutorch_errmsg(L));
  st = lutorch_get_tensor(L, 5, &t);
  CHECK(st != LUTORCH_OK && strstr(lutorch_errmsg(L), "out of range"), "bad index: %s", lutorch_errmsg(L));
  CHECK(lua_gettop(L) == top, "stack after failed gets");

  /* lutorch_pcall: results, and an error with a traceback */
  run(L, "function addmul(a, b) return a + b, a * b end");
  lua_getglobal(L, "addmul");
  lua_pushinteger(L, 3);
  lua_pushinteger(L, 4);
  st = lutorch_pcall(L, 2, 2);
  CHECK(st == LUTORCH_OK && lua_tointeger(L, -2) == 7 && lua_tointeger(L, -1) == 12, "pcall results");
  lua_settop(L, top);
  lua_getglobal(L, "addmul");
  lua_pushinteger(L, 3);
  lua_pushnil(L);
  st = lutorch_pcall(L, 2, 2);
  CHECK(st == LUA_ERRRUN && strstr(lutorch_errmsg(L), "arithmetic") && strstr(lutorch_errmsg(L), "addmul"),
        "pcall error: %s", lutorch_errmsg(L));
  CHECK(lua_gettop(L) == top, "stack after a failed pcall");
}

/* ---- CUDA devices, where the build and the machine have one (skipped otherwise) ---- */
static void test_cuda(lua_State *L) {
  float v[6] = {1, -2, 3, -4, 5, -6};
  int64_t sizes[2] = {2, 3};
  if (lutorch_push_tensor(L, v, 2, sizes, LUTORCH_FLOAT32, lutorch_cuda(0)) != LUTORCH_OK) {
    CHECK(strstr(lutorch_errmsg(L), "cuda") != NULL, "no CUDA device, but: %s", lutorch_errmsg(L));
    printf("skipped: CUDA tensors (%s)\n", lutorch_errmsg(L));
    return;
  }
  lua_setglobal(L, "g");
  run(L, "gc = g:abs():cpu(); gdev = tostring(g.device)");
  lua_getglobal(L, "gdev");
  CHECK(lua_tostring(L, -1) && strcmp(lua_tostring(L, -1), "cuda:0") == 0, "device %s", lua_tostring(L, -1));
  lua_pop(L, 1);
  lutorch_tensor c, g;
  CHECK(lutorch_get_global_tensor(L, "gc", &c) == LUTORCH_OK, "get gc");
  for (int i = 0; i < 6; i++) CHECK(((float *)c.data)[i] == (v[i] < 0 ? -v[i] : v[i]), "cuda copy: element %d", i);
  lutorch_tensor_release(&c);
  /* g read back: its data is device memory, which wrapping takes as it is */
  CHECK(lutorch_get_global_tensor(L, "g", &g) == LUTORCH_OK && g.device.type == LUTORCH_CUDA, "get g on cuda");
  CHECK(lutorch_push_tensor_wrap(L, g.data, 2, sizes, NULL, LUTORCH_FLOAT32, lutorch_cuda(0), NULL, NULL) == LUTORCH_OK,
        "wrap device memory: %s", lutorch_errmsg(L));
  lua_setglobal(L, "gw");
  run(L, "gs = gw:sum():item(); gw = nil; collectgarbage()");
  CHECK(global_number(L, "gs") == -3.0, "sum over wrapped device memory: %g", global_number(L, "gs"));
  lutorch_tensor_release(&g);
}

/* ---- two states on two threads ---- */
static const char *TRAIN =
    "local nn, F = torch.nn, torch.nn.functional\n"
    "torch.manual_seed(seed)\n"
    "local model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))\n"
    "local X = torch.randn(128, 6)\n"
    "local Y = X:sum(2, true):sin()\n"
    "initial_loss = F.mse_loss(model(X), Y):item()\n"
    "local opt = torch.optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9})\n"
    "for i = 1, steps do\n"
    "  opt:zero_grad()\n"
    "  local idx = torch.randperm(128):narrow(1, 1, 32)\n" /* random draws inside the loop too */
    "  local loss = F.mse_loss(model(X:index_select(1, idx)), Y:index_select(1, idx))\n"
    "  loss:backward()\n"
    "  opt:step()\n"
    "end\n"
    "final_loss = F.mse_loss(model(X), Y):item()\n"
    "w = model[1].weight:detach()\n";

typedef struct {
  int seed, steps;
  double loss, initial;
  float w[96];
  int ok;
  char err[512];
} train_t;

static void *train(void *arg) {
  train_t *t = arg;
  t->ok = 0;
  lua_State *L = lutorch_newstate();
  if (!L) {
    snprintf(t->err, sizeof t->err, "%s", lutorch_errmsg(NULL));
    return NULL;
  }
  lua_pushinteger(L, t->seed);
  lua_setglobal(L, "seed");
  lua_pushinteger(L, t->steps);
  lua_setglobal(L, "steps");
  lutorch_tensor w;
  if (lutorch_dostring(L, TRAIN, "=train") != LUTORCH_OK || lutorch_get_global_tensor(L, "w", &w) != LUTORCH_OK) {
    snprintf(t->err, sizeof t->err, "%s", lutorch_errmsg(L));
  } else {
    lua_getglobal(L, "final_loss");
    t->loss = lua_tonumber(L, -1);
    lua_getglobal(L, "initial_loss");
    t->initial = lua_tonumber(L, -1);
    if (w.numel == 96 && w.dtype == LUTORCH_FLOAT32) {
      memcpy(t->w, w.data, sizeof t->w);
      t->ok = 1;
    } else {
      snprintf(t->err, sizeof t->err, "w has %lld elements", (long long)w.numel);
    }
    lutorch_tensor_release(&w);
  }
  lutorch_close(L);
  return NULL;
}

static void test_threads(int steps) {
  train_t alone[2] = {{.seed = 1, .steps = steps}, {.seed = 2, .steps = steps}};
  train_t both[2] = {{.seed = 1, .steps = steps}, {.seed = 2, .steps = steps}};
  train(&alone[0]);
  train(&alone[1]);
  CHECK(alone[0].ok && alone[1].ok, "alone: %s %s", alone[0].err, alone[1].err);
  pthread_t th[2];
  int made[2];
  for (int i = 0; i < 2; i++) made[i] = pthread_create(&th[i], NULL, train, &both[i]) == 0;
  for (int i = 0; i < 2; i++)
    if (made[i]) pthread_join(th[i], NULL);
  CHECK(made[0] && made[1], "pthread_create");
  for (int i = 0; i < 2; i++) {
    CHECK(both[i].ok, "thread %d: %s", i, both[i].err);
    CHECK(both[i].loss == alone[i].loss, "seed %d: loss %.9g on a thread beside another, %.9g alone", both[i].seed,
          both[i].loss, alone[i].loss);
    CHECK(memcmp(both[i].w, alone[i].w, sizeof both[i].w) == 0, "seed %d: weights differ from alone", both[i].seed);
  }
  /* the training did something, and the two seeds gave two models */
  for (int i = 0; i < 2; i++)
    CHECK(alone[i].loss > 0 && alone[i].loss < 0.7 * alone[i].initial, "seed %d: loss %g from %g", alone[i].seed,
          alone[i].loss, alone[i].initial);
  CHECK(memcmp(alone[0].w, alone[1].w, sizeof alone[0].w) != 0, "the two seeds gave the same weights");
}

/* the generator is the state's: another state's manual_seed does not move it */
static void test_own_generator(void) {
  lua_State *a = lutorch_newstate(), *b = lutorch_newstate();
  CHECK(a && b, "two states");
  if (!a || !b) return;
  run(a, "torch.manual_seed(5); r1 = torch.rand(1):item()");
  run(b, "torch.manual_seed(99); torch.rand(10)");
  run(a, "r2 = torch.rand(1):item(); torch.manual_seed(5); torch.rand(1); r2ref = torch.rand(1):item()");
  CHECK(global_number(a, "r2") == global_number(a, "r2ref"), "state a's sequence was disturbed by b");
  lutorch_close(a);
  lutorch_close(b);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "threads") == 0) {
    test_threads(argc > 2 ? atoi(argv[2]) : 20);
  } else {
    lua_State *L = lutorch_newstate();
    CHECK(L != NULL, "newstate: %s", lutorch_errmsg(NULL));
    if (L) {
      run(L, "assert(torch == require 'torch' and torch.nn and string and io and os)");
      test_dtypes(L);
      test_errors(L);
      test_cuda(L);
      lutorch_close(L);
    }
    test_wrap();
    test_own_generator();
    test_threads(60);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
