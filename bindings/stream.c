/* Streams and events for every device type: torch.Stream, torch.Event, torch.current_stream,
   torch.default_stream, torch.stream (a to-be-closed value, or a function form), x:record_stream,
   and the CPU test hook torch._stream_hold. lua/torch/cuda.lua builds torch.cuda's names on these. */
#include "bindings/binding.h"
#include "core/allocator.h"
#include "core/stream.h"

#include <string.h>

#define LT_STREAM_MT "torch.Stream"
#define LT_EVENT_MT "torch.Event"
#define LT_STREAMCTX_MT "torch.stream"

static void push_stream(lua_State *L, lt_stream_t s) {
  lt_stream_t *u = lua_newuserdatauv(L, sizeof *u, 0);
  *u = s;
  luaL_setmetatable(L, LT_STREAM_MT);
}

static lt_stream_t check_stream(lua_State *L, int idx) {
  return *(lt_stream_t *)luaL_checkudata(L, idx, LT_STREAM_MT);
}

static lt_event_t *check_event(lua_State *L, int idx) {
  lt_event_t **u = luaL_checkudata(L, idx, LT_EVENT_MT);
  if (!*u) luaL_error(L, "Event: the event was destroyed");
  return *u;
}

/* a device argument; nil is the current CPU device */
static lt_device_t opt_device(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return lt_device(LT_CPU, -1);
  return lt_lua_checkdevice(L, idx);
}

/* ---- streams ---- */
static int s_new(lua_State *L) {
  lt_device_t d = opt_device(L, 1);
  lt_lua_checknargs(L, 1, "Stream");
  lt_stream_t s;
  lt_lua_check(L, lt_stream_new(d, &s));
  push_stream(L, s);
  return 1;
}

static int s_current(lua_State *L) {
  lt_device_t d = opt_device(L, 1);
  lt_lua_checknargs(L, 1, "current_stream");
  lt_stream_t s;
  lt_lua_check(L, lt_stream_current(d, &s));
  push_stream(L, s);
  return 1;
}

static int s_default(lua_State *L) {
  lt_device_t d = opt_device(L, 1);
  lt_lua_checknargs(L, 1, "default_stream");
  lt_stream_t s;
  lt_lua_check(L, lt_stream_default(d, &s));
  push_stream(L, s);
  return 1;
}

static int s_synchronize(lua_State *L) {
  lt_lua_check(L, lt_stream_synchronize(check_stream(L, 1)));
  return 0;
}

static int s_query(lua_State *L) {
  bool done;
  lt_lua_check(L, lt_stream_query(check_stream(L, 1), &done));
  lua_pushboolean(L, done);
  return 1;
}

static int s_wait_stream(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  if (!luaL_testudata(L, 2, LT_STREAM_MT)) return luaL_error(L, "wait_stream: expected a stream, got %s", luaL_typename(L, 2));
  lt_lua_check(L, lt_stream_wait_stream(s, check_stream(L, 2)));
  return 0;
}

static int s_wait_event(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  if (!luaL_testudata(L, 2, LT_EVENT_MT)) return luaL_error(L, "wait_event: expected an event, got %s", luaL_typename(L, 2));
  lt_lua_check(L, lt_stream_wait_event(s, check_event(L, 2)));
  return 0;
}

static void push_event(lua_State *L, lt_event_t *e) {
  lt_event_t **u = lua_newuserdatauv(L, sizeof *u, 0);
  *u = e;
  luaL_setmetatable(L, LT_EVENT_MT);
}

/* s:record_event(e?): records e (a new event of s's device when none) on s and returns it */
static int s_record_event(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lt_event_t *e = lt_event_new(s.device, false);
    if (!e) return lt_lua_error(L);
    push_event(L, e);
  } else {
    if (!luaL_testudata(L, 2, LT_EVENT_MT)) return luaL_error(L, "record_event: expected an event, got %s", luaL_typename(L, 2));
    lua_pushvalue(L, 2);
  }
  lt_lua_check(L, lt_event_record(check_event(L, -1), s));
  return 1;
}

static int s_tostring(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  char buf[32];
  lua_pushfstring(L, "torch.Stream(device=%s, stream_id=%d)", lt_device_format(s.device, buf, sizeof buf), s.id);
  return 1;
}

static int s_eq(lua_State *L) {
  lt_stream_t *a = luaL_testudata(L, 1, LT_STREAM_MT), *b = luaL_testudata(L, 2, LT_STREAM_MT);
  lua_pushboolean(L, a && b && lt_stream_eq(*a, *b));
  return 1;
}

static int s_index(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "device") == 0) lt_lua_pushdevice(L, s.device);
  else if (strcmp(k, "stream_id") == 0) lua_pushinteger(L, s.id);
  else lua_getfield(L, lua_upvalueindex(1), k);
  return 1;
}

/* ---- events ---- */
static int e_new(lua_State *L) {
  int o = 2;
  lt_device_t d = lt_device(LT_CPU, -1);
  if (lua_istable(L, 1)) o = 1; /* torch.Event{enable_timing = true}: the CPU */
  else d = opt_device(L, 1);
  bool timing = false;
  if (lua_istable(L, o)) {
    lua_getfield(L, o, "enable_timing");
    timing = lua_toboolean(L, -1);
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, o)) {
    return luaL_error(L, "Event: expected an options table, got %s", luaL_typename(L, o));
  }
  lt_lua_checknargs(L, o, "Event");
  lt_event_t *e = lt_event_new(d, timing);
  if (!e) return lt_lua_error(L);
  push_event(L, e);
  return 1;
}

/* the stream argument at idx, or the current stream of e's device */
static lt_stream_t event_stream(lua_State *L, lt_event_t *e, int idx, const char *op) {
  if (!lua_isnoneornil(L, idx)) {
    if (!luaL_testudata(L, idx, LT_STREAM_MT)) luaL_error(L, "%s: expected a stream, got %s", op, luaL_typename(L, idx));
    return check_stream(L, idx);
  }
  lt_stream_t s;
  lt_lua_check(L, lt_stream_current(e->device, &s));
  return s;
}

static int e_record(lua_State *L) {
  lt_event_t *e = check_event(L, 1);
  lt_lua_check(L, lt_event_record(e, event_stream(L, e, 2, "Event.record")));
  return 0;
}

static int e_wait(lua_State *L) {
  lt_event_t *e = check_event(L, 1);
  lt_lua_check(L, lt_stream_wait_event(event_stream(L, e, 2, "Event.wait"), e));
  return 0;
}

static int e_synchronize(lua_State *L) {
  lt_lua_check(L, lt_event_synchronize(check_event(L, 1)));
  return 0;
}

static int e_query(lua_State *L) {
  bool done;
  lt_lua_check(L, lt_event_query(check_event(L, 1), &done));
  lua_pushboolean(L, done);
  return 1;
}

static int e_elapsed_time(lua_State *L) {
  lt_event_t *a = check_event(L, 1);
  if (!luaL_testudata(L, 2, LT_EVENT_MT)) return luaL_error(L, "elapsed_time: expected an event, got %s", luaL_typename(L, 2));
  double ms;
  lt_lua_check(L, lt_event_elapsed_ms(a, check_event(L, 2), &ms));
  lua_pushnumber(L, ms);
  return 1;
}

static int e_gc(lua_State *L) {
  lt_event_t **u = luaL_checkudata(L, 1, LT_EVENT_MT);
  lt_event_free(*u);
  *u = NULL;
  return 0;
}

static int e_tostring(lua_State *L) {
  lt_event_t *e = check_event(L, 1);
  char buf[32];
  lua_pushfstring(L, "torch.Event(device=%s, enable_timing=%s, recorded=%s)", lt_device_format(e->device, buf, sizeof buf),
                  e->enable_timing ? "true" : "false", e->recorded ? "true" : "false");
  return 1;
}

static int e_index(lua_State *L) {
  lt_event_t *e = check_event(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "device") == 0) lt_lua_pushdevice(L, e->device);
  else if (strcmp(k, "enable_timing") == 0) lua_pushboolean(L, e->enable_timing);
  else lua_getfield(L, lua_upvalueindex(1), k);
  return 1;
}

/* ---- torch.stream(s): the current stream (and device) until closed ---- */
typedef struct {
  bool active;
  lt_stream_t prev;  /* the previous current stream of s's device */
  lt_device_t prev_device;
} stream_ctx_t;

static int ctx_close(lua_State *L) {
  stream_ctx_t *c = luaL_checkudata(L, 1, LT_STREAMCTX_MT);
  if (!c->active) return 0;
  c->active = false;
  lt_lua_check(L, lt_stream_set_current(c->prev));
  lt_lua_check(L, lt_set_current_device(c->prev_device));
  return 0;
}

static int f_stream(lua_State *L) {
  bool has_fn = !lua_isnoneornil(L, 2);
  if (has_fn) luaL_checktype(L, 2, LUA_TFUNCTION);
  lt_lua_checknargs(L, 2, "stream");
  stream_ctx_t *c = lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  luaL_setmetatable(L, LT_STREAMCTX_MT);
  int ctx = lua_gettop(L);
  if (!lua_isnil(L, 1)) { /* as PyTorch: stream(None) changes nothing */
    if (!luaL_testudata(L, 1, LT_STREAM_MT)) return luaL_error(L, "stream: expected a stream or nil, got %s", luaL_typename(L, 1));
    lt_stream_t s = check_stream(L, 1);
    c->prev_device = lt_device((lt_devtype)s.device.type, lt_current_device((lt_devtype)s.device.type));
    lt_lua_check(L, lt_stream_current(s.device, &c->prev));
    lt_lua_check(L, lt_set_current_device(s.device));
    lt_lua_check(L, lt_stream_set_current(s));
    c->active = true;
  }
  if (!has_fn) return 1;
  lua_pushvalue(L, 2);
  int base = lua_gettop(L) - 1;
  int rc = lua_pcall(L, 0, LUA_MULTRET, 0);
  /* restore before anything else, the error case included */
  lua_pushcfunction(L, ctx_close);
  lua_pushvalue(L, ctx);
  lua_call(L, 1, 0);
  if (rc != LUA_OK) return lua_error(L);
  return lua_gettop(L) - base;
}

/* ---- tensors, the hook ---- */
static int t_record_stream(lua_State *L) {
  lt_tensor_t *t = lt_lua_checktensor(L, 1);
  if (!luaL_testudata(L, 2, LT_STREAM_MT)) return luaL_error(L, "record_stream: expected a stream, got %s", luaL_typename(L, 2));
  lt_lua_checknargs(L, 2, "record_stream");
  lt_lua_check(L, lt_record_stream(t, check_stream(L, 2)));
  return 0;
}

static int f_stream_hold(lua_State *L) {
  lt_stream_t s = check_stream(L, 1);
  lt_lua_check(L, lt_cpu_stream_hold(s, lua_toboolean(L, 2)));
  return 0;
}

static int f_memory_pending(lua_State *L) {
  lt_device_t d = opt_device(L, 1);
  int n = lt_memory_pending_blocks(d);
  if (n < 0) return lt_lua_error(L);
  lua_pushinteger(L, n);
  return 1;
}

static void new_class(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction index) {
  luaL_newmetatable(L, mt);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_pushcclosure(L, index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, mt);
  lua_setfield(L, -2, "__name");
}

void lt_open_stream(lua_State *L, int torch, int methods) {
  static const luaL_Reg smethods[] = {
      {"synchronize", s_synchronize}, {"query", s_query}, {"wait_stream", s_wait_stream},
      {"wait_event", s_wait_event}, {"record_event", s_record_event}, {NULL, NULL}};
  new_class(L, LT_STREAM_MT, smethods, s_index);
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, s_eq);
  lua_setfield(L, -2, "__eq");
  lua_pop(L, 1);

  static const luaL_Reg emethods[] = {
      {"record", e_record}, {"wait", e_wait}, {"synchronize", e_synchronize}, {"query", e_query},
      {"elapsed_time", e_elapsed_time}, {NULL, NULL}};
  new_class(L, LT_EVENT_MT, emethods, e_index);
  lua_pushcfunction(L, e_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, e_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);

  luaL_newmetatable(L, LT_STREAMCTX_MT);
  lua_pushcfunction(L, ctx_close);
  lua_setfield(L, -2, "__close");
  lua_pushliteral(L, LT_STREAMCTX_MT);
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);

  static const luaL_Reg fns[] = {
      {"Stream", s_new}, {"Event", e_new}, {"current_stream", s_current}, {"default_stream", s_default},
      {"stream", f_stream}, {"_stream_hold", f_stream_hold}, {"_memory_pending", f_memory_pending},
      {NULL, NULL}};
  lt_lua_register(L, torch, methods, fns, true, false);
  static const luaL_Reg tmethods[] = {{"record_stream", t_record_stream}, {NULL, NULL}};
  lt_lua_register(L, torch, methods, tmethods, false, true);
}
