/* Lua states on threads of their own (private; nn.DataParallel runs each replica in one): a pthread
   owning a lutorch Lua state, which runs one function at a time. The function and its arguments
   are copied into that state, and its results back, by bindings/lua_transfer.c (tensors by
   reference, autograd state kept, so a graph recorded in the thread is the caller's to backward).

   Lua side:
     torch._lua_thread{name = 'cpu:1', threads = n, device = d} -> th
                                       a new state (the caller's package.path and package.cpath)
                                       on a new thread; threads: the kernel threads its ops may use
                                       (0 or absent: the global setting); device (optional): the
                                       thread's current device of that type
     th:start(fn, args, opts)          copy fn and the array args (args.n when set, else #args) and
                                       start fn(table.unpack(args)) there; returns at once. fn's
                                       copy is cached, its upvalues copied again each start.
                                       opts.subst: a substitution table (subst[v] = w copies w for
                                       v); opts.grad_enabled: default the caller's grad mode
     th:wait() -> results...           wait for it; its results copied back, or its error raised
                                       as "<name>: <message>" with the thread's traceback
     th:busy() -> whether a start has not been waited for
     th:close()                        stop and join the thread (also __close, __gc, and at exit)
     th.name                           the name given
   A thread's state is only touched by one OS thread at a time: by its pthread while it runs a
   function, by the caller (copying) while it waits. */
#include "bindings/binding.h"
#include "bindings/lua_alloc.h"
#include "bindings/lua_transfer.h"
#include "bindings/lutorch.h"
#include "core/autograd.h"
#include "core/device.h"
#include "core/iter.h"

#include <lualib.h>
#include <omp.h>
#include <pthread.h>
#include <time.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREAD_MT "torch.LuaThread"
#define HOOK_COUNT 10000 /* instructions between checks of the stop flag */

typedef struct lthread {
  char name[64];
  int nthreads;
  bool has_device;
  lt_device_t device;
  lua_State *T; /* the thread's state; NULL once the pthread closed it */
  pthread_t tid;
  bool started, joined;
  bool nested; /* made by code running in another Lua thread, whose state's closing joins it */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* under mu */
  bool has_work, done;
  bool deferred; /* started with opts.defer: waits for torch._lua_threads_run or wait() */
  int waiters;   /* callers asleep in wait(): the only ones a finished call wakes */
  int nargs, status;
  bool grad_enabled;
  atomic_bool stop;
  /* the caller's side */
  bool busy; /* started and not yet waited for */
  lt_transfer_t *to, *back;
  struct lthread *next_live;
} lthread_t;

typedef struct {
  lthread_t *t;
  char name[64];
} thread_box_t;

/* The threads made by the process's main states, stopped and joined at exit (os.exit skips
   lua_close). Threads made inside a Lua thread are not listed: closing that thread's state, when
   it ends, joins them, and a thread being joined must never need live_mu. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static lthread_t *live_head;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;
static _Thread_local lthread_t *running_in; /* the Lua thread this OS thread is, if any */


/* a thread stops running Lua code soon after it is closed, even inside a long loop */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lthread_t *t = *(lthread_t **)lua_getextraspace(L);
  if (atomic_load_explicit(&t->stop, memory_order_relaxed)) luaL_error(L, "%s: stopped (the thread was closed)", t->name);
}

static void *thread_main(void *arg) {
  lthread_t *t = arg;
  running_in = t;
  if (t->nthreads > 0) lt_set_thread_num_threads(t->nthreads);
  if (t->has_device) lt_set_current_device(t->device); /* checked by the caller */
  for (;;) {
    pthread_mutex_lock(&t->mu);
    while (!t->has_work && !atomic_load(&t->stop)) pthread_cond_wait(&t->cv, &t->mu);
    bool go = t->has_work && !atomic_load(&t->stop);
    int nargs = t->nargs;
    bool grad = t->grad_enabled;
    pthread_mutex_unlock(&t->mu);
    if (!go) break;
    lt_set_grad_enabled(grad);
    int st = lua_pcall(t->T, nargs, LUA_MULTRET, 1);
    pthread_mutex_lock(&t->mu);
    t->status = st;
    t->has_work = false;
    __atomic_store_n(&t->done, true, __ATOMIC_RELEASE); /* read unlocked by a spinning wait */
    if (t->waiters) pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
  }
  /* the state is closed here, so that its tensors' headers return to this thread's caches */
  lua_close(t->T);
  t->T = NULL;
  lt_thread_exit();
  return NULL;
}

/* Runs t's deferred call on the calling OS thread (an OpenMP worker of torch._lua_threads_run),
   with t's kernel-thread limit, device and the caller's grad mode, as t's own pthread would;
   restores this thread's settings after. */
static void run_here(lthread_t *t) {
  lthread_t *prev_in = running_in;
  running_in = t;
  int prev_limit = lt_thread_num_threads();
  if (t->nthreads > 0) lt_set_thread_num_threads(t->nthreads);
  int prev_dev[LT_NDEVTYPES];
  for (int k = 0; k < LT_NDEVTYPES; k++) prev_dev[k] = lt_current_device((lt_devtype)k);
  if (t->has_device) lt_set_current_device(t->device);
  bool prev_grad = lt_set_grad_enabled(t->grad_enabled);
  int st = lua_pcall(t->T, t->nargs, LUA_MULTRET, 1);
  lt_set_grad_enabled(prev_grad);
  for (int k = 0; k < LT_NDEVTYPES; k++)
    if (prev_dev[k] != lt_current_device((lt_devtype)k))
      (void)lt_set_current_device(lt_device((lt_devtype)k, prev_dev[k]));
  lt_set_thread_num_threads(prev_limit);
  running_in = prev_in;
  pthread_mutex_lock(&t->mu);
  t->status = st;
  __atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
  /* waking the thread's own pthread for nothing costs a system call and, on a machine with as many
     cores as the team has threads, a core the team needs */
  if (t->waiters) pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* hands a deferred call to the thread's own pthread */
static void dispatch(lthread_t *t) {
  pthread_mutex_lock(&t->mu);
  t->deferred = false;
  t->has_work = true;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* stop and join; idempotent */
static void thread_stop(lthread_t *t) {
  if (t->joined) return;
  atomic_store(&t->stop, true);
  pthread_mutex_lock(&t->mu);
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  if (t->started && !pthread_equal(t->tid, pthread_self())) pthread_join(t->tid, NULL);
  t->joined = true;
}

/* joins under live_mu: thread_free unlinks under it before joining, so no thread is joined twice */
static void stop_all_at_exit(void) {
  pthread_mutex_lock(&live_mu);
  for (lthread_t *t = live_head; t; t = t->next_live) {
    atomic_store(&t->stop, true);
    pthread_mutex_lock(&t->mu);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
  }
  for (lthread_t *t = live_head; t; t = t->next_live) thread_stop(t);
  pthread_mutex_unlock(&live_mu);
}
static void register_atexit(void) { atexit(stop_all_at_exit); }

/* stop, join and free; L: the caller's state (its registry holds the transfers' references) */
static void thread_free(lthread_t *t, lua_State *L) {
  if (!t) return;
  if (!t->nested) {
    pthread_mutex_lock(&live_mu);
    for (lthread_t **q = &live_head; *q; q = &(*q)->next_live) {
      if (*q == t) {
        *q = t->next_live;
        break;
      }
    }
    pthread_mutex_unlock(&live_mu);
  }
  thread_stop(t); /* outside live_mu: the thread may be closing threads of its own */
  if (t->T) lua_close(t->T); /* never started */
  lt_transfer_free(t->to, L, NULL);
  lt_transfer_free(t->back, NULL, L);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  free(t);
}

static lthread_t *check_thread(lua_State *L) {
  thread_box_t *b = luaL_checkudata(L, 1, THREAD_MT);
  if (!b->t) luaL_error(L, "%s: the thread was closed", b->name);
  return b->t;
}

/* in the new state, protected: the libraries and the caller's search paths */
static int boot(lua_State *T) {
  const char *path = lua_tostring(T, 1), *cpath = lua_tostring(T, 2);
  lua_pushcfunction(T, lutorch_openlibs);
  lua_call(T, 0, 0);
  lua_getglobal(T, "package");
  if (path) {
    lua_pushstring(T, path);
    lua_setfield(T, -2, "path");
  }
  if (cpath) {
    lua_pushstring(T, cpath);
    lua_setfield(T, -2, "cpath");
  }
  return 0;
}

/* torch._lua_thread{name = 'cpu:1', threads = n} */
static int l_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lt_lua_checknargs(L, 1, "_lua_thread");
  const char *name = "lua thread";
  if (lua_getfield(L, 1, "name") != LUA_TNIL) name = luaL_checkstring(L, -1);
  lua_Integer nt = 0;
  if (lua_getfield(L, 1, "threads") != LUA_TNIL) {
    int64_t v;
    if (!lt_lua_toint(L, -1, &v) || v < 0)
      return luaL_error(L, "_lua_thread: threads must be a non-negative integer, got %s", luaL_tolstring(L, -1, NULL));
    nt = v;
  }
  lt_device_t dev = {0, 0};
  bool has_device = lua_getfield(L, 1, "device") != LUA_TNIL;
  if (has_device) {
    lt_device_t d = lt_lua_checkdevice(L, -1);
    if (lt_device_resolve(d, &dev) != LT_OK) return luaL_error(L, "_lua_thread: %s", lt_last_error());
  }
  lua_settop(L, 1);
  lua_getglobal(L, "package"); /* 2 */
  const char *path = NULL, *cpath = NULL;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "path");  /* 3 */
    lua_getfield(L, 2, "cpath"); /* 4 */
    path = lua_tostring(L, 3);
    cpath = lua_tostring(L, 4);
  }

  thread_box_t *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->t = NULL;
  snprintf(b->name, sizeof b->name, "%s", name);
  luaL_setmetatable(L, THREAD_MT);
  lthread_t *t = calloc(1, sizeof *t);
  if (!t) return luaL_error(L, "_lua_thread: out of memory");
  snprintf(t->name, sizeof t->name, "%s", name);
  t->nthreads = (int)(nt > 1024 ? 1024 : nt);
  t->has_device = has_device;
  t->device = dev;
  t->nested = running_in != NULL;
  t->joined = true; /* nothing to join until the thread starts */
  atomic_init(&t->stop, false);
  if (pthread_mutex_init(&t->mu, NULL) != 0) {
    free(t);
    return luaL_error(L, "%s: cannot create the thread's lock", name);
  }
  if (pthread_cond_init(&t->cv, NULL) != 0) {
    pthread_mutex_destroy(&t->mu);
    free(t);
    return luaL_error(L, "%s: cannot create the thread's condition variable", name);
  }
  b->t = t; /* from here __gc frees it */
  t->to = lt_transfer_new();
  t->back = lt_transfer_new();
  if (!t->to || !t->back) return lt_lua_error(L);
  lt_transfer_link(t->to, t->back);

  lua_State *T = lt_lua_newstate();
  if (!T) return luaL_error(L, "%s: cannot create a Lua state (out of memory)", name);
  t->T = T;
  *(lthread_t **)lua_getextraspace(T) = t;
  lua_pushcfunction(T, lt_lua_msgh); /* stays at index 1: the message handler of every run */
  lua_pushcfunction(T, boot);
  lua_pushstring(T, path);
  lua_pushstring(T, cpath);
  if (lua_pcall(T, 2, 0, 1) != LUA_OK) {
    lua_pushfstring(L, "%s: cannot start its Lua state: %s", name, lua_tostring(T, -1));
    return lua_error(L);
  }
  lua_settop(T, 1);
  lua_gc(T, LUA_GCGEN, 0, 0); /* as the interpreter's state: each run's copies die young */
  lua_sethook(T, stop_hook, LUA_MASKCOUNT, HOOK_COUNT);

  pthread_once(&atexit_once, register_atexit);
  /* the thread blocks every signal: handlers (SIGINT's) belong to the main thread and its state */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  if (!t->nested) pthread_mutex_lock(&live_mu);
  int rc = pthread_create(&t->tid, NULL, thread_main, t);
  if (rc == 0) {
    t->started = true;
    t->joined = false;
    if (!t->nested) {
      t->next_live = live_head;
      live_head = t;
    }
  }
  if (!t->nested) pthread_mutex_unlock(&live_mu);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return luaL_error(L, "%s: cannot start a thread: %s", name, strerror(rc));
  return 1;
}

/* th:start(fn, args, opts) */
static int l_start(lua_State *L) {
  lthread_t *t = check_thread(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  lt_lua_checknargs(L, 4, "start");
  if (t->busy) return luaL_error(L, "%s: busy (start was called again before wait)", t->name);
  bool grad = lt_grad_enabled(), defer = false;
  int subst = 0;
  lua_settop(L, 4);
  if (lua_istable(L, 4)) {
    if (lua_getfield(L, 4, "grad_enabled") != LUA_TNIL) grad = lua_toboolean(L, -1);
    lua_pop(L, 1);
    defer = lua_getfield(L, 4, "defer") != LUA_TNIL && lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, 4, "subst") != LUA_TNIL) {
      if (!lua_istable(L, -1)) return luaL_error(L, "%s: start: opts.subst must be a table", t->name);
      subst = lua_gettop(L);
    } else {
      lua_pop(L, 1);
    }
  }
  int n = 0;
  int argbase = lua_gettop(L) + 1;
  if (lua_istable(L, 3)) {
    if (lua_getfield(L, 3, "n") == LUA_TNUMBER && lua_isinteger(L, -1)) n = (int)lua_tointeger(L, -1);
    else n = (int)lua_rawlen(L, 3);
    lua_pop(L, 1);
    if (n < 0 || n > 250) return luaL_error(L, "%s: start: %d arguments (at most 250)", t->name, n);
    luaL_checkstack(L, n, "start: too many arguments");
    for (int k = 1; k <= n; k++) lua_rawgeti(L, 3, k);
  }
  lua_State *T = t->T;
  /* the thread waits (not busy), so its state is ours until has_work is set */
  lua_settop(T, 1);
  if (lt_transfer_copy(t->to, L, 2, 1, subst, T, "the function", -1, LT_TRANSFER_FRESH_UPVALUES) != LT_OK ||
      lt_transfer_copy(t->to, L, argbase, n, subst, T, "argument", 1, 0) != LT_OK) {
    lua_settop(T, 1);
    return luaL_error(L, "%s: %s", t->name, lt_last_error());
  }
  pthread_mutex_lock(&t->mu);
  t->nargs = n;
  t->grad_enabled = grad;
  t->done = false;
  t->deferred = defer;
  t->has_work = !defer;
  if (!defer) pthread_cond_broadcast(&t->cv); /* a deferred call wakes no one (see run_here) */
  pthread_mutex_unlock(&t->mu);
  t->busy = true;
  return 0;
}

/* torch._lua_threads_run(threads, fn, limit): runs fn() here and the deferred calls of the Lua
   threads in the array `threads` (each started with opts.defer) at the same time, on this thread's
   OpenMP team: thread 0 runs fn, thread k the k-th call, each with at most `limit` kernel threads.
   On machines where waking a sleeping thread is slow, this costs far less than handing the calls to
   the Lua threads' own pthreads, and the team's workers, busy here, do not spin on the cores the
   calls need. A call the team has no thread for (inside another parallel region, say) goes to its
   own pthread. Results and errors of the calls are collected by th:wait(); fn's error is raised.
   Returns how many calls ran on the team. */
static int l_threads_run(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_Integer limit = luaL_optinteger(L, 3, 0);
  lt_lua_checknargs(L, 3, "_lua_threads_run");
  int k = (int)lua_rawlen(L, 1);
  if (k < 0 || k > 64) return luaL_error(L, "_lua_threads_run: %d threads (at most 64)", k);
  lthread_t *ts[64];
  for (int i = 0; i < k; i++) {
    lua_rawgeti(L, 1, i + 1);
    thread_box_t *b = luaL_testudata(L, -1, THREAD_MT);
    if (!b || !b->t) return luaL_error(L, "_lua_threads_run: element %d is not an open Lua thread", i + 1);
    ts[i] = b->t;
    if (!ts[i]->busy || !ts[i]->deferred)
      return luaL_error(L, "_lua_threads_run: %s was not started with opts.defer", ts[i]->name);
    lua_pop(L, 1);
  }
  lua_settop(L, 2);
  int status = LUA_OK;
  bool ran[64] = {false};
  int prev_limit = lt_thread_num_threads();
#pragma omp parallel num_threads(k + 1)
  {
    int id = omp_get_thread_num();
    if (id == 0) {
      if (limit > 0) lt_set_thread_num_threads((int)limit);
      status = lua_pcall(L, 0, 0, 0);
      lt_set_thread_num_threads(prev_limit);
    } else if (id <= k) {
      ran[id - 1] = true;
      run_here(ts[id - 1]);
    }
  }
  int on_team = 0;
  for (int i = 0; i < k; i++) {
    if (!ran[i]) dispatch(ts[i]);
    else ts[i]->deferred = false, on_team++;
  }
  if (status != LUA_OK) return lua_error(L);
  lua_pushinteger(L, on_team);
  return 1;
}

/* th:wait() -> results... */
static int l_wait(lua_State *L) {
  lthread_t *t = check_thread(L);
  lt_lua_checknargs(L, 1, "wait");
  if (!t->busy) return luaL_error(L, "%s: wait without a start", t->name);
  if (t->deferred) dispatch(t); /* not run by torch._lua_threads_run: its pthread runs it now */
  /* a replica usually ends about when the caller's does: spin up to 100 us before sleeping, which
     saves the tens of microseconds a wake-up takes on a loaded machine */
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 1; !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE); i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 100000) break;
    }
  }
  pthread_mutex_lock(&t->mu);
  t->waiters++;
  while (!t->done) pthread_cond_wait(&t->cv, &t->mu);
  t->waiters--;
  int st = t->status;
  pthread_mutex_unlock(&t->mu);
  t->busy = false;
  lua_State *T = t->T;
  if (st != LUA_OK) {
    const char *m = lua_tostring(T, -1);
    lua_pushfstring(L, "%s: %s", t->name, m ? m : "(no message)");
    lua_settop(T, 1);
    return lua_error(L);
  }
  int n = lua_gettop(T) - 1;
  luaL_checkstack(L, n + 4, "wait: too many results");
  int rc = lt_transfer_copy(t->back, T, 2, n, 0, L, "result", 1, 0);
  lua_settop(T, 1);
  if (rc != LT_OK) return luaL_error(L, "%s: %s", t->name, lt_last_error());
  return n;
}

static int l_busy(lua_State *L) {
  lthread_t *t = check_thread(L);
  lua_pushboolean(L, t->busy);
  return 1;
}

static int l_close(lua_State *L) {
  thread_box_t *b = luaL_checkudata(L, 1, THREAD_MT);
  lthread_t *t = b->t;
  b->t = NULL;
  thread_free(t, L);
  return 0;
}

static int l_index(lua_State *L) {
  thread_box_t *b = luaL_checkudata(L, 1, THREAD_MT);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "name") == 0) {
    lua_pushstring(L, b->name);
    return 1;
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_getfield(L, -1, k);
  return 1;
}

static int l_tostring(lua_State *L) {
  thread_box_t *b = luaL_checkudata(L, 1, THREAD_MT);
  lua_pushfstring(L, "lua thread '%s'%s", b->name, b->t ? "" : " (closed)");
  return 1;
}

void lt_open_lua_thread(lua_State *L, int torch) {
  static const luaL_Reg methods[] = {{"start", l_start}, {"wait", l_wait}, {"busy", l_busy},
                                     {"close", l_close}, {NULL, NULL}};
  luaL_newmetatable(L, THREAD_MT);
  lua_pushcfunction(L, l_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, l_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, l_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_tostring);
  lua_setfield(L, -2, "__tostring");
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, torch, "_lua_thread");
  lua_pushcfunction(L, l_threads_run);
  lua_setfield(L, torch, "_lua_threads_run");
}
