/* An allocator for the Lua states lutorch makes (the interpreter's, lutorch_newstate's, the
   DataLoader workers' and the Lua threads'). Lua's small blocks (up to 128 bytes: a tensor's box,
   tables, short strings, closures, upvalues) come from per-size free lists carved from 64 KiB
   slabs; larger ones from malloc. Every tensor op makes a box and the collector frees boxes in
   bursts of hundreds, which overflow glibc's per-thread cache: its malloc and free cost ~200
   instructions an op, these ~20. A state runs on one thread at a time, so nothing here locks. The
   slabs go back to the system when the state closes: lua_close frees the state's first block (its
   global state) last of all.

   Lua passes every block's size back when it frees or resizes it, so blocks carry no header: a
   block freed with size n is at least n rounded up to 16 bytes long. Resizing within a size keeps
   the block; anything else moves it. A shrink must not fail (Lua counts on it): when no new block
   can be had, the old one stays, and being longer than its new size, it serves that size's list
   later. */
#include "bindings/lua_alloc.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAIN 16
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCLASS 0 /* sanitizer builds: every block from malloc, where the sanitizer sees it */
#else
#define NCLASS 8 /* 16, 32, ..., 128 bytes */
#endif
#define SMALL (GRAIN * NCLASS)
#define SLAB ((size_t)64 << 10)

typedef struct slab {
  struct slab *next;
} slab_t;

typedef struct {
  void *free_[NCLASS > 0 ? NCLASS : 1]; /* each free block holds the next */
  char *cur, *end;     /* the unused rest of the newest slab */
  slab_t *slabs;
  void *first;         /* the state's first block, freed last by lua_close */
} arena_t;

static inline int class_of(size_t n) { return (int)((n - 1) / GRAIN); } /* n in 1..SMALL */

static void *small_alloc(arena_t *a, int c) {
  void *p = a->free_[c];
  if (p) {
    a->free_[c] = *(void **)p;
    return p;
  }
  size_t n = (size_t)(c + 1) * GRAIN;
  if ((size_t)(a->end - a->cur) < n) {
    slab_t *s = malloc(SLAB);
    if (!s) return NULL;
    s->next = a->slabs;
    a->slabs = s;
    a->cur = (char *)s + GRAIN; /* the header's room, keeping blocks 16-byte aligned */
    a->end = (char *)s + SLAB;
  }
  p = a->cur;
  a->cur += n;
  return p;
}

static void small_free(arena_t *a, void *p, int c) {
  *(void **)p = a->free_[c];
  a->free_[c] = p;
}

static _Thread_local int tore_down; /* a closing state gave its arena back (lt_lua_newstate) */

static void arena_free(arena_t *a) {
  for (slab_t *s = a->slabs, *next; s; s = next) {
    next = s->next;
    free(s);
  }
  tore_down = 1;
  free(a);
}

static void *alloc_f(void *ud, void *ptr, size_t osize, size_t nsize) {
  arena_t *a = ud;
  if (!ptr) { /* osize is the kind of object */
    if (nsize == 0) return NULL;
    void *p = nsize <= SMALL ? small_alloc(a, class_of(nsize)) : malloc(nsize);
    if (!a->first) a->first = p;
    return p;
  }
  if (nsize == 0) {
    if (osize <= SMALL) {
      small_free(a, ptr, class_of(osize));
    } else {
      free(ptr);
      if (ptr == a->first) arena_free(a); /* lua_close's last free */
    }
    return NULL;
  }
  if (osize <= SMALL && nsize <= SMALL && class_of(osize) == class_of(nsize)) return ptr;
  if (osize > SMALL && nsize > SMALL) {
    void *p = realloc(ptr, nsize);
    return p ? p : nsize <= osize ? ptr : NULL;
  }
  void *p = nsize <= SMALL ? small_alloc(a, class_of(nsize)) : malloc(nsize);
  if (!p) return nsize <= osize ? ptr : NULL;
  memcpy(p, ptr, osize < nsize ? osize : nsize);
  if (osize <= SMALL) small_free(a, ptr, class_of(osize));
  else free(ptr);
  return p;
}

/* ---- luaL_newstate's panic function and warnings (lauxlib.c keeps its own static) ---- */

static int panic(lua_State *L) {
  const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
  fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", msg);
  fflush(stderr);
  return 0;
}

static void warn_off(void *ud, const char *msg, int tocont);
static void warn_on(void *ud, const char *msg, int tocont);
static void warn_cont(void *ud, const char *msg, int tocont);

/* a control message ("@on", "@off"): true when msg is one */
static int warn_control(lua_State *L, const char *msg, int tocont) {
  if (tocont || *msg != '@') return 0;
  if (strcmp(msg, "@off") == 0) lua_setwarnf(L, warn_off, L);
  else if (strcmp(msg, "@on") == 0) lua_setwarnf(L, warn_on, L);
  return 1;
}

static void warn_off(void *ud, const char *msg, int tocont) { warn_control((lua_State *)ud, msg, tocont); }

static void warn_cont(void *ud, const char *msg, int tocont) {
  lua_State *L = ud;
  fputs(msg, stderr);
  if (tocont) {
    lua_setwarnf(L, warn_cont, L);
  } else {
    fputs("\n", stderr);
    fflush(stderr);
    lua_setwarnf(L, warn_on, L);
  }
}

static void warn_on(void *ud, const char *msg, int tocont) {
  if (warn_control((lua_State *)ud, msg, tocont)) return;
  fputs("Lua warning: ", stderr);
  warn_cont(ud, msg, tocont);
}

lua_State *lt_lua_newstate(void) {
  arena_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  tore_down = 0;
  lua_State *L = lua_newstate(alloc_f, a);
  if (!L) { /* the arena went with the state's first block, when there was one */
    if (!tore_down) arena_free(a);
    return NULL;
  }
  lua_atpanic(L, panic);
  lua_setwarnf(L, warn_off, L);
  return L;
}
