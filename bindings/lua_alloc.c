/* An allocator for the Lua states lutorch makes (the interpreter's, lutorch_newstate's, the
   DataLoader workers' and the Lua threads'). Lua's small blocks (up to 128 bytes: a tensor's box,
   tables, short strings, closures, upvalues) come from per-size free lists carved from 64 KiB
   slabs; larger ones from malloc. Every tensor op makes a box and the collector frees boxes in
   bursts of hundreds, which overflow glibc's per-thread cache: its malloc and free cost ~200
   instructions an op, these ~20. A state runs on one thread at a time, so nothing here locks. The
   slabs go back to the system when the state closes: lua_close frees the state's first block (its
   global state) last of all.

   Tensor boxes (bindings/tensor.c) carry no finalizer in these states: lt_lua_newbox marks the
   next allocation as a box, which then comes from SLAB-aligned slabs of boxes only (their
   addresses in a set), and when Lua frees a block of the box size from one of those slabs, the
   box's tensor is released there (lt_lua_box_release; where a userdata's memory starts in its
   block is measured once, on a state of its own). A finalizer costs Lua a protected call and an
   extra collection cycle for each object: ~30 ns a tensor op. Nothing here calls Lua: what a
   released tensor frees must not either (bindings/autograd.c defers the registry references of
   Lua functions). Sanitizer builds keep __gc (and malloc for all).

   Lua passes every block's size back when it frees or resizes it, so blocks carry no header: a
   block freed with size n is at least n rounded up to 16 bytes long. Resizing within a size keeps
   the block; anything else moves it. A shrink must not fail (Lua counts on it): when no new block
   can be had, the old one stays, and being longer than its new size, it serves that size's list
   later. */
#include "bindings/lua_alloc.h"
#include "bindings/binding.h"

#include <lauxlib.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAIN 16
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NCLASS 0 /* sanitizer builds: every block from malloc, where the sanitizer sees it */
#define MANAGED_BOXES 0
#else
#define NCLASS 8 /* 16, 32, ..., 128 bytes */
#define MANAGED_BOXES 1
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
  lua_State *main;     /* the state's main thread */
  /* boxes: blocks of box_size from SLAB-aligned slabs of their own, whose addresses are in a set */
  size_t box_size;     /* 0 until the first box */
  void *box_free;
  char *box_cur, *box_end;
  uintptr_t *box_slabs; /* open addressing; 0 is empty */
  size_t box_cap, box_n;
} arena_t;

static _Thread_local int box_next; /* the next userdata this thread makes is a box */
static ptrdiff_t box_off;           /* from a userdata's block to its memory (lt_lua_newstate) */
static int probe_ok;                /* box_off is known */

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

static size_t hash_slab(uintptr_t base, size_t cap) { return (size_t)((base / SLAB) * 0x9E3779B97F4A7C15u) & (cap - 1); }

static int box_slab_has(const arena_t *a, const void *p) {
  if (!a->box_cap) return 0;
  uintptr_t base = (uintptr_t)p & ~(uintptr_t)(SLAB - 1);
  for (size_t i = hash_slab(base, a->box_cap);; i = (i + 1) & (a->box_cap - 1)) {
    if (a->box_slabs[i] == base) return 1;
    if (a->box_slabs[i] == 0) return 0;
  }
}

static int box_slab_add(arena_t *a, uintptr_t base) {
  if (2 * (a->box_n + 1) > a->box_cap) {
    size_t cap = a->box_cap ? 2 * a->box_cap : 16;
    uintptr_t *v = calloc(cap, sizeof *v);
    if (!v) return 0;
    for (size_t j = 0; j < a->box_cap; j++) {
      if (!a->box_slabs[j]) continue;
      size_t i = hash_slab(a->box_slabs[j], cap);
      while (v[i]) i = (i + 1) & (cap - 1);
      v[i] = a->box_slabs[j];
    }
    free(a->box_slabs);
    a->box_slabs = v;
    a->box_cap = cap;
  }
  size_t i = hash_slab(base, a->box_cap);
  while (a->box_slabs[i]) i = (i + 1) & (a->box_cap - 1);
  a->box_slabs[i] = base;
  a->box_n++;
  return 1;
}

static void *box_alloc(arena_t *a, size_t n) {
  if (a->box_size && n != a->box_size) return NULL; /* not a box after all: the caller goes on */
  void *p = a->box_free;
  if (p) {
    a->box_free = *(void **)p;
    return p;
  }
  size_t size = (n + GRAIN - 1) / GRAIN * GRAIN;
  if ((size_t)(a->box_end - a->box_cur) < size) {
    char *s = aligned_alloc(SLAB, SLAB);
    if (!s) return NULL;
    if (!box_slab_add(a, (uintptr_t)s)) {
      free(s);
      return NULL;
    }
    a->box_cur = s;
    a->box_end = s + SLAB;
  }
  a->box_size = n;
  p = a->box_cur;
  a->box_cur += size;
  return p;
}

static _Thread_local int tore_down; /* a closing state gave its arena back (lt_lua_newstate) */

static void arena_free(arena_t *a) {
  for (slab_t *s = a->slabs, *next; s; s = next) {
    next = s->next;
    free(s);
  }
  for (size_t i = 0; i < a->box_cap; i++)
    if (a->box_slabs[i]) free((void *)a->box_slabs[i]);
  free(a->box_slabs);
  tore_down = 1;
  free(a);
}

static void *alloc_f(void *ud, void *ptr, size_t osize, size_t nsize) {
  arena_t *a = ud;
  if (!ptr) { /* osize is the kind of object */
    if (nsize == 0) return NULL;
    if (box_next && osize == LUA_TUSERDATA) {
      void *b = box_alloc(a, nsize);
      if (b) {
        box_next = 0;
        return b;
      }
    }
    void *p = nsize <= SMALL ? small_alloc(a, class_of(nsize)) : malloc(nsize);
    if (!a->first) a->first = p;
    return p;
  }
  if (nsize == 0) {
    if (osize == a->box_size && box_slab_has(a, ptr)) {
      lt_lua_box_release((char *)ptr + box_off);
      *(void **)ptr = a->box_free;
      a->box_free = ptr;
    } else if (osize <= SMALL) {
      small_free(a, ptr, class_of(osize));
    } else {
      free(ptr);
      if (ptr == a->first) { /* lua_close's last free: boxes freed while it closed may have left
                                registry references to drop (bindings/autograd.c) */
        if (a->main) lt_lua_unrefs_forget(a->main);
        arena_free(a);
      }
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

int lt_lua_boxes_managed(lua_State *L) { return MANAGED_BOXES && probe_ok && lua_getallocf(L, NULL) == alloc_f; }

void *lt_lua_newbox(lua_State *L, size_t size) {
  if (!lt_lua_boxes_managed(L)) return lua_newuserdatauv(L, size, 0);
  box_next = 1;
  void *box = lua_newuserdatauv(L, size, 0); /* may run finalizers after the box is made */
  box_next = 0;
  return box;
}

/* ---- where a userdata's memory starts in its block: Lua's layout, measured once on a state of
   its own ---- */

static void *probe_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (!ptr && osize == LUA_TUSERDATA) *(void **)ud = p;
  return p;
}

static int probe_f(lua_State *L) {
  void **block = lua_touserdata(L, 1);
  char *u = lua_newuserdatauv(L, 16, 0);
  lua_pushinteger(L, (lua_Integer)(u - (char *)*block));
  return 1;
}

static void probe(void) {
  void *block = NULL;
  lua_State *L = lua_newstate(probe_alloc, &block);
  if (!L) return;
  lua_pushcfunction(L, probe_f);
  lua_pushlightuserdata(L, &block);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && block) {
    box_off = (ptrdiff_t)lua_tointeger(L, -1);
    probe_ok = 1;
  }
  lua_close(L);
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
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, probe);
  arena_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  tore_down = 0;
  lua_State *L = lua_newstate(alloc_f, a);
  if (!L) { /* the arena went with the state's first block, when there was one */
    if (!tore_down) arena_free(a);
    return NULL;
  }
  a->main = L;
  lua_atpanic(L, panic);
  lua_setwarnf(L, warn_off, L);
  return L;
}
