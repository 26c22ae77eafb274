/* Copying Lua values between two lutorch Lua states (the rules are in lua_transfer.h).

   The copy runs under lua_pcall in the destination, so that anything the destination raises (out
   of memory, a module that fails to load there) is caught; the source is only read with raw
   accesses, which raise nothing but out of memory. Problems with a value set a message naming its
   path and unwind by return codes.

   State kept per direction (lt_transfer_t), as registry references:
   - anchor (source, weak keys): source object -> id, for every object whose copy is cached;
   - cache (destination): id -> the copy. Ids rather than addresses, so that the source object
     needs no strong anchor: a closure made anew for every call (th:start(function ... end)) is
     not kept forever; the entries of dead source objects are swept once the cache has doubled;
   - link (destination, weak values): id -> object, entries made by the reverse direction: a copy
     maps back to its original (a class copied into a thread and returned is the caller's class).
   Within one call a memo (destination: light userdata, the source object's address -> copy)
   preserves sharing and cycles, and a table of upvalue ids joins upvalues shared between closures
   (the source objects are alive during the call, so their addresses identify them).
   Per source state: registry["lutorch.transfer"] = {paths = object -> path (weak keys), n = the
   number of entries of package.loaded when it was built}. A path is a byte string of steps: 'k'
   + 4-byte length + key (a string key; the first step is a key of package.loaded), 'i' + 8-byte
   integer key, 'm' (metatable), 'u' + 4-byte upvalue index. */
#include "bindings/lua_transfer.h"
#include "bindings/binding.h"
#include "core/error.h"

#include <lualib.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200        /* nesting of a copied value */
#define WALK_DEPTH 8         /* levels of package.loaded walked for paths */
#define WALK_MAX 200000      /* objects recorded at most */
#define PATH_BYTES 1024      /* longest encoded path */
#define PATHS_KEY "lutorch.transfer"

struct lt_transfer {
  int anchor_ref, cache_ref, link_ref;
  lua_Integer next_id;
  lua_Integer added, live; /* cache entries made since the last sweep, and live after it */
  lt_transfer_t *rev;
};

lt_transfer_t *lt_transfer_new(void) {
  lt_transfer_t *x = malloc(sizeof *x);
  if (!x) {
    lt_error("lua transfer: out of memory");
    return NULL;
  }
  x->anchor_ref = x->cache_ref = x->link_ref = LUA_NOREF;
  x->next_id = x->added = x->live = 0;
  x->rev = NULL;
  return x;
}

void lt_transfer_link(lt_transfer_t *fwd, lt_transfer_t *back) {
  fwd->rev = back;
  back->rev = fwd;
}

void lt_transfer_free(lt_transfer_t *x, lua_State *src, lua_State *dst) {
  if (!x) return;
  if (src) luaL_unref(src, LUA_REGISTRYINDEX, x->anchor_ref);
  if (dst) {
    luaL_unref(dst, LUA_REGISTRYINDEX, x->cache_ref);
    luaL_unref(dst, LUA_REGISTRYINDEX, x->link_ref);
  }
  if (x->rev) x->rev->rev = NULL;
  free(x);
}

/* pushes the table behind *ref, creating it on first use (mode: its __mode, or NULL) */
static void push_reftable(lua_State *L, int *ref, const char *mode) {
  if (*ref != LUA_NOREF && lua_rawgeti(L, LUA_REGISTRYINDEX, *ref) == LUA_TTABLE) return;
  if (*ref != LUA_NOREF) lua_pop(L, 1);
  lua_newtable(L);
  if (mode) {
    lua_createtable(L, 0, 1);
    lua_pushstring(L, mode);
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  }
  lua_pushvalue(L, -1);
  *ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* ---- paths of package.loaded (in the source state) ---- */

static size_t put_u32(char *b, uint32_t v) {
  memcpy(b, &v, 4);
  return 4;
}

/* records the value at child (absolute index) under path pp + step, queueing it in next */
static void walk_add(lua_State *S, int P, int next, lua_Integer *nn, int child, const char *pp, size_t pl,
                     const char *step, size_t sl, size_t *count, bool queue) {
  int t = lua_type(S, child);
  if (t != LUA_TTABLE && t != LUA_TFUNCTION && t != LUA_TUSERDATA) return;
  if (t == LUA_TUSERDATA && lt_lua_totensor(S, child)) return; /* tensors cross by reference */
  if (*count >= WALK_MAX || pl + sl > PATH_BYTES) return;
  lua_pushvalue(S, child);
  if (lua_rawget(S, P) != LUA_TNIL) {
    lua_pop(S, 1);
    return;
  }
  lua_pop(S, 1);
  char buf[PATH_BYTES];
  memcpy(buf, pp, pl);
  memcpy(buf + pl, step, sl);
  lua_pushvalue(S, child);
  lua_pushlstring(S, buf, pl + sl);
  lua_rawset(S, P);
  (*count)++;
  if (queue) {
    lua_pushvalue(S, child);
    lua_rawseti(S, next, ++*nn);
  }
}

/* the step for the key at -2 during a traversal; 0 when the key is not followed */
static size_t key_step(lua_State *S, char *step) {
  if (lua_type(S, -2) == LUA_TSTRING) {
    size_t len;
    const char *k = lua_tolstring(S, -2, &len);
    if (len > 200) return 0;
    step[0] = 'k';
    put_u32(step + 1, (uint32_t)len);
    memcpy(step + 5, k, len);
    return 5 + len;
  }
  if (lua_isinteger(S, -2)) {
    int64_t i = (int64_t)lua_tointeger(S, -2);
    step[0] = 'i';
    memcpy(step + 1, &i, 8);
    return 9;
  }
  return 0;
}

static size_t count_loaded(lua_State *S) {
  size_t n = 0;
  lua_getfield(S, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushnil(S);
  while (lua_next(S, -2)) {
    n++;
    lua_pop(S, 1);
  }
  lua_pop(S, 1);
  return n;
}

/* builds the paths table of S, stores it in the registry and pushes it */
static void build_paths(lua_State *S) {
  int top = lua_gettop(S);
  lua_createtable(S, 0, 2); /* R */
  int R = top + 1;
  lua_newtable(S); /* P, weak-keyed: an unloaded module's objects may go */
  int P = top + 2;
  lua_createtable(S, 0, 1);
  lua_pushliteral(S, "k");
  lua_setfield(S, -2, "__mode");
  lua_setmetatable(S, P);
  lua_pushvalue(S, P);
  lua_setfield(S, R, "paths");
  lua_pushinteger(S, (lua_Integer)count_loaded(S));
  lua_setfield(S, R, "n");
  lua_pushvalue(S, R);
  lua_setfield(S, LUA_REGISTRYINDEX, PATHS_KEY);

  lua_getfield(S, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* top + 3 */
  int loaded = top + 3;
  lua_rawgeti(S, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); /* top + 4 */
  int G = top + 4;
  lua_newtable(S); /* top + 5: the level being expanded */
  lua_newtable(S); /* top + 6: the next level */
  int cur = top + 5, next = top + 6;
  lua_Integer ncur = 0, nnext = 0;
  size_t count = 0;
  char step[PATH_BYTES];
  /* level 1: the modules; the global table is recorded but not walked, except for its C functions
     (print, pairs...), which live nowhere else */
  const char gstep[] = {'k', 2, 0, 0, 0, '_', 'G'};
  walk_add(S, P, next, &nnext, G, "", 0, gstep, sizeof gstep, &count, false);
  /* torch's modules and the standard libraries first, so that what they reach gets their paths
     (the walk is breadth first: the first path found wins), not that of a module the destination
     may be unable to load (a test framework's, a script's) */
  /* and shorter module names before longer ones: torch.nn.Linear is found as a field of 'torch.nn'
     rather than of 'torch.nn.linear', a name the other state may resolve only by loading the file
     again (after a test framework unloaded it) */
  for (int pass = 0; pass < 2; pass++)
    for (size_t len = 1; len <= 64; len++) {
      lua_pushnil(S);
      while (lua_next(S, loaded)) {
        if (lua_type(S, -2) == LUA_TSTRING) {
          size_t nl;
          const char *name = lua_tolstring(S, -2, &nl);
          bool first = strcmp(name, "torch") == 0 || strncmp(name, "torch.", 6) == 0 || strcmp(name, "string") == 0 ||
                       strcmp(name, "table") == 0 || strcmp(name, "math") == 0 || strcmp(name, "io") == 0 ||
                       strcmp(name, "os") == 0 || strcmp(name, "coroutine") == 0 || strcmp(name, "utf8") == 0 ||
                       strcmp(name, "debug") == 0 || strcmp(name, "package") == 0;
          bool now = first == (pass == 0) && (nl == len || (len == 64 && nl > 64));
          size_t sl = now ? key_step(S, step) : 0;
          if (sl) walk_add(S, P, next, &nnext, lua_gettop(S), "", 0, step, sl, &count, true);
        }
        lua_pop(S, 1);
      }
    }
  lua_pushnil(S);
  while (lua_next(S, G)) {
    if (lua_type(S, -2) == LUA_TSTRING && lua_iscfunction(S, -1)) {
      size_t sl = key_step(S, step);
      char buf[PATH_BYTES];
      memcpy(buf, gstep, sizeof gstep);
      if (sl && sl + sizeof gstep <= PATH_BYTES) {
        memcpy(buf + sizeof gstep, step, sl);
        walk_add(S, P, next, &nnext, lua_gettop(S), "", 0, buf, sl + sizeof gstep, &count, false);
      }
    }
    lua_pop(S, 1);
  }
  for (int level = 2; level <= WALK_DEPTH && nnext > 0; level++) {
    lua_copy(S, next, cur); /* swap: the next level becomes the current one */
    ncur = nnext;
    lua_newtable(S);
    lua_replace(S, next);
    nnext = 0;
    for (lua_Integer j = 1; j <= ncur; j++) {
      lua_rawgeti(S, cur, j);
      int o = lua_gettop(S);
      lua_pushvalue(S, o);
      lua_rawget(S, P);
      size_t pl;
      const char *pp = lua_tolstring(S, -1, &pl); /* anchored in P while we use it */
      int t = lua_type(S, o);
      if (t == LUA_TTABLE) {
        lua_pushnil(S);
        while (lua_next(S, o)) {
          size_t sl = key_step(S, step);
          if (sl) walk_add(S, P, next, &nnext, lua_gettop(S), pp, pl, step, sl, &count, true);
          lua_pop(S, 1);
        }
      } else if (t == LUA_TFUNCTION) {
        for (int n = 1; n < 256; n++) {
          if (!lua_getupvalue(S, o, n)) break;
          step[0] = 'u';
          put_u32(step + 1, (uint32_t)n);
          walk_add(S, P, next, &nnext, lua_gettop(S), pp, pl, step, 5, &count, true);
          lua_pop(S, 1);
        }
      }
      if (t != LUA_TFUNCTION && lua_getmetatable(S, o)) {
        walk_add(S, P, next, &nnext, lua_gettop(S), pp, pl, "m", 1, &count, true);
        lua_pop(S, 1);
      }
      lua_settop(S, o - 1);
    }
  }
  lua_settop(S, P);
  lua_remove(S, R);
}

/* pushes the paths table of S, building it when missing or when package.loaded changed */
static void push_paths(lua_State *S, bool rebuild) {
  if (!rebuild) {
    if (lua_getfield(S, LUA_REGISTRYINDEX, PATHS_KEY) == LUA_TTABLE) {
      lua_getfield(S, -1, "n");
      size_t n = (size_t)lua_tointeger(S, -1);
      lua_pop(S, 1);
      if (n == count_loaded(S)) {
        if (lua_getfield(S, -1, "paths") == LUA_TTABLE) {
          lua_remove(S, -2);
          return;
        }
        lua_pop(S, 1);
      }
    }
    lua_pop(S, 1);
  }
  build_paths(S);
}

/* a readable form of an encoded path, for messages */
static void path_readable(const char *s, size_t len, char *out, size_t cap) {
  size_t o = 0, k = 0;
  out[0] = '\0';
  bool first = true;
  while (k < len && o + 1 < cap) {
    int w = 0;
    char tag = s[k++];
    if (tag == 'k' && k + 4 <= len) {
      uint32_t n;
      memcpy(&n, s + k, 4);
      k += 4;
      if (k + n > len) break;
      w = snprintf(out + o, cap - o, "%s%.*s", first ? "" : ".", (int)n, s + k);
      k += n;
    } else if (tag == 'i' && k + 8 <= len) {
      int64_t i;
      memcpy(&i, s + k, 8);
      k += 8;
      w = snprintf(out + o, cap - o, "[%lld]", (long long)i);
    } else if (tag == 'm') {
      w = snprintf(out + o, cap - o, "[metatable]");
    } else if (tag == 'u' && k + 4 <= len) {
      uint32_t n;
      memcpy(&n, s + k, 4);
      k += 4;
      w = snprintf(out + o, cap - o, "[upvalue %u]", n);
    } else {
      break;
    }
    if (w < 0) break;
    o += (size_t)w;
    if (o >= cap) o = cap - 1;
    first = false;
  }
}

/* ---- the copy ---- */

typedef struct {
  char kind;        /* 'k': the key at idx in the source's stack; 'm': a metatable; 'u': upvalue name */
  int idx;
  const char *name;
} seg_t;

typedef struct {
  lt_transfer_t *x;
  lua_State *S, *D;
  int s_idx, n, s_subst, s_anchor, s_paths, s_globals, s_rlink;       /* source stack indices */
  int d_memo, d_cache, d_link, d_upv, d_globals, d_loaded, d_ranchor; /* destination stack indices */
  bool rebuilt;
  unsigned flags;
  bool copied_top; /* the value being copied at depth 0 is a function copied by this call */
  const char *what;
  int first, item;
  seg_t seg[MAX_DEPTH + 4];
  int nseg;
  char path[512];
  char err[1024];
  char *dump;
  size_t dump_n, dump_cap;
} cp_t;

/* The path of the value being copied, kept as segments and written out only for a message: the
   keys stay on the source's stack while their values are copied. */
static void path_render(cp_t *c) {
  lua_State *S = c->S;
  size_t o = 0, cap = sizeof c->path;
  int w = c->first >= 0 ? snprintf(c->path, cap, "%s %d", c->what, c->first + c->item)
                        : snprintf(c->path, cap, "%s", c->what);
  if (w < 0 || (size_t)w >= cap) return;
  o = (size_t)w;
  for (int k = 0; k < c->nseg && o < cap; k++) {
    const seg_t *g = &c->seg[k];
    if (g->kind == 'm') {
      w = snprintf(c->path + o, cap - o, "[metatable]");
    } else if (g->kind == 'u') {
      w = snprintf(c->path + o, cap - o, "[upvalue %.60s]", *g->name ? g->name : "?");
    } else {
      switch (lua_type(S, g->idx)) {
        case LUA_TSTRING: w = snprintf(c->path + o, cap - o, ".%.80s", lua_tostring(S, g->idx)); break;
        case LUA_TNUMBER:
          if (lua_isinteger(S, g->idx)) w = snprintf(c->path + o, cap - o, "[%lld]", (long long)lua_tointeger(S, g->idx));
          else w = snprintf(c->path + o, cap - o, "[%g]", (double)lua_tonumber(S, g->idx));
          break;
        case LUA_TBOOLEAN: w = snprintf(c->path + o, cap - o, "[%s]", lua_toboolean(S, g->idx) ? "true" : "false"); break;
        default: w = snprintf(c->path + o, cap - o, "[%s key]", luaL_typename(S, g->idx)); break;
      }
    }
    if (w < 0) break;
    o += (size_t)w;
  }
}

static int fail(cp_t *c, const char *fmt, ...) LT_PRINTF(2, 3);
static int fail(cp_t *c, const char *fmt, ...) {
  path_render(c);
  va_list ap;
  int n = snprintf(c->err, sizeof c->err, "cannot copy %s: ", c->path);
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof c->err) vsnprintf(c->err + n, sizeof c->err - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* segments are pushed only below MAX_DEPTH levels, which copy_ref checks first */
static void seg_push(cp_t *c, char kind, int idx, const char *name) {
  if (c->nseg < MAX_DEPTH + 4) c->seg[c->nseg] = (seg_t){kind, idx, name};
  c->nseg++;
}
static void seg_pop(cp_t *c) { c->nseg--; }

/* memo[p] = the copy on top of the destination's stack */
static void memo_set(cp_t *c, const void *p) {
  lua_pushlightuserdata(c->D, (void *)p);
  lua_pushvalue(c->D, -2);
  lua_rawset(c->D, c->d_memo);
}

/* caches the copy on top of the destination's stack as that of the source value at sidx, and,
   when link, the reverse in the linked direction */
static void cache_set(cp_t *c, int sidx, bool link) {
  lua_State *S = c->S, *D = c->D;
  lua_Integer id = ++c->x->next_id;
  lua_pushvalue(S, sidx);
  lua_pushinteger(S, id);
  lua_rawset(S, c->s_anchor);
  lua_pushvalue(D, -1);
  lua_rawseti(D, c->d_cache, id);
  c->x->added++;
  if (link && c->s_rlink && c->d_ranchor) {
    lua_Integer rid = ++c->x->rev->next_id;
    lua_pushvalue(D, -1);
    lua_pushinteger(D, rid);
    lua_rawset(D, c->d_ranchor);
    lua_pushvalue(S, sidx);
    lua_rawseti(S, c->s_rlink, rid);
  }
}

/* drops the cache entries of source objects that died (their anchors went with them) */
static void sweep(cp_t *c) {
  lua_State *S = c->S, *D = c->D;
  lua_createtable(D, 0, (int)(c->x->live < (1 << 20) ? c->x->live : 1 << 20));
  int live = lua_gettop(D);
  lua_pushnil(S);
  while (lua_next(S, c->s_anchor)) {
    if (lua_isinteger(S, -1)) {
      lua_pushboolean(D, 1);
      lua_rawseti(D, live, lua_tointeger(S, -1));
    }
    lua_pop(S, 1);
  }
  lua_Integer kept = 0;
  lua_pushnil(D);
  while (lua_next(D, c->d_cache)) {
    lua_pop(D, 1);
    if (!lua_isinteger(D, -1)) continue; /* a module that failed to load */
    if (lua_rawgeti(D, live, lua_tointeger(D, -1)) == LUA_TNIL) {
      lua_pushvalue(D, -2);
      lua_pushnil(D);
      lua_rawset(D, c->d_cache); /* clearing a field during the traversal is allowed */
    } else {
      kept++;
    }
    lua_pop(D, 1);
  }
  lua_pop(D, 1);
  c->x->live = kept;
  c->x->added = 0;
}

/* pushes the object at the encoded path in the destination: 1, or 0 when there is none (nothing
   pushed; c->err says why when its module cannot be loaded there) */
/* t[k] with metamethods (called protected) */
static int index_field(lua_State *L) {
  lua_gettable(L, 1);
  return 1;
}

/* For a module name a.b.c: the longest prefix loaded in package.loaded (at index loaded), then the
   remaining fields with metamethods; pushes the value and returns true, or pushes nothing. */
static bool dotted_field(lua_State *D, int loaded, const char *name, size_t n) {
  for (size_t cut = n; cut > 0; cut--) {
    if (name[cut - 1] != '.' ) continue;
    lua_pushlstring(D, name, cut - 1);
    if (lua_rawget(D, loaded) != LUA_TTABLE) {
      lua_pop(D, 1);
      continue;
    }
    size_t at = cut;
    while (at < n) {
      size_t end = at;
      while (end < n && name[end] != '.') end++;
      lua_pushcfunction(D, index_field);
      lua_pushvalue(D, -2);
      lua_pushlstring(D, name + at, end - at);
      if (lua_pcall(D, 2, 1, 0) != LUA_OK || lua_isnil(D, -1)) {
        lua_pop(D, 2);
        return false;
      }
      lua_remove(D, -2);
      at = end + 1;
    }
    return true;
  }
  return false;
}

static int resolve(cp_t *c, const char *s, size_t len, int want) {
  lua_State *D = c->D;
  int top = lua_gettop(D);
  uint32_t n;
  if (len < 5 || s[0] != 'k') return 0;
  memcpy(&n, s + 1, 4);
  if (5 + (size_t)n > len) return 0;
  size_t k = 5 + n;
  if (n == 2 && memcmp(s + 5, "_G", 2) == 0) {
    lua_pushvalue(D, c->d_globals);
  } else {
    /* 'torch.nn' is torch.nn first, as the destination's own code sees it, then
       package.loaded['torch.nn']: a test framework that unloads modules between files leaves
       package.loaded['torch.nn'] missing, or loaded a second time, while torch.nn stays */
    if (!dotted_field(D, c->d_loaded, s + 5, n)) {
      lua_pushlstring(D, s + 5, n);
      lua_rawget(D, c->d_loaded);
    }
    if (lua_isnil(D, -1)) {
      /* a module the destination has not loaded: require it there, once (a failure is remembered
         in the cache, under a string key, and the value is then copied if it can be) */
      lua_pop(D, 1);
      lua_pushfstring(D, "!%s", lua_pushlstring(D, s + 5, n));
      lua_remove(D, -2);
      int failed = lua_rawget(D, c->d_cache) != LUA_TNIL;
      lua_pop(D, 1);
      lua_pushliteral(D, "require");
      if (failed || lua_rawget(D, c->d_globals) != LUA_TFUNCTION) {
        fail(c, "module '%.*s' cannot be loaded in the destination state", (int)n, s + 5);
        lua_settop(D, top);
        return 0;
      }
      lua_pushlstring(D, s + 5, n);
      if (lua_pcall(D, 1, 1, 0) != LUA_OK) {
        const char *m = lua_tostring(D, -1);
        fail(c, "module '%.*s' cannot be loaded in the destination state: %s", (int)n, s + 5, m ? m : "(no message)");
        lua_pushfstring(D, "!%s", lua_pushlstring(D, s + 5, n));
        lua_remove(D, -2);
        lua_pushboolean(D, 1);
        lua_rawset(D, c->d_cache);
        lua_settop(D, top);
        return 0;
      }
      lua_pop(D, 1);
      lua_pushlstring(D, s + 5, n);
      if (lua_rawget(D, c->d_loaded) == LUA_TNIL) { /* a module that does not register itself */
        lua_settop(D, top);
        return 0;
      }
    }
  }
  while (k < len) {
    char tag = s[k++];
    int t = lua_type(D, -1);
    if (tag == 'k' || tag == 'i') {
      if (t != LUA_TTABLE) break;
      const char *key = NULL;
      if (tag == 'k') {
        memcpy(&n, s + k, 4);
        key = s + k + 4;
        lua_pushlstring(D, key, n);
        k += 4 + n;
      } else {
        int64_t i;
        memcpy(&i, s + k, 8);
        lua_pushinteger(D, (lua_Integer)i);
        k += 8;
      }
      if (lua_rawget(D, -2) == LUA_TNIL && key) {
        /* a field the destination makes on first use (torch.nn, loaded by torch's __index) */
        lua_pop(D, 1);
        lua_pushcfunction(D, index_field);
        lua_pushvalue(D, -2);
        lua_pushlstring(D, key, n);
        if (lua_pcall(D, 2, 1, 0) != LUA_OK) {
          lua_pop(D, 1);
          lua_pushnil(D);
        }
      }
    } else if (tag == 'm') {
      if (!lua_getmetatable(D, -1)) break;
    } else if (tag == 'u') {
      memcpy(&n, s + k, 4);
      k += 4;
      if (t != LUA_TFUNCTION || !lua_getupvalue(D, -1, (int)n)) break;
    } else {
      break;
    }
    lua_remove(D, -2);
  }
  if (k < len || lua_type(D, -1) != want) {
    lua_settop(D, top);
    return 0;
  }
  return 1;
}

static int copy_value(cp_t *c, int i, int depth, bool as_mt);

static int copy_table(cp_t *c, int i, const void *p, int depth, bool as_mt) {
  lua_State *S = c->S, *D = c->D;
  bool cached = as_mt;
  if (!cached) {
    lua_pushliteral(S, "__index");
    cached = lua_rawget(S, i) != LUA_TNIL; /* a class */
    lua_pop(S, 1);
  }
  lua_createtable(D, (int)lua_rawlen(S, i), 0);
  int dt = lua_gettop(D);
  memo_set(c, p);
  if (cached) cache_set(c, i, true);
  lua_pushnil(S);
  while (lua_next(S, i)) {
    seg_push(c, 'k', lua_gettop(S) - 1, NULL);
    if (copy_value(c, lua_gettop(S) - 1, depth + 1, false) != 0) return -1;
    if (copy_value(c, lua_gettop(S), depth + 1, false) != 0) return -1;
    lua_rawset(D, dt);
    seg_pop(c);
    lua_pop(S, 1);
  }
  if (lua_getmetatable(S, i)) {
    seg_push(c, 'm', 0, NULL);
    if (copy_value(c, lua_gettop(S), depth + 1, true) != 0) return -1;
    if (lua_type(D, -1) != LUA_TTABLE) {
      lua_pop(D, 1);
    } else {
      lua_setmetatable(D, dt);
    }
    seg_pop(c);
    lua_pop(S, 1);
  }
  return 0;
}

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  cp_t *c = ud;
  if (c->dump_n + sz > c->dump_cap) {
    size_t cap = c->dump_cap ? c->dump_cap : 4096;
    while (cap < c->dump_n + sz) cap *= 2;
    char *q = realloc(c->dump, cap);
    if (!q) return 1;
    c->dump = q;
    c->dump_cap = cap;
  }
  memcpy(c->dump + c->dump_n, p, sz);
  c->dump_n += sz;
  return 0;
}

static int copy_function(cp_t *c, int i, const void *p, int depth) {
  lua_State *S = c->S, *D = c->D;
  c->dump_n = 0;
  lua_pushvalue(S, i);
  int rc = lua_dump(S, dump_writer, c, 0);
  lua_pop(S, 1);
  if (rc != 0) return fail(c, "out of memory while dumping a function");
  if (luaL_loadbufferx(D, c->dump, c->dump_n, "=(copied function)", "b") != LUA_OK) {
    int r = fail(c, "its bytecode does not load in the destination state: %s", lua_tostring(D, -1));
    lua_pop(D, 1);
    return r;
  }
  int df = lua_gettop(D);
  if (depth == 0) c->copied_top = true;
  memo_set(c, p);
  cache_set(c, i, true);
  for (int n = 1;; n++) {
    const char *name = lua_getupvalue(S, i, n);
    if (!name) break;
    void *id = lua_upvalueid(S, i, n);
    lua_pushlightuserdata(D, id);
    if (lua_rawget(D, c->d_upv) == LUA_TTABLE) { /* shared with a function copied in this call */
      lua_rawgeti(D, -1, 1);
      lua_rawgeti(D, -2, 2);
      lua_upvaluejoin(D, df, n, -2, (int)lua_tointeger(D, -1));
      lua_pop(D, 3);
      lua_pop(S, 1);
      continue;
    }
    lua_pop(D, 1);
    lua_pushlightuserdata(D, id);
    lua_createtable(D, 2, 0);
    lua_pushvalue(D, df);
    lua_rawseti(D, -2, 1);
    lua_pushinteger(D, n);
    lua_rawseti(D, -2, 2);
    lua_rawset(D, c->d_upv);
    seg_push(c, 'u', 0, name);
    if (strcmp(name, "_ENV") == 0 && lua_type(S, -1) == LUA_TTABLE) {
      /* a function runs in the destination's environment, even when the source gave it its own
         (a sandbox, a test framework's) */
      lua_pushvalue(D, c->d_globals);
    } else if (copy_value(c, lua_gettop(S), depth + 1, false) != 0) {
      return -1;
    }
    lua_setupvalue(D, df, n);
    seg_pop(c);
    lua_pop(S, 1);
  }
  return 0;
}

/* the object at i by its path in package.loaded: 1 pushed, 0 none, -1 failure */
static int by_path(cp_t *c, int i) {
  lua_State *S = c->S;
  lua_pushvalue(S, i);
  if (lua_rawget(S, c->s_paths) != LUA_TSTRING) {
    lua_pop(S, 1);
    return 0;
  }
  size_t len;
  const char *s = lua_tolstring(S, -1, &len);
  c->err[0] = '\0';
  int r = resolve(c, s, len, lua_type(S, i));
  if (r == 0 && (lua_iscfunction(S, i) || lua_type(S, i) == LUA_TUSERDATA)) {
    char rd[300];
    path_readable(s, len, rd, sizeof rd);
    if (c->err[0]) { /* its module: the message is set */
      r = -1;
    } else {
      r = fail(c, "the %s at %s (in package.loaded) does not exist in the destination state",
               lua_type(S, i) == LUA_TUSERDATA ? "userdata" : "C function", rd);
    }
  }
  lua_pop(S, 1);
  return r;
}

static int copy_ref(cp_t *c, int i, int depth, bool as_mt, bool subst) {
  lua_State *S = c->S, *D = c->D;
  if (depth > MAX_DEPTH) return fail(c, "it is nested deeper than %d levels", MAX_DEPTH);
  if (!lua_checkstack(S, 12) || !lua_checkstack(D, 12)) return fail(c, "it is nested too deeply (Lua stack overflow)");
  const void *p = lua_topointer(S, i);
  if (subst && c->s_subst) {
    lua_pushvalue(S, i);
    if (lua_rawget(S, c->s_subst) != LUA_TNIL) {
      int t = lua_type(S, -1);
      int r = 0;
      if (t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TUSERDATA)
        r = copy_ref(c, lua_gettop(S), depth, as_mt, false);
      else
        r = copy_value(c, lua_gettop(S), depth, as_mt);
      if (r == 0) memo_set(c, p);
      lua_pop(S, 1);
      return r;
    }
    lua_pop(S, 1);
  }
  lua_pushlightuserdata(D, (void *)p);
  if (lua_rawget(D, c->d_memo) != LUA_TNIL) return 0;
  lua_pop(D, 1);
  int t = lua_type(S, i);
  if (t == LUA_TUSERDATA) {
    lt_tensor_t *tt = lt_lua_totensor(S, i);
    if (tt) {
      lt_retain(tt);
      lt_lua_pushtensor(D, tt);
      memo_set(c, p);
      return 0;
    }
    lt_device_t *dv = luaL_testudata(S, i, LT_DEVICE_MT);
    if (dv) {
      lt_lua_pushdevice(D, *dv);
      memo_set(c, p);
      return 0;
    }
  }
  if (lua_rawequal(S, i, c->s_globals)) {
    lua_pushvalue(D, c->d_globals);
    memo_set(c, p);
    return 0;
  }
  lua_pushvalue(S, i);
  if (lua_rawget(S, c->s_anchor) == LUA_TNUMBER) {
    lua_Integer id = lua_tointeger(S, -1);
    lua_pop(S, 1);
    if (lua_rawgeti(D, c->d_cache, id) != LUA_TNIL) {
      memo_set(c, p);
      return 0;
    }
    lua_pop(D, 1);
    if (lua_rawgeti(D, c->d_link, id) != LUA_TNIL) {
      memo_set(c, p);
      return 0;
    }
    lua_pop(D, 1);
  } else {
    lua_pop(S, 1);
  }
  int r = by_path(c, i);
  if (r == 0 && !c->rebuilt && (t == LUA_TUSERDATA || lua_iscfunction(S, i))) {
    /* perhaps reachable since the table was built */
    c->rebuilt = true;
    push_paths(S, true);
    lua_replace(S, c->s_paths);
    r = by_path(c, i);
  }
  if (r < 0) return -1;
  if (r > 0) {
    cache_set(c, i, false);
    memo_set(c, p);
    return 0;
  }
  switch (t) {
    case LUA_TTABLE: return copy_table(c, i, p, depth, as_mt);
    case LUA_TFUNCTION:
      if (lua_iscfunction(S, i))
        return fail(c, "a C function (not reachable from package.loaded) cannot move between Lua states");
      return copy_function(c, i, p, depth);
    default: {
      int mt = luaL_getmetafield(S, i, "__name");
      char name[64];
      snprintf(name, sizeof name, "%s", mt == LUA_TSTRING ? lua_tostring(S, -1) : "userdata");
      if (mt != LUA_TNIL) lua_pop(S, 1);
      return fail(c, "a %s (a userdata other than a tensor or a device, not reachable from package.loaded) "
                  "cannot move between Lua states", name);
    }
  }
}

static int copy_value(cp_t *c, int i, int depth, bool as_mt) {
  lua_State *S = c->S, *D = c->D;
  switch (lua_type(S, i)) {
    case LUA_TNIL: lua_pushnil(D); return 0;
    case LUA_TBOOLEAN: lua_pushboolean(D, lua_toboolean(S, i)); return 0;
    case LUA_TNUMBER:
      if (lua_isinteger(S, i)) lua_pushinteger(D, lua_tointeger(S, i));
      else lua_pushnumber(D, lua_tonumber(S, i));
      return 0;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(S, i, &len);
      lua_pushlstring(D, s, len);
      return 0;
    }
    case LUA_TLIGHTUSERDATA: lua_pushlightuserdata(D, lua_touserdata(S, i)); return 0;
    case LUA_TTABLE:
    case LUA_TFUNCTION:
    case LUA_TUSERDATA: return copy_ref(c, i, depth, as_mt, true);
    case LUA_TTHREAD: return fail(c, "a coroutine cannot move between Lua states");
    default: return fail(c, "a %s cannot move between Lua states", luaL_typename(S, i));
  }
}

/* copies again the upvalues of the Lua function at si (source) into its cached copy at df, so that
   a function given again sees the current values of its upvalues */
static int refresh_upvalues(cp_t *c, int si, int df) {
  lua_State *S = c->S, *D = c->D;
  lua_pushvalue(S, si);
  bool mapped = lua_rawget(S, c->s_paths) != LUA_TNIL; /* a library's function: leave it be */
  lua_pop(S, 1);
  if (!mapped && c->s_subst) {
    lua_pushvalue(S, si);
    mapped = lua_rawget(S, c->s_subst) != LUA_TNIL;
    lua_pop(S, 1);
  }
  if (mapped || lua_type(D, df) != LUA_TFUNCTION || lua_iscfunction(D, df)) return 0;
  for (int n = 1;; n++) {
    const char *name = lua_getupvalue(S, si, n);
    if (!name) break;
    if (strcmp(name, "_ENV") == 0 && lua_type(S, -1) == LUA_TTABLE) {
      lua_pop(S, 1);
      continue;
    }
    seg_push(c, 'u', 0, name);
    if (copy_value(c, lua_gettop(S), 1, false) != 0) return -1;
    lua_setupvalue(D, df, n);
    seg_pop(c);
    lua_pop(S, 1);
  }
  return 0;
}

/* in the destination, protected: returns the copies, or nothing after a failure (c->err set) */
static int copy_main(lua_State *D) {
  cp_t *c = lua_touserdata(D, 1);
  c->D = D;
  if (!lua_checkstack(D, c->n + 20)) return luaL_error(D, "too many values (Lua stack overflow)");
  lua_newtable(D);
  c->d_memo = lua_gettop(D);
  push_reftable(D, &c->x->cache_ref, NULL);
  c->d_cache = lua_gettop(D);
  push_reftable(D, &c->x->link_ref, "v");
  c->d_link = lua_gettop(D);
  lua_newtable(D);
  c->d_upv = lua_gettop(D);
  lua_rawgeti(D, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  c->d_globals = lua_gettop(D);
  lua_getfield(D, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  c->d_loaded = lua_gettop(D);
  c->d_ranchor = 0;
  if (c->x->rev) {
    push_reftable(D, &c->x->rev->anchor_ref, "k");
    c->d_ranchor = lua_gettop(D);
  }
  if (c->x->added >= 64 && c->x->added >= c->x->live) sweep(c);
  int base = lua_gettop(D);
  for (int k = 0; k < c->n; k++) {
    c->item = k;
    c->nseg = 0;
    c->copied_top = false;
    int si = c->s_idx + k;
    if (copy_value(c, si, 0, false) != 0) return 0;
    if ((c->flags & LT_TRANSFER_FRESH_UPVALUES) && !c->copied_top && lua_type(c->S, si) == LUA_TFUNCTION &&
        !lua_iscfunction(c->S, si) && refresh_upvalues(c, si, lua_gettop(D)) != 0)
      return 0;
  }
  return lua_gettop(D) - base;
}

int lt_transfer_copy(lt_transfer_t *x, lua_State *S, int idx, int n, int subst, lua_State *D,
                     const char *what, int first, unsigned flags) {
  if (n <= 0) return LT_OK;
  idx = lua_absindex(S, idx);
  subst = subst ? lua_absindex(S, subst) : 0;
  int stop = lua_gettop(S), dtop = lua_gettop(D);
  if (!lua_checkstack(S, 40) || !lua_checkstack(D, 10)) return lt_error("copying a value between Lua states: Lua stack overflow");
  cp_t c;
  memset(&c, 0, sizeof c);
  c.x = x;
  c.S = S;
  c.s_idx = idx;
  c.n = n;
  c.s_subst = subst && lua_type(S, subst) == LUA_TTABLE ? subst : 0;
  c.what = what;
  c.first = first;
  c.flags = flags;
  push_reftable(S, &x->anchor_ref, "k");
  c.s_anchor = lua_gettop(S);
  push_paths(S, false);
  c.s_paths = lua_gettop(S);
  lua_rawgeti(S, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  c.s_globals = lua_gettop(S);
  if (x->rev) {
    push_reftable(S, &x->rev->link_ref, "v");
    c.s_rlink = lua_gettop(S);
  }
  lua_pushcfunction(D, copy_main);
  lua_pushlightuserdata(D, &c);
  int st = lua_pcall(D, 1, LUA_MULTRET, 0);
  free(c.dump);
  if (st != LUA_OK) {
    const char *m = lua_tostring(D, -1);
    path_render(&c);
    lt_error("cannot copy %s: %s", c.path, m ? m : "(error object is not a string)");
    lua_settop(D, dtop);
    lua_settop(S, stop);
    return LT_ERR;
  }
  lua_settop(S, stop);
  if (lua_gettop(D) - dtop != n) {
    lua_settop(D, dtop);
    return lt_error("%s", c.err[0] ? c.err : "cannot copy a value between Lua states");
  }
  return LT_OK;
}
