/*
 * repl.c - the lutorch read-eval-print loop.
 *
 * Modelled on the REPL of Lua 5.4's lua.c (loadline/addreturn/multiline,
 * docall with a traceback, the SIGINT hook that raises "interrupted!"),
 * with these differences:
 *
 *  - Input comes from GNU readline when stdin is a terminal, through its
 *    callback interface driven by pselect(), so that Ctrl-C at the prompt
 *    discards the line (and any pending continuation lines) and shows a fresh
 *    prompt instead of killing the process.
 *  - When stdin is not a terminal (input piped in), lines are read with
 *    getline() and the prompts are still written to stdout, as lua.c does
 *    when built without readline: `printf '1+1\n' | lutorch -i` prints
 *    "> 2" followed by "> " and a newline at the end of input.  Nothing is
 *    echoed and no history is read or written in that mode.
 *  - A line is tried first as `return <line>`, then as a statement; both
 *    forms are also tried on multi-line input, so expressions may span
 *    lines.  A trailing `;` suppresses printing of an expression's values.
 *  - Results are printed with luaL_tolstring (so `__tostring` is honoured),
 *    separated by tabs.
 *  - Tab completion of global names, keywords, fields after `a.b.` and
 *    methods after `a:`, and of file names inside a string literal.
 *    Completion never runs Lua code: it only reads tables raw and follows
 *    metatables whose `__methods`/`__index` are tables.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl.h"

#define PROMPT1 "> "
#define PROMPT2 ">> "
#define HISTORY_FILE ".lutorch_history"
#define HISTORY_MAX 1000
/* How many metatable levels completion follows (guards against cycles). */
#define MAX_SCOPE_DEPTH 16
/* Characters that end a word for Lua completion; '.' and ':' are not among
 * them so that the word is a whole path such as "torch.nn.Lin". */
#define LUA_WORD_BREAKS " \t\n\"'`@$><=;|&{}()[],+-*/%^#~\\"

/* ---------------------------------------------------------------------- */
/* Running code: message handler, SIGINT hook, docall, report.            */
/* ---------------------------------------------------------------------- */

/* The state whose running code a SIGINT interrupts (set during docall). */
static lua_State *volatile running_L = NULL;
/* Set by laction, cleared by lstop: the interrupt hook is pending. */
static volatile sig_atomic_t hook_armed = 0;

static void set_handler(int sig, void (*handler)(int), int flags,
                        struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, old);
}

/* Debug hook installed by laction: stops the running code. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  hook_armed = 0;
  luaL_error(L, "interrupted!");
}

/* SIGINT handler while Lua code runs.  Only async-signal-safe work here:
 * lua_sethook is documented as safe to call from a signal handler. */
static void laction(int sig) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  set_handler(sig, SIG_DFL, 0, NULL); /* a second Ctrl-C kills the process */
  hook_armed = 1;
  lua_sethook(running_L, lstop, flag, 1);
}

/* Message handler: turns the error into a string with a traceback. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) { /* error object is not a string */
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1; /* that is the message */
    msg = lua_pushfstring(L, "(error object is a %s value)",
                          luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int lutorch_docall(lua_State *L, int narg, int nres) {
  int status;
  int base = lua_gettop(L) - narg; /* function index */
  lua_State *prev = running_L;
  struct sigaction old;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  running_L = L;
  set_handler(SIGINT, laction, 0, &old);
  status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &old, NULL); /* the caller's handler, not SIG_DFL */
  running_L = prev;
  if (hook_armed) { /* Ctrl-C came, but no Lua code ran after it */
    hook_armed = 0;
    if (lua_gethook(L) == lstop) lua_sethook(L, NULL, 0, 0);
  }
  lua_remove(L, base);
  return status;
}

int lutorch_report(lua_State *L, int status, const char *progname) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    fflush(stdout); /* keep stdout and stderr in order when both are piped */
    if (progname != NULL) fprintf(stderr, "%s: ", progname);
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

/* ---------------------------------------------------------------------- */
/* Reading lines.                                                         */
/* ---------------------------------------------------------------------- */

enum { READ_INTR = -1, READ_EOF = 0, READ_LINE = 1 };

static volatile sig_atomic_t got_sigint = 0;
static volatile sig_atomic_t got_sigwinch = 0;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
}

static void on_sigwinch(int sig) {
  (void)sig;
  got_sigwinch = 1;
}

static int use_readline; /* stdin is a terminal */
static lua_State *repl_L; /* the state completion looks names up in */

/* Line handed over by readline's callback interface. */
static char *rl_result;
static int rl_have_result;

static void on_line(char *line) {
  rl_result = line; /* NULL at end of input */
  rl_have_result = 1;
  rl_callback_handler_remove();
}

/* Undoes readline's state after Ctrl-C at the prompt (as CPython does). */
static void rl_interrupted(void) {
  FILE *out = rl_outstream != NULL ? rl_outstream : stdout;
  /* Show "^C" after the text (cleaning up moves to column 0). */
  rl_point = rl_end;
  rl_redisplay();
  fputs("^C", out);
  fflush(out);
  rl_free_line_state();
  rl_callback_sigcleanup();
  rl_cleanup_after_signal();
  rl_callback_handler_remove();
  fputs("\n", out);
  fflush(out);
}

/*
 * Reads one line with readline.  SIGINT and SIGWINCH are blocked except
 * inside pselect(), so a signal can never slip in between the check of its
 * flag and the wait.
 */
static int read_line_rl(const char *prompt, char **out) {
  sigset_t block, orig;
  int fd = fileno(rl_instream != NULL ? rl_instream : stdin);
  int status = READ_LINE;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGWINCH);
  sigprocmask(SIG_BLOCK, &block, &orig);
  got_sigint = 0; /* a Ctrl-C that came while nothing ran has no target */
  rl_have_result = 0;
  rl_result = NULL;
  rl_callback_handler_install(prompt, on_line);
  while (!rl_have_result) {
    fd_set fds;
    int r;
    if (got_sigwinch) {
      got_sigwinch = 0;
      rl_resize_terminal();
    }
    if (got_sigint) {
      got_sigint = 0;
      rl_interrupted();
      status = READ_INTR;
      break;
    }
    FD_ZERO(&fds);
    FD_SET(fd, &fds);
    r = pselect(fd + 1, &fds, NULL, NULL, NULL, &orig);
    if (r < 0 && errno != EINTR) { /* unusable input: end the session */
      rl_callback_handler_remove();
      status = READ_EOF;
      break;
    }
    if (r > 0) rl_callback_read_char();
  }
  sigprocmask(SIG_SETMASK, &orig, NULL);
  if (status == READ_LINE) {
    if (rl_result == NULL) return READ_EOF;
    *out = rl_result;
  }
  return status;
}

/* Reads one line from a non-terminal stdin, writing the prompt first. */
static int read_line_plain(const char *prompt, char **out) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  got_sigint = 0;
  fputs(prompt, stdout);
  fflush(stdout);
  n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    if (got_sigint || (ferror(stdin) && errno == EINTR)) {
      got_sigint = 0;
      clearerr(stdin);
      fputs("\n", stdout);
      return READ_INTR;
    }
    return READ_EOF;
  }
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
  *out = line;
  return READ_LINE;
}

/* Pushes the prompt string (from _PROMPT/_PROMPT2 if set); protected. */
static int push_prompt_p(lua_State *L) {
  int first = lua_toboolean(L, 1);
  lua_pushglobaltable(L);
  if (lua_getfield(L, -1, first ? "_PROMPT" : "_PROMPT2") == LUA_TNIL)
    lua_pushstring(L, first ? PROMPT1 : PROMPT2);
  else
    luaL_tolstring(L, -1, NULL);
  return 1;
}

/* Reads a line into *out (malloc'ed; the caller frees it). */
static int read_line(lua_State *L, int first, char **out) {
  const char *prompt;
  int status;
  lua_pushcfunction(L, push_prompt_p);
  lua_pushboolean(L, first);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_isstring(L, -1)) {
    lua_pop(L, 1);
    lua_pushstring(L, first ? PROMPT1 : PROMPT2);
  }
  prompt = lua_tostring(L, -1);
  status = use_readline ? read_line_rl(prompt, out)
                        : read_line_plain(prompt, out);
  lua_pop(L, 1); /* prompt */
  return status;
}

/* ---------------------------------------------------------------------- */
/* History.                                                               */
/* ---------------------------------------------------------------------- */

static char *history_path; /* NULL when HOME is not set */
static int history_added;  /* entries added during this session */

/*
 * Whether the history file is (or, missing or empty, will be) in the
 * format that keeps multi-line chunks as single entries: readline writes a
 * "#<time>" line before each entry and joins the lines that follow.  A file
 * of plain lines (written by hand or another tool) must not be read that
 * way, or all its lines would become one entry.
 */
static int history_file_timestamped(const char *path) {
  FILE *f = fopen(path, "r");
  int c, found = 0, state = 0; /* 0: line start, 1: after '#' there, 2 */
  long n = 0;
  if (f == NULL) return 1;
  while (!found && (c = getc(f)) != EOF) {
    n++;
    if (c == '\n')
      state = 0;
    else if (state == 0)
      state = c == '#' ? 1 : 2;
    else if (state == 1) {
      found = c >= '0' && c <= '9';
      state = 2;
    }
  }
  fclose(f);
  return found || n == 0;
}

static void history_begin(void) {
  const char *home = getenv("HOME");
  size_t n;
  int timestamped = 1;
  using_history();
  clear_history();
  stifle_history(HISTORY_MAX);
  history_added = 0;
  if (home != NULL && home[0] != '\0') {
    n = strlen(home) + sizeof "/" HISTORY_FILE;
    history_path = malloc(n);
    if (history_path != NULL) {
      snprintf(history_path, n, "%s/%s", home, HISTORY_FILE);
      timestamped = history_file_timestamped(history_path);
    }
  }
  history_comment_char = timestamped ? '#' : '\0';
  history_write_timestamps = timestamped;
  history_multiline_entries = timestamped;
  if (history_path != NULL)
    read_history(history_path); /* a missing or unreadable file is fine */
}

static void history_add(const char *chunk) {
  HIST_ENTRY *last;
  if (!use_readline || chunk[0] == '\0') return;
  last = history_length > 0 ? history_get(history_base + history_length - 1)
                            : NULL;
  if (last != NULL && strcmp(last->line, chunk) == 0) return;
  add_history(chunk);
  history_added++;
}

/* Appends this session's entries to the file, which keeps at most
 * HISTORY_MAX lines.  Failures are ignored. */
static void history_end(void) {
  if (history_path == NULL) return;
  if (history_added > 0) {
    int n = history_added < history_length ? history_added : history_length;
    if (access(history_path, F_OK) == 0)
      append_history(n, history_path);
    else
      write_history(history_path);
    history_truncate_file(history_path, HISTORY_MAX);
  }
  free(history_path);
  history_path = NULL;
}

/* ---------------------------------------------------------------------- */
/* Compiling and running chunks.                                          */
/* ---------------------------------------------------------------------- */

enum { CHUNK_OK, CHUNK_INCOMPLETE, CHUNK_ERROR };

/* Whether the syntax error on top of the stack is "... near <eof>": the
 * chunk is incomplete, and more lines may complete it. */
static int is_incomplete(lua_State *L, int status) {
  static const char mark[] = "<eof>";
  size_t lmsg, lmark = sizeof mark - 1;
  const char *msg;
  if (status != LUA_ERRSYNTAX) return 0;
  msg = lua_tolstring(L, -1, &lmsg);
  return msg != NULL && lmsg >= lmark &&
         strcmp(msg + lmsg - lmark, mark) == 0;
}

static int ends_with_semicolon(const char *s, size_t len) {
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
                     s[len - 1] == '\r' || s[len - 1] == '\n'))
    len--;
  return len > 0 && s[len - 1] == ';';
}

/*
 * Compiles the chunk at the top of the stack, first as `return <chunk>`,
 * then as a statement.  Replaces it with the function (CHUNK_OK; *print
 * tells whether to print its results) or with an error message.
 */
static int compile_chunk(lua_State *L, int *print) {
  size_t len, rlen;
  const char *chunk = lua_tolstring(L, -1, &len);
  const char *ret;
  int status, ret_incomplete;
  lua_pushliteral(L, "return ");
  lua_pushvalue(L, -2);
  lua_concat(L, 2);
  ret = lua_tolstring(L, -1, &rlen);
  status = luaL_loadbuffer(L, ret, rlen, "=stdin");
  lua_remove(L, -2); /* the "return" string */
  if (status == LUA_OK) {
    *print = !ends_with_semicolon(chunk, len);
    lua_remove(L, -2); /* the chunk */
    return CHUNK_OK;
  }
  ret_incomplete = is_incomplete(L, status);
  status = luaL_loadbuffer(L, chunk, len, "=stdin"); /* [chunk err1 res] */
  *print = 0;
  if (status == LUA_OK || is_incomplete(L, status) || !ret_incomplete)
    lua_remove(L, -2); /* keep the statement's function or message */
  else
    lua_pop(L, 1); /* only the expression form was incomplete: keep its */
  lua_remove(L, -2);   /* the chunk */
  if (status == LUA_OK) return CHUNK_OK;
  if (ret_incomplete || is_incomplete(L, status)) return CHUNK_INCOMPLETE;
  return CHUNK_ERROR;
}

enum { RC_EOF, RC_INTR, RC_RUN, RC_ERROR };

/*
 * Reads a complete chunk, asking for continuation lines while it is
 * incomplete.  RC_RUN: its function is on the stack; RC_ERROR: an error
 * message is.  RC_EOF and RC_INTR push nothing.
 */
static int read_chunk(lua_State *L, int *print) {
  char *line;
  int r = read_line(L, 1, &line);
  if (r != READ_LINE) return r == READ_EOF ? RC_EOF : RC_INTR;
  /* "=expr" as in Lua 5.2: the expression is tried as such anyway */
  lua_pushstring(L, line[0] == '=' ? line + 1 : line);
  free(line);
  for (;;) {
    int c;
    lua_pushvalue(L, -1); /* [chunk chunk] */
    c = compile_chunk(L, print); /* [chunk result] */
    if (c != CHUNK_INCOMPLETE) {
      history_add(lua_tostring(L, -2));
      lua_remove(L, -2);
      return c == CHUNK_OK ? RC_RUN : RC_ERROR;
    }
    r = read_line(L, 0, &line);
    if (r == READ_EOF) { /* report why the chunk is incomplete */
      history_add(lua_tostring(L, -2));
      lua_remove(L, -2);
      return RC_ERROR;
    }
    lua_pop(L, 1); /* the message */
    if (r == READ_INTR) {
      lua_pop(L, 1); /* the chunk */
      return RC_INTR;
    }
    lua_pushliteral(L, "\n");
    lua_pushstring(L, line);
    free(line);
    lua_concat(L, 3);
  }
}

/* Prints its arguments with tostring, separated by tabs. */
static int print_results(lua_State *L) {
  int i, n = lua_gettop(L);
  luaL_Buffer b;
  size_t len;
  const char *s;
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_addchar(&b, '\n');
  luaL_pushresult(&b);
  s = lua_tolstring(L, -1, &len);
  fwrite(s, 1, len, stdout);
  fflush(stdout);
  return 0;
}

/* Runs the function on top of the stack, printing its results if asked. */
static void run_chunk(lua_State *L, int print) {
  int base = lua_gettop(L) - 1;
  int status = lutorch_docall(L, 0, LUA_MULTRET);
  if (status == LUA_OK && print && lua_gettop(L) > base) {
    int n = lua_gettop(L) - base;
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_pushcfunction(L, print_results);
    lua_insert(L, base + 1);
    status = lutorch_docall(L, n, 0);
  }
  lutorch_report(L, status, NULL);
  fflush(stdout);
}

/* ---------------------------------------------------------------------- */
/* Tab completion.                                                        */
/* ---------------------------------------------------------------------- */

static const char *const lua_keywords[] = {
    "and",   "break", "do",     "else", "elseif", "end",   "false",
    "for",   "function", "goto", "if",  "in",     "local", "nil",
    "not",   "or",    "repeat", "return", "then", "true",  "until",
    "while", NULL};

/* Candidates found for the current completion (owned, malloc'ed). */
static char **cands;
static size_t ncands, capcands;
static size_t cand_next; /* next candidate the generator hands out */

static void cands_clear(void) {
  size_t i;
  for (i = 0; i < ncands; i++) free(cands[i]);
  free(cands);
  cands = NULL;
  ncands = capcands = cand_next = 0;
}

/* Adds prefix..name to the candidates; silently drops it if out of memory. */
static void cands_add(const char *prefix, size_t plen, const char *name,
                      size_t nlen) {
  char *s;
  if (ncands == capcands) {
    size_t cap = capcands ? 2 * capcands : 64;
    char **p = realloc(cands, cap * sizeof *p);
    if (p == NULL) return;
    cands = p;
    capcands = cap;
  }
  s = malloc(plen + nlen + 1);
  if (s == NULL) return;
  memcpy(s, prefix, plen);
  memcpy(s + plen, name, nlen);
  s[plen + nlen] = '\0';
  cands[ncands++] = s;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void cands_sort_unique(void) {
  size_t i, j = 0;
  if (ncands == 0) return;
  qsort(cands, ncands, sizeof *cands, cmp_str);
  for (i = 1; i < ncands; i++) {
    if (strcmp(cands[i], cands[j]) == 0)
      free(cands[i]);
    else
      cands[++j] = cands[i];
  }
  ncands = j + 1;
}

/* Generator for rl_completion_matches: hands out the collected candidates
 * (readline frees them). */
static char *cand_generator(const char *text, int state) {
  (void)text;
  if (state == 0) cand_next = 0;
  if (cand_next < ncands) {
    char *s = cands[cand_next];
    cands[cand_next++] = NULL;
    return s;
  }
  return NULL;
}

static int is_keyword(const char *s) {
  int i;
  for (i = 0; lua_keywords[i] != NULL; i++)
    if (strcmp(s, lua_keywords[i]) == 0) return 1;
  return 0;
}

static int is_ident_start(int c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_ident_char(int c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int is_identifier(const char *s, size_t len) {
  size_t i;
  if (len == 0 || !is_ident_start((unsigned char)s[0])) return 0;
  for (i = 1; i < len; i++)
    if (!is_ident_char((unsigned char)s[i])) return 0;
  return 1;
}

/*
 * Replaces the value on top of the stack with the next table to look names
 * up in: for userdata (and other non-tables) its metatable's `__methods`
 * table, else its metatable's `__index` when that is a table.  Pops the
 * value and returns 0 when there is none.  Raw accesses only: no
 * metamethod runs.
 */
static int next_scope(lua_State *L) {
  int t = lua_type(L, -1);
  if (!lua_getmetatable(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  if (t != LUA_TTABLE) {
    lua_pushliteral(L, "__methods");
    if (lua_rawget(L, -2) == LUA_TTABLE) {
      lua_replace(L, -3);
      lua_pop(L, 1);
      return 1;
    }
    lua_pop(L, 1);
  }
  lua_pushliteral(L, "__index");
  if (lua_rawget(L, -2) == LUA_TTABLE) {
    lua_replace(L, -3);
    lua_pop(L, 1);
    return 1;
  }
  lua_pop(L, 3);
  return 0;
}

/* Replaces the value on top with its field k (found as described for
 * next_scope) and returns 1, or pops it and returns 0. */
static int get_field_safe(lua_State *L, const char *k, size_t klen) {
  int depth;
  for (depth = 0; depth < MAX_SCOPE_DEPTH; depth++) {
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_pushlstring(L, k, klen);
      if (lua_rawget(L, -2) != LUA_TNIL) {
        lua_remove(L, -2);
        return 1;
      }
      lua_pop(L, 1);
    }
    if (!next_scope(L)) return 0;
  }
  lua_pop(L, 1);
  return 0;
}

/* Adds prefix..name for each field name of the value on top (popped) that
 * starts with `part`; functions only when `methods` is set.  Names such as
 * "__index" are left out unless `part` starts with '_'. */
static void collect_fields(lua_State *L, const char *prefix, size_t plen,
                           const char *part, int methods) {
  size_t partlen = strlen(part);
  int depth;
  for (depth = 0; depth < MAX_SCOPE_DEPTH; depth++) {
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING &&
            (!methods || lua_type(L, -1) == LUA_TFUNCTION)) {
          size_t klen;
          const char *k = lua_tolstring(L, -2, &klen); /* no conversion */
          if (klen >= partlen && strncmp(k, part, partlen) == 0 &&
              is_identifier(k, klen) && !is_keyword(k) &&
              (part[0] == '_' || strncmp(k, "__", 2) != 0))
            cands_add(prefix, plen, k, klen);
        }
        lua_pop(L, 1);
      }
    }
    if (!next_scope(L)) return;
  }
  lua_pop(L, 1);
}

/*
 * Collects the completions of the word (argument 1, a light userdata
 * pointing to a NUL-terminated string).  Called under lua_pcall.
 */
static int collect_p(lua_State *L) {
  const char *text = lua_touserdata(L, 1);
  const char *sep = strpbrk(text, ".:");
  const char *last = NULL, *p, *start;
  size_t i;
  for (p = text; *p; p++)
    if (*p == '.' || *p == ':') last = p;
  if (last == NULL) { /* a global name or a keyword */
    size_t tlen = strlen(text);
    for (i = 0; lua_keywords[i] != NULL; i++)
      if (strncmp(lua_keywords[i], text, tlen) == 0)
        cands_add("", 0, lua_keywords[i], strlen(lua_keywords[i]));
    lua_pushglobaltable(L);
    collect_fields(L, "", 0, text, 0);
    return 0;
  }
  /* A path "a.b.c" followed by '.' or ':': ':' may only be the last. */
  if (strchr(text, ':') != NULL && strchr(text, ':') != last) return 0;
  lua_pushglobaltable(L);
  for (start = text; sep != NULL && sep <= last; sep = strpbrk(start, ".:")) {
    if (!is_identifier(start, (size_t)(sep - start))) {
      lua_pop(L, 1);
      return 0;
    }
    if (!get_field_safe(L, start, (size_t)(sep - start))) return 0;
    start = sep + 1;
    if (sep == last) break;
  }
  collect_fields(L, text, (size_t)(last - text + 1), last + 1, *last == ':');
  return 0;
}

/* Shows matches without the common "a.b." part (as ls shows names). */
static void display_matches(char **matches, int num, int max_length) {
  char **shown = malloc(((size_t)num + 2) * sizeof *shown);
  int i, width = 0;
  (void)max_length;
  if (shown == NULL) {
    rl_display_match_list(matches, num, max_length);
  } else {
    shown[0] = matches[0];
    for (i = 1; i <= num; i++) {
      char *s = matches[i], *q;
      int len;
      for (q = s; *q; q++)
        if (*q == '.' || *q == ':') s = q + 1;
      shown[i] = s;
      len = (int)strlen(s);
      if (len > width) width = len;
    }
    shown[num + 1] = NULL;
    rl_display_match_list(shown, num, width);
    free(shown);
  }
  rl_forced_update_display();
}

/* rl_attempted_completion_function. */
static char **complete(const char *text, int start, int end) {
  lua_State *L = repl_L;
  char **matches;
  int gc_running;
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  if (rl_completion_quote_character != 0) { /* inside a string literal */
    rl_completion_append_character = '\0';
    rl_completion_display_matches_hook = NULL;
    return rl_completion_matches(text, rl_filename_completion_function);
  }
  rl_completion_display_matches_hook = display_matches;
  rl_completion_append_character = '\0';
  if (L == NULL || !lua_checkstack(L, 2 * MAX_SCOPE_DEPTH + 10)) return NULL;
  /* No collection (hence no __gc finalizer) while we look around. */
  gc_running = lua_gc(L, LUA_GCISRUNNING);
  if (gc_running) lua_gc(L, LUA_GCSTOP);
  lua_pushcfunction(L, collect_p);
  lua_pushlightuserdata(L, (void *)text);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
  if (gc_running) lua_gc(L, LUA_GCRESTART);
  cands_sort_unique();
  if (ncands == 1 && is_keyword(cands[0])) rl_completion_append_character = ' ';
  matches = rl_completion_matches(text, cand_generator);
  cands_clear();
  return matches;
}

/* ---------------------------------------------------------------------- */
/* The loop.                                                              */
/* ---------------------------------------------------------------------- */

static struct sigaction old_sigint, old_sigwinch;

static void repl_begin(lua_State *L) {
  repl_L = L;
  use_readline = isatty(STDIN_FILENO);
  if (use_readline) {
    rl_readline_name = "lutorch"; /* for $if lutorch in ~/.inputrc */
    /* We handle SIGINT and SIGWINCH ourselves (see read_line_rl). */
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = LUA_WORD_BREAKS;
    rl_completer_word_break_characters = LUA_WORD_BREAKS;
    rl_completer_quote_characters = "\"'";
    history_begin();
    set_handler(SIGWINCH, on_sigwinch, SA_RESTART, &old_sigwinch);
  }
  set_handler(SIGINT, on_sigint, 0, &old_sigint);
}

static void repl_end(void) {
  sigaction(SIGINT, &old_sigint, NULL);
  if (use_readline) {
    sigaction(SIGWINCH, &old_sigwinch, NULL);
    history_end();
  }
  repl_L = NULL;
}

int lutorch_repl(lua_State *L) {
  int top = lua_gettop(L);
  repl_begin(L);
  for (;;) {
    int print = 0;
    int rc;
    lua_settop(L, top);
    rc = read_chunk(L, &print);
    if (rc == RC_EOF) break;
    if (rc == RC_RUN)
      run_chunk(L, print);
    else if (rc == RC_ERROR)
      lutorch_report(L, LUA_ERRSYNTAX, NULL);
  }
  lua_settop(L, top);
  fputs("\n", stdout);
  fflush(stdout);
  repl_end();
  return 0;
}
