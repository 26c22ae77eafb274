/*
 * main.c - the lutorch interpreter: `lua` with the torch library preloaded.
 *
 * Follows Lua 5.4's lua.c: options are collected first, then, in protected
 * mode, the libraries are opened, `arg` is built, LUA_INIT_5_4/LUA_INIT run,
 * then -e/-l in order, the script, and the REPL.
 *
 *   lutorch [options] [script [args]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua_alloc.h"
#include "repl.h"

#include "lutorch.h"

#ifndef LUTORCH_VERSION
#define LUTORCH_VERSION "0.1.0"
#endif

#define PROGNAME "lutorch"

/* Bits for the options seen. */
enum {
  HAS_ERROR = 1, /* bad option */
  HAS_I = 2,     /* -i */
  HAS_V = 4,     /* -v */
  HAS_E = 8,     /* -e */
  HAS_UE = 16,   /* -E */
  HAS_H = 32     /* -h, --help */
};

static void print_version(void) {
  printf("%s %s (%s)\n", PROGNAME, LUTORCH_VERSION, LUA_RELEASE);
  fflush(stdout);
}

static void print_usage(FILE *f) {
  fprintf(f,
          "usage: %s [options] [script [args]]\n"
          "Available options are:\n"
          "  -e stat   execute string 'stat'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -l mod    require library 'mod' into global 'mod'\n"
          "  -l g=mod  require library 'mod' into global 'g'\n"
          "  -v        show version information\n"
          "  -E        ignore environment variables\n"
          "  -W        turn warnings on\n"
          "  -h        show this help (also --help)\n"
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n",
          PROGNAME);
  fflush(f);
}

static void bad_option(const char *opt) {
  if (opt[1] == 'e' || opt[1] == 'l')
    fprintf(stderr, "%s: '%s' needs argument\n", PROGNAME, opt);
  else
    fprintf(stderr, "%s: unrecognized option '%s'\n", PROGNAME, opt);
  print_usage(stderr);
}

/*
 * Scans the options.  *first gets the index of the script (argc when there
 * is none) or, on HAS_ERROR, of the bad option.
 */
static int collect_args(char **argv, int argc, int *first) {
  int args = 0, i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    *first = i;
    if (a[0] != '-') return args; /* the script */
    switch (a[1]) {
      case '-':
        if (strcmp(a, "--help") == 0) return args | HAS_H;
        if (a[2] != '\0') return HAS_ERROR;
        *first = i + 1;
        return args;
      case '\0': /* "-": the script is stdin */
        return args;
      case 'h':
        if (a[2] != '\0') return HAS_ERROR;
        return args | HAS_H;
      case 'E':
        if (a[2] != '\0') return HAS_ERROR;
        args |= HAS_UE;
        break;
      case 'W':
        if (a[2] != '\0') return HAS_ERROR;
        break;
      case 'i':
        args |= HAS_I; /* -i implies -v */
        /* FALLTHROUGH */
      case 'v':
        if (a[2] != '\0') return HAS_ERROR;
        args |= HAS_V;
        break;
      case 'e':
        args |= HAS_E;
        /* FALLTHROUGH */
      case 'l': /* both need an argument */
        if (a[2] == '\0') {
          i++;
          if (i >= argc || argv[i][0] == '-') return HAS_ERROR;
        }
        break;
      default:
        return HAS_ERROR;
    }
  }
  *first = argc;
  return args;
}

/* arg[0] is the script, arg[1..] its arguments, negative indices the
 * interpreter and its options. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  int i, narg;
  if (script == argc) script = 0; /* no script: arg[0] is the interpreter */
  narg = argc - (script + 1);
  lua_createtable(L, narg > 0 ? narg : 0, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = lutorch_docall(L, 0, 0);
  return lutorch_report(L, status, PROGNAME);
}

static int dofile(lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l mod / -l g=mod: g = require(mod). */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *mod = eq != NULL ? eq + 1 : spec;
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  status = lutorch_docall(L, 1, 1);
  if (status == LUA_OK) {
    if (eq != NULL)
      lua_pushlstring(L, spec, (size_t)(eq - spec));
    else
      lua_pushstring(L, spec);
    lua_insert(L, -2);
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1); /* the name */
  }
  return lutorch_report(L, status, PROGNAME);
}

/* Pushes arg[1..#arg] for the script's `...`. */
static int push_args(lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE)
    luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i); /* the table */
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  int status;
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0)
    fname = NULL; /* stdin */
  status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = push_args(L);
    status = lutorch_docall(L, n, LUA_MULTRET);
  }
  return lutorch_report(L, status, PROGNAME);
}

/* Runs -e and -l (and applies -W) in order; 0 if one failed. */
static int run_args(lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int opt = argv[i][1];
    switch (opt) {
      case 'e':
      case 'l': {
        const char *extra = argv[i] + 2;
        int status;
        if (*extra == '\0') extra = argv[++i];
        status = opt == 'e' ? dostring(L, extra, "=(command line)")
                            : dolibrary(L, extra);
        if (status != LUA_OK) return 0;
        break;
      }
      case 'W':
        lua_warning(L, "@on", 0);
        break;
      default:
        break;
    }
  }
  return 1;
}

/* LUA_INIT_5_4 or LUA_INIT: "@file" runs the file, else the code. */
static int handle_luainit(lua_State *L) {
  const char *name = "=LUA_INIT_5_4";
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=LUA_INIT";
    init = getenv(name + 1);
  }
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, name);
}

/* The main program, run in protected mode; returns true on success. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script = argc;
  int args = collect_args(argv, argc, &script);
  int optlim = script < argc ? script : argc; /* first non-option */
  luaL_checkversion(L);
  if (args == HAS_ERROR) {
    bad_option(argv[script]);
    return 0;
  }
  if (args & HAS_H) {
    print_usage(stdout);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (args & HAS_V) print_version();
  if (args & HAS_UE) { /* tell the libraries to ignore LUA_PATH etc. */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  lutorch_openlibs(L);
  create_arg_table(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (!(args & HAS_UE) && handle_luainit(L) != LUA_OK) return 0;
  if (!run_args(L, argv, optlim)) return 0;
  if (script < argc && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & HAS_I) {
    lutorch_repl(L);
  } else if (script == argc && !(args & (HAS_E | HAS_V))) {
    if (isatty(STDIN_FILENO)) {
      print_version();
      lutorch_repl(L);
    } else if (dofile(L, NULL) != LUA_OK) {
      return 0;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

/*
 * OpenMP's idle workers spin before they sleep: libgomp's default is 300000 turns (about 10 ms here)
 * after every parallel region and at every barrier. On a quiet machine that is harmless; on a busy
 * one (another program, a data loader's threads, a second training run) a spinning worker holds a
 * core that its partner needs, and a training step can run tens of times slower. libgomp reads
 * GOMP_SPINCOUNT once, in its constructor, before main; so unless the user chose a policy
 * (GOMP_SPINCOUNT or OMP_WAIT_POLICY), the interpreter sets a short spin (about 0.3 ms: longer than
 * the gaps between the kernels of a step).
 *
 * It does so before any library's constructor runs, from the executable's .preinit_array: there
 * libc has not yet set environ (setenv would be lost), but the array of the environment's strings
 * that libc and libgomp will read is the one the function is given, so the entry of the shell's
 * `_` (the program's path, which no library reads) lends its place to GOMP_SPINCOUNT until main
 * puts it back (and sets GOMP_SPINCOUNT properly, for child processes). Without a `_` (env -i),
 * main starts the program again, once, with the variable set (an exec: about 4 ms more here); if
 * that fails, it goes on with libgomp's defaults.
 */
#define SPINCOUNT "10000"

static char spin_entry[] = "GOMP_SPINCOUNT=" SPINCOUNT;
static char **lent_slot, *lent_entry; /* the `_` entry that spin_entry stands in for */

static bool has_value(char **envp, const char *name) {
  size_t n = strlen(name);
  for (char **e = envp; *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=' && (*e)[n + 1] != '\0') return true;
  return false;
}

static void short_spin_preinit(int argc, char **argv, char **envp) {
  (void)argc;
  (void)argv;
  if (!envp || has_value(envp, "GOMP_SPINCOUNT") || has_value(envp, "OMP_WAIT_POLICY")) return;
  for (char **e = envp; *e; e++) {
    if ((*e)[0] == '_' && (*e)[1] == '=') {
      lent_slot = e;
      lent_entry = *e;
      *e = spin_entry;
      return;
    }
  }
}
__attribute__((section(".preinit_array"), used)) static void (*const lt_preinit)(int, char **, char **) =
    short_spin_preinit;

static void exec_with_short_spin(char **argv) {
  if (lent_slot) { /* libgomp has read it: `_` back, and the variable for child processes */
    *lent_slot = lent_entry;
    lent_slot = NULL;
    (void)setenv("GOMP_SPINCOUNT", SPINCOUNT, 1);
    return;
  }
  const char *spin = getenv("GOMP_SPINCOUNT"), *policy = getenv("OMP_WAIT_POLICY");
  if ((spin && *spin) || (policy && *policy)) return;
  if (setenv("GOMP_SPINCOUNT", SPINCOUNT, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT");
}

int main(int argc, char **argv) {
  int status, ok;
  exec_with_short_spin(argv);
  lua_State *L = lt_lua_newstate();
  if (L == NULL) {
    fprintf(stderr, "%s: cannot create state: not enough memory\n", PROGNAME);
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP); /* no collection while building the state */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  status = lua_pcall(L, 2, 1, 0);
  ok = lua_toboolean(L, -1);
  lutorch_report(L, status, PROGNAME);
  lua_close(L);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
