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
 *  - help(name) / `?name` print documentation (CDOCS below for functions
 *    written in C, the comment block above a definition for Lua ones), who()
 *    lists the user's globals, commands running longer than 0.1 s print
 *    their wall-clock time (on stderr, so that results stay parseable), and
 *    ~/.lutorchrc runs when the loop starts (an error in it is reported).
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
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>
#include <readline/history.h>
#include <readline/readline.h>

/* GNU readline is loaded when a REPL on a terminal starts, not linked: mapping it (and the
   terminfo library it needs) cost every start of the interpreter ~25 page faults, on machines
   where a fault costs tens of microseconds. Each readline name this file uses stands for the
   symbol of that name found in libreadline.so.8 (rl_load); without the library, the REPL reads
   plain lines, as it does from a pipe. */
#define RL_FUNCS(X) \
  X(append_history) X(clear_history) \
  X(add_history) X(history_get) X(history_truncate_file) X(read_history) \
  X(readline) X(rl_callback_handler_install) X(rl_callback_handler_remove) X(rl_callback_read_char) \
  X(rl_callback_sigcleanup) X(rl_cleanup_after_signal) X(rl_completion_matches) X(rl_display_match_list) \
  X(rl_filename_completion_function) X(rl_forced_update_display) X(rl_free_line_state) X(rl_redisplay) \
  X(rl_resize_terminal) X(stifle_history) X(using_history) X(write_history) \
  /* */
#define RL_VARS(X) \
  X(history_base) X(history_comment_char) X(history_length) X(history_multiline_entries) \
  X(history_write_timestamps) X(rl_attempted_completion_function) X(rl_attempted_completion_over) X(rl_basic_word_break_characters) \
  X(rl_catch_signals) X(rl_catch_sigwinch) X(rl_completer_quote_characters) X(rl_completer_word_break_characters) \
  X(rl_completion_append_character) X(rl_completion_display_matches_hook) X(rl_completion_quote_character) X(rl_completion_word_break_hook) \
  X(rl_end) X(rl_instream) X(rl_line_buffer) X(rl_outstream) \
  X(rl_point) X(rl_readline_name) \
  /* */
static struct {
#define X(n) __typeof__(&n) p_##n;
  RL_FUNCS(X) RL_VARS(X)
#undef X
} rl;

/* Loads readline once; false (and why, in *why) when it cannot be. */
static int rl_load(const char **why) {
  static int state; /* 0 not tried, 1 loaded, -1 failed */
  static char msg[256];
  if (state == 0) {
    void *h = dlopen("libreadline.so.8", RTLD_NOW | RTLD_LOCAL);
    state = h ? 1 : -1;
    if (!h) snprintf(msg, sizeof msg, "%s", dlerror());
#define X(n)                                                                        \
    if (state == 1 && !(rl.p_##n = (__typeof__(rl.p_##n))dlsym(h, #n))) {          \
      snprintf(msg, sizeof msg, "libreadline.so.8 has no symbol %s", #n);           \
      state = -1;                                                                   \
    }
    RL_FUNCS(X) RL_VARS(X)
#undef X
  }
  *why = msg;
  return state == 1;
}

/* from here on, the names are readline's as loaded */
#define append_history (*rl.p_append_history)
#define clear_history (*rl.p_clear_history)
#define add_history (*rl.p_add_history)
#define history_get (*rl.p_history_get)
#define history_truncate_file (*rl.p_history_truncate_file)
#define read_history (*rl.p_read_history)
#define readline (*rl.p_readline)
#define rl_callback_handler_install (*rl.p_rl_callback_handler_install)
#define rl_callback_handler_remove (*rl.p_rl_callback_handler_remove)
#define rl_callback_read_char (*rl.p_rl_callback_read_char)
#define rl_callback_sigcleanup (*rl.p_rl_callback_sigcleanup)
#define rl_cleanup_after_signal (*rl.p_rl_cleanup_after_signal)
#define rl_completion_matches (*rl.p_rl_completion_matches)
#define rl_display_match_list (*rl.p_rl_display_match_list)
#define rl_filename_completion_function (*rl.p_rl_filename_completion_function)
#define rl_forced_update_display (*rl.p_rl_forced_update_display)
#define rl_free_line_state (*rl.p_rl_free_line_state)
#define rl_redisplay (*rl.p_rl_redisplay)
#define rl_resize_terminal (*rl.p_rl_resize_terminal)
#define stifle_history (*rl.p_stifle_history)
#define using_history (*rl.p_using_history)
#define write_history (*rl.p_write_history)
#define history_base (*rl.p_history_base)
#define history_comment_char (*rl.p_history_comment_char)
#define history_length (*rl.p_history_length)
#define history_multiline_entries (*rl.p_history_multiline_entries)
#define history_write_timestamps (*rl.p_history_write_timestamps)
#define rl_attempted_completion_function (*rl.p_rl_attempted_completion_function)
#define rl_attempted_completion_over (*rl.p_rl_attempted_completion_over)
#define rl_basic_word_break_characters (*rl.p_rl_basic_word_break_characters)
#define rl_catch_signals (*rl.p_rl_catch_signals)
#define rl_catch_sigwinch (*rl.p_rl_catch_sigwinch)
#define rl_completer_quote_characters (*rl.p_rl_completer_quote_characters)
#define rl_completer_word_break_characters (*rl.p_rl_completer_word_break_characters)
#define rl_completion_append_character (*rl.p_rl_completion_append_character)
#define rl_completion_display_matches_hook (*rl.p_rl_completion_display_matches_hook)
#define rl_completion_quote_character (*rl.p_rl_completion_quote_character)
#define rl_completion_word_break_hook (*rl.p_rl_completion_word_break_hook)
#define rl_end (*rl.p_rl_end)
#define rl_instream (*rl.p_rl_instream)
#define rl_line_buffer (*rl.p_rl_line_buffer)
#define rl_outstream (*rl.p_rl_outstream)
#define rl_point (*rl.p_rl_point)
#define rl_readline_name (*rl.p_rl_readline_name)

#include <lauxlib.h>
#include <lua.h>

#include "repl.h"
#include "lua_modules.h"

#define PROMPT1 "> "
#define PROMPT2 ">> "
#define HISTORY_FILE ".lutorch_history"
#define HISTORY_MAX 1000
#define RC_FILE ".lutorchrc"
/* commands that run longer than this print their time */
#define SLOW_SECONDS 0.1
/* How many metatable levels completion follows (guards against cycles). */
#define MAX_SCOPE_DEPTH 16
/* Characters that end a word for Lua completion; '.' and ':' are not among
 * them so that the word is a whole path such as "torch.nn.Lin". */
#define LUA_WORD_BREAKS " \t\n\"'`@$><=;|&{}()[],+-*/%^#~\\"
/* Inside a string literal the word is the file name after the quote: '/' must not break it
 * (readline would skip a break character right after the quote, losing an absolute path's '/'). */
#define STRING_WORD_BREAKS " \t\n\"'"

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

static int is_ident_char(int c);

/* p[0..n) without the blanks and semicolons at its end */
static size_t trim_end(const char *p, size_t n) {
  while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == ';')) n--;
  return n;
}

/* "?name" is help('name') (a name or path such as torch.nn.Linear or x:sum), "?expr" help(expr);
 * "?" alone is help(). A comment may follow ("?torch.matmul  -- the product"). Pushes the chunk
 * and returns 1, or 0 when the line is not one of these. */
static int push_help_line(lua_State *L, const char *line) {
  const char *p = line, *q, *dash;
  size_t n;
  int plain = 1;
  while (*p == ' ' || *p == '\t') p++;
  if (*p != '?') return 0;
  p++;
  while (*p == ' ' || *p == '\t') p++;
  /* a name cannot hold "--": what follows one is a comment */
  n = trim_end(p, (dash = strstr(p, "--")) ? (size_t)(dash - p) : strlen(p));
  for (q = p; q < p + n; q++)
    if (!is_ident_char((unsigned char)*q) && *q != '.' && *q != ':') plain = 0;
  if (!plain) n = trim_end(p, strlen(p)); /* an expression: its comment ends at the newline below */
  if (n == 0) {
    lua_pushliteral(L, "help()");
  } else {
    const char *what = lua_pushlstring(L, p, n);
    lua_pushfstring(L, plain ? "help('%s')" : "help(%s\n)", what);
    lua_remove(L, -2);
  }
  return 1;
}

enum { RC_EOF, RC_INTR, RC_RUN, RC_ERROR };

/* "exit", "quit", "exit()" or "quit()" alone on a line ends the session, as in Python's REPL, unless
 * the script has a global of that name (then the line runs as Lua). */
static int is_exit_line(lua_State *L, const char *line) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  size_t n = trim_end(p, strlen(p));
  const char *names[] = {"exit", "quit"};
  for (int i = 0; i < 2; i++) {
    size_t k = strlen(names[i]);
    if (strncmp(p, names[i], k) != 0 || !(n == k || (n == k + 2 && p[k] == '(' && p[k + 1] == ')'))) continue;
    int nil = lua_getglobal(L, names[i]) == LUA_TNIL;
    lua_pop(L, 1);
    return nil;
  }
  return 0;
}

/*
 * Reads a complete chunk, asking for continuation lines while it is
 * incomplete.  RC_RUN: its function is on the stack; RC_ERROR: an error
 * message is.  RC_EOF and RC_INTR push nothing.
 */
static int read_chunk(lua_State *L, int *print) {
  char *line;
  int r = read_line(L, 1, &line);
  if (r != READ_LINE) return r == READ_EOF ? RC_EOF : RC_INTR;
  if (is_exit_line(L, line)) {
    free(line);
    return RC_EOF;
  }
  /* "=expr" as in Lua 5.2: the expression is tried as such anyway */
  if (!push_help_line(L, line)) lua_pushstring(L, line[0] == '=' ? line + 1 : line);
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
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_chunk(lua_State *L, int print) {
  int base = lua_gettop(L) - 1;
  double t0 = now_seconds();
  int status = lutorch_docall(L, 0, LUA_MULTRET);
  double dt = now_seconds() - t0;
  if (status == LUA_OK && print && lua_gettop(L) > base) {
    int n = lua_gettop(L) - base;
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_pushcfunction(L, print_results);
    lua_insert(L, base + 1);
    status = lutorch_docall(L, n, 0);
  }
  lutorch_report(L, status, NULL);
  fflush(stdout);
  if (dt > SLOW_SECONDS) {
    fprintf(stderr, "time: %.2f s\n", dt);
    fflush(stderr);
  }
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

/* rl_completion_word_break_hook: the break characters for the word at the
 * point, which depend on whether it is inside a string literal. */
static char *word_break_hook(void) {
  int i, q = 0;
  for (i = 0; i < rl_point && rl_line_buffer[i] != '\0'; i++) {
    char c = rl_line_buffer[i];
    if (q != 0) {
      if (c == '\\' && i + 1 < rl_point) i++; /* an escaped character */
      else if (c == q) q = 0;
    } else if (c == '"' || c == '\'') {
      q = c;
    }
  }
  return (char *)(q != 0 ? STRING_WORD_BREAKS : LUA_WORD_BREAKS);
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
/* help(), who() and ~/.lutorchrc.                                        */
/* ---------------------------------------------------------------------- */

/* Documentation of the functions written in C (the bindings), for help() and ?name; the Lua
   functions and classes are documented by the comment block above their definition in lua/torch
   (see HELP_LUA). Names: "torch.f" for functions, "Tensor:m" for tensor methods. */
typedef struct {
  const char *name, *text;
} cdoc_t;

static const cdoc_t CDOCS[] = {
    {"torch", "torch: tensors, devices, autograd (torch.autograd), torch.nn, torch.nn.functional (torch.F),\n"
              "torch.optim, torch.data, torch.cuda, torch.memory, torch.utils. Indices and dims are 1-based;\n"
              "options go last in a table. help() lists the documented functions."},
    {"torch.tensor", "torch.tensor(value, {dtype, device, requires_grad}) -> tensor\n"
                     "A tensor holding a copy of a number or a nested table of numbers (or booleans). Lua integers\n"
                     "give int64, floats float32, booleans bool, unless opts.dtype says otherwise."},
    {"torch.zeros", "torch.zeros(size1, size2, ... | {sizes}, {dtype, device, requires_grad}) -> tensor\n"
                    "A tensor of zeros (float32 unless opts.dtype)."},
    {"torch.ones", "torch.ones(sizes..., opts) -> tensor\nA tensor of ones (float32 unless opts.dtype)."},
    {"torch.empty", "torch.empty(sizes..., opts) -> tensor\nA tensor whose elements are not initialised."},
    {"torch.full", "torch.full(sizes, value, opts) -> tensor\nA tensor filled with value (sizes is a table)."},
    {"torch.rand", "torch.rand(sizes..., opts) -> tensor\n"
                   "Uniform in [0, 1): the same numbers as PyTorch's CPU generator for the same torch.manual_seed."},
    {"torch.randn", "torch.randn(sizes..., opts) -> tensor\nStandard normal samples (PyTorch's numbers for a seed)."},
    {"torch.randint", "torch.randint(low, high, sizes, opts) -> tensor\nIntegers uniform in [low, high), int64 unless opts.dtype."},
    {"torch.randperm", "torch.randperm(n, opts) -> tensor\nA random permutation of 1..n (int64)."},
    {"torch.arange", "torch.arange(end) | torch.arange(start, end, step, opts) -> tensor\n"
                     "start, start + step, ... below end (end excluded, as in PyTorch); int64 for integer arguments."},
    {"torch.linspace", "torch.linspace(start, stop, steps, opts) -> tensor\nsteps evenly spaced values from start to stop inclusive."},
    {"torch.eye", "torch.eye(n, m, opts) -> tensor\nThe n x m (default n x n) identity matrix."},
    {"torch.zeros_like", "torch.zeros_like(x, opts) -> tensor\nZeros of x's shape, dtype and device (also ones_like, rand_like, ...)."},
    {"torch.manual_seed", "torch.manual_seed(n)\nSeeds the CPU generator: every random draw after it repeats."},
    {"torch.matmul", "torch.matmul(a, b) -> tensor (also a:matmul(b))\n"
                     "Matrix product with PyTorch's rules: vector-vector dot, matrix-vector, matrix-matrix, batched\n"
                     "products broadcasting the batch dims. `*` is elementwise, not this."},
    {"torch.mm", "torch.mm(a, b) -> tensor\nThe product of two matrices (2-D only)."},
    {"torch.bmm", "torch.bmm(a, b) -> tensor\nBatched matrix product of b x n x m and b x m x p tensors."},
    {"torch.cat", "torch.cat({t1, t2, ...}, dim) -> tensor\nConcatenates along dim (default 1)."},
    {"torch.stack", "torch.stack({t1, t2, ...}, dim) -> tensor\nStacks equal-shaped tensors along a new dim (default 1)."},
    {"torch.where", "torch.where(cond, x, y) -> tensor\nx where cond is true, else y (tensors or numbers; broadcast)."},
    {"torch.is_tensor", "torch.is_tensor(v) -> boolean"},
    {"torch.set_num_threads", "torch.set_num_threads(n)\nThe number of threads of the CPU kernels (process-wide)."},
    {"torch.device", "torch.device('cpu' | 'cpu:1' | 'cuda' | 'cuda:0') or torch.device(type, index) -> device\n"
                     "Fields .type and .index; devices with the same type and index are ==."},
    {"torch.bitwise_and", "torch.bitwise_and(a, b) -> tensor (also a:bitwise_and(b), a & b; bitwise_and_ in place)\n"
                          "Elementwise and of integer or bool tensors or numbers; also bitwise_or (a | b), bitwise_xor\n"
                          "(a ~ b), bitwise_not (~a), bitwise_left_shift (a << b) and bitwise_right_shift (a >> b)."},
    {"torch.cummax", "torch.cummax(x, dim) -> values, indices (also x:cummax(dim); cummin likewise)\n"
                     "The running maximum along dim and the 1-based index of each (a later equal element, or a NaN,\n"
                     "takes over)."},
    {"torch.logcumsumexp", "torch.logcumsumexp(x, dim) -> tensor (also x:logcumsumexp(dim))\n"
                           "log(cumsum(exp(x))) along dim, computed stably (floating tensors)."},
    {"Tensor:view", "x:view(sizes...) -> tensor\nThe same data with another shape (-1: inferred); x must be viewable (see reshape)."},
    {"Tensor:reshape", "x:reshape(sizes...) -> tensor\nA view when possible, else a copy, of the given shape."},
    {"Tensor:sum", "x:sum() | x:sum(dim, keepdim) | x:sum({dims}) -> tensor\nThe sum over all elements or over dims (1-based)."},
    {"Tensor:mean", "x:mean() | x:mean(dim, keepdim) -> tensor\nThe mean over all elements or over a dim."},
    {"Tensor:max", "x:max() -> tensor | x:max(dim, keepdim) -> values, indices\n"
                   "The largest element, or the largest along dim with their 1-based indices."},
    {"Tensor:min", "x:min() -> tensor | x:min(dim, keepdim) -> values, indices"},
    {"Tensor:argmax", "x:argmax() | x:argmax(dim, keepdim) -> tensor\n1-based indices of the largest elements (flattened when no dim)."},
    {"Tensor:t", "x:t() -> tensor\nThe transpose of a matrix (a view; not contiguous)."},
    {"Tensor:transpose", "x:transpose(dim1, dim2) -> tensor\nA view with the two dims swapped."},
    {"Tensor:permute", "x:permute(dims...) -> tensor\nA view with the dims in the given order."},
    {"Tensor:contiguous", "x:contiguous() -> tensor\nx itself when contiguous, else a contiguous copy."},
    {"Tensor:is_contiguous", "x:is_contiguous() -> boolean"},
    {"Tensor:split", "x:split(size, dim) -> {views}\nPieces of size elements along dim (default 1), as an array of views."},
    {"Tensor:chunk", "x:chunk(n, dim) -> {views}\nn pieces along dim (default 1)."},
    {"Tensor:float", "x:float() -> tensor\nx as float32 (also double, half, bfloat16, long, int, bool)."},
    {"Tensor:to", "x:to(device | dtype | tensor, {non_blocking, copy}) -> tensor\n"
                  "x moved or converted; x itself when nothing changes (and copy is not set)."},
    {"Tensor:eq", "x:eq(y) -> bool tensor\nElementwise ==; also ne, lt, le, gt, ge (Lua's == compares objects)."},
    {"Tensor:equal", "x:equal(y) -> boolean\nSame shape and the same values."},
    {"Tensor:item", "x:item() -> number\nThe value of a one-element tensor."},
    {"Tensor:size", "x:size() -> torch.Size | x:size(dim) -> integer"},
    {"Tensor:numel", "x:numel() -> integer\nThe number of elements."},
    {"Tensor:dim", "x:dim() -> integer\nThe number of dimensions."},
    {"Tensor:totable", "x:totable() -> table\nThe elements as (nested) Lua tables."},
    {"Tensor:narrow", "x:narrow(dim, start, length) -> tensor\nA view of length elements from start (1-based) along dim."},
    {"Tensor:select", "x:select(dim, index) -> tensor\nThe slice at index (1-based) along dim, without that dim."},
    {"Tensor:index_select", "x:index_select(dim, indices) -> tensor\nA copy of the slices at the 1-based indices along dim."},
    {"Tensor:clone", "x:clone() -> tensor\nA copy (autograd records it)."},
    {"Tensor:detach", "x:detach() -> tensor\nThe same data, cut from the autograd graph."},
    {"Tensor:backward", "y:backward(grad)\nComputes the gradients of y (a scalar, or with grad of y's shape) into .grad of the leaves."},
    {"Tensor:requires_grad_", "x:requires_grad_(flag) -> x\nMarks x for gradients (default true)."},
    {"Tensor:add", "x:add(y, {alpha}) -> tensor (also x + y)\nElementwise x + alpha * y with broadcasting; add_ in place."},
    {"Tensor:mul", "x:mul(y) -> tensor (also x * y)\nElementwise product with broadcasting; mul_ in place."},
    {"Tensor:matmul", "x:matmul(y) -> tensor\nSee torch.matmul."},
    {"Tensor:mm", "x:mm(y) -> tensor\nSee torch.mm."},
    {"Tensor:cpu", "x:cpu() -> tensor\nx on cpu:0 (x itself when it is there)."},
    {"Tensor:cuda", "x:cuda(index) -> tensor\nx on a CUDA device (the current one by default)."},
    {"Tensor:squeeze", "x:squeeze(dim) -> tensor\nA view without size-1 dims (or only dim)."},
    {"Tensor:unsqueeze", "x:unsqueeze(dim) -> tensor\nA view with a new size-1 dim at dim."},
    {"Tensor:flatten", "x:flatten(start_dim, end_dim) -> tensor\nThe dims from start_dim to end_dim merged into one."},
    {"torch.nn.functional.linear", "F.linear(x, w, b) -> tensor\nx w^T + b (b may be nil)."},
    {NULL, NULL}};


/* source(path) -> the text of the built-in module at path ("lua/torch/nn/linear.lua") or nil */
static int module_source(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int i;
  for (i = 0; i < lt_lua_nmodules; i++)
    if (strcmp(lt_lua_modules[i].path, path) == 0) {
      lua_pushlstring(L, lt_lua_modules[i].source, lt_lua_modules[i].len);
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

static const char HELP_LUA[] =
    "-- The REPL's help(), ?name and who(). Arguments: the table of documented C functions (name ->\n"
    "-- text), source(chunkname) -> the text of an embedded Lua module or nil, and the names of the\n"
    "-- globals that exist before the user types anything (who() leaves them out).\n"
    "local cdocs, source, initial = ...\n"
    "\n"
    "-- doc comments: the block of comment lines right above a definition ('--- ' starts a doc comment,\n"
    "-- plain '-- ' comments count too); a '-- ----' section rule or a blank line ends it\n"
    "local function lines_of(text)\n"
    "  local t = {}\n"
    "  for l in (text .. '\\n'):gmatch('(.-)\\r?\\n') do t[#t + 1] = l end\n"
    "  return t\n"
    "end\n"
    "\n"
    "local function block_above(lines, n)\n"
    "  local out = {}\n"
    "  local i = n - 1\n"
    "  while i >= 1 do\n"
    "    local l = lines[i]\n"
    "    local body = l:match('^%s*%-%-%-?%s?(.*)$')\n"
    "    if not body or l:match('^%s*%-%-%s*%-%-%-%-') or l:match('^%s*%-%-%[') then break end\n"
    "    table.insert(out, 1, body)\n"
    "    i = i - 1\n"
    "  end\n"
    "  return #out > 0 and table.concat(out, '\\n') or nil\n"
    "end\n"
    "\n"
    "-- the text of a chunk: an embedded module (\"@lua/torch/x.lua\") or a file the user loaded\n"
    "local function chunk_text(src)\n"
    "  if type(src) ~= 'string' or src:sub(1, 1) ~= '@' then return nil end\n"
    "  local text = source(src:sub(2))\n"
    "  if text then return text end\n"
    "  local f = io.open(src:sub(2), 'r')\n"
    "  if not f then return nil end\n"
    "  text = f:read('a')\n"
    "  f:close()\n"
    "  return text\n"
    "end\n"
    "\n"
    "-- the header comment of a module file: its first comment block\n"
    "local function header(text)\n"
    "  local lines = lines_of(text)\n"
    "  local i = 1\n"
    "  while lines[i] and not lines[i]:match('^%-%-') do\n"
    "    if lines[i]:match('%S') then return nil end\n"
    "    i = i + 1\n"
    "  end\n"
    "  local j = i\n"
    "  while lines[j] and lines[j]:match('^%-%-') do j = j + 1 end\n"
    "  return j > i and block_above(lines, j) or nil\n"
    "end\n"
    "\n"
    "local function function_doc(f)\n"
    "  local info = debug.getinfo(f, 'S')\n"
    "  if info.what ~= 'Lua' then return nil end\n"
    "  local text = chunk_text(info.source)\n"
    "  if not text or info.linedefined < 1 then return nil end\n"
    "  return block_above(lines_of(text), info.linedefined), info\n"
    "end\n"
    "\n"
    "-- a class (torch.class): the comment above `local X = Base:extend('X')` in the file of one of its\n"
    "-- methods (its own, not those it inherits from another file), else that file's header, else the\n"
    "-- comment above its init\n"
    "local function class_doc(cls)\n"
    "  local name = rawget(cls, '__name')\n"
    "  local pattern = \"^%s*local%s+[%w_]+%s*=%s*[%w_.:]+%(%s*['\\\"]\" .. name:gsub('%p', '%%%0') .. \"['\\\"]%s*%)\"\n"
    "  local seen = {}\n"
    "  for _, v in next, cls do -- raw: a class may carry its instances' __pairs\n"
    "    local info = type(v) == 'function' and debug.getinfo(v, 'S')\n"
    "    if info and info.what == 'Lua' and not seen[info.source] then\n"
    "      seen[info.source] = true\n"
    "      local text = chunk_text(info.source)\n"
    "      if text then\n"
    "        local lines = lines_of(text)\n"
    "        for n, l in ipairs(lines) do\n"
    "          if l:match(pattern) then return block_above(lines, n) or header(text) end\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  local init = rawget(cls, 'init')\n"
    "  return type(init) == 'function' and (function_doc(init)) or nil\n"
    "end\n"
    "-- names of values reachable from torch (for help(value) and the C table)\n"
    "local ROOTS = { 'torch', 'torch.nn', 'torch.nn.functional', 'torch.optim', 'torch.optim.lr_scheduler',\n"
    "  'torch.data', 'torch.autograd', 'torch.utils', 'torch.cuda', 'torch.amp', 'torch.nn.init', 'torch.nn.utils',\n"
    "  'torch.optim.swa_utils', 'torch.utils.checkpoint' }\n"
    "local function resolve(path)\n"
    "  local v = _G\n"
    "  for part in path:gmatch('[^.]+') do\n"
    "    if type(v) ~= 'table' then return nil end\n"
    "    local ok, f = pcall(function() return v[part] end) -- torch's submodules load on first use\n"
    "    if not ok then return nil end\n"
    "    v = f\n"
    "    if v == nil then return nil end\n"
    "  end\n"
    "  return v\n"
    "end\n"
    "\n"
    "local function name_of(value)\n"
    "  for _, root in ipairs(ROOTS) do\n"
    "    local t = resolve(root)\n"
    "    if type(t) == 'table' then\n"
    "      for k, v in pairs(t) do\n"
    "        if v == value and type(k) == 'string' then return root .. '.' .. k end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  local methods = torch and rawget(torch, 'Tensor')\n"
    "  if type(methods) == 'table' then\n"
    "    for k, v in pairs(methods) do\n"
    "      if v == value and type(k) == 'string' then return 'Tensor:' .. k end\n"
    "    end\n"
    "  end\n"
    "  for k, v in pairs(package.loaded) do\n"
    "    if v == value then return k end\n"
    "  end\n"
    "  return nil\n"
    "end\n"
    "\n"
    "-- the C table's entry: by full name, by the same name under torch., or as a tensor method\n"
    "local function cdoc(name)\n"
    "  if not name then return nil end\n"
    "  if cdocs[name] then return cdocs[name] end\n"
    "  local short = name:match('^torch%.Tensor[.:](.*)$') or name:match('^Tensor%.(.*)$')\n"
    "  if short and cdocs['Tensor:' .. short] then return cdocs['Tensor:' .. short] end\n"
    "  if cdocs['torch.' .. name] then return cdocs['torch.' .. name] end\n"
    "  if not name:find('[.:]') and cdocs['Tensor:' .. name] then return cdocs['Tensor:' .. name] end\n"
    "  return nil\n"
    "end\n"
    "\n"
    "local function doc_of(value, name)\n"
    "  local d = cdoc(name) or cdoc(name_of(value))\n"
    "  if d then return d end\n"
    "  if type(value) == 'function' then return (function_doc(value)) end\n"
    "  if type(value) == 'table' then\n"
    "    if type(rawget(value, '__name')) == 'string' then\n"
    "      local d2 = class_doc(value)\n"
    "      if d2 then return d2 end\n"
    "    end\n"
    "    local mod = name and package.loaded[name] == value and name or nil\n"
    "    if not mod then\n"
    "      for k, v in pairs(package.loaded) do\n"
    "        if v == value and type(k) == 'string' then mod = k break end\n"
    "      end\n"
    "    end\n"
    "    if mod and mod:match('^torch') then\n"
    "      local text = source(mod:gsub('%.', '/'):gsub('^', 'lua/') .. '.lua') or\n"
    "        source(mod:gsub('%.', '/'):gsub('^', 'lua/') .. '/init.lua')\n"
    "      if text then return header(text) end\n"
    "    end\n"
    "  end\n"
    "  return nil\n"
    "end\n"
    "\n"
    "local USAGE = [[\n"
    "help(name) or ?name: the documentation of a function, class or module, e.g. ?torch.matmul,\n"
    "help(torch.nn.Linear), ?x:sum (a tensor method), help 'Tensor:view'.\n"
    "who(): the globals you defined, with their types.\n"
    "Commands that run longer than 0.1 s print their time.]]\n"
    "\n"
    "function help(what)\n"
    "  local value, name = what, nil\n"
    "  if what == nil then\n"
    "    local names = {}\n"
    "    for k in pairs(cdocs) do names[#names + 1] = k end\n"
    "    table.sort(names)\n"
    "    print(USAGE .. '\\nDocumented C functions (Lua functions and classes are documented from their source):')\n"
    "    print('  ' .. table.concat(names, ' '))\n"
    "    return\n"
    "  end\n"
    "  if type(what) == 'string' then\n"
    "    name = what:gsub('^%s+', ''):gsub('%s+$', '')\n"
    "    local base, method = name:match('^(.-):([%w_]+)$')\n"
    "    if base then -- x:sum, Tensor:sum: a method of the value's class, else of tensors\n"
    "      local b = base == 'Tensor' and torch.Tensor or resolve(base)\n"
    "      if torch.is_tensor(b) then b = torch.Tensor end\n"
    "      value = type(b) == 'table' and b[method] or nil\n"
    "      if b == torch.Tensor or (value == nil and cdocs['Tensor:' .. method]) then name = 'Tensor:' .. method end\n"
    "    else\n"
    "      value = resolve(name)\n"
    "    end\n"
    "    if value == nil and cdoc(name) == nil then\n"
    "      print('help: no ' .. name .. ' (not a global or a field path such as torch.nn.Linear)')\n"
    "      return\n"
    "    end\n"
    "  end\n"
    "  local d = doc_of(value, name)\n"
    "  if d then\n"
    "    print(d)\n"
    "  else\n"
    "    print(string.format('help: no documentation for %s (a %s)', name or name_of(value) or tostring(value), type(value)))\n"
    "  end\n"
    "end\n"
    "\n"
    "local function describe(v)\n"
    "  local t = type(v)\n"
    "  if torch.is_tensor(v) then\n"
    "    return string.format('tensor %s %s %s', table.concat({ '[', table.concat(v.shape, ', '), ']' }),\n"
    "      tostring(v.dtype):gsub('^torch%.', ''), tostring(v.device))\n"
    "  elseif t == 'number' or t == 'boolean' then\n"
    "    return t .. ' ' .. tostring(v)\n"
    "  elseif t == 'string' then\n"
    "    return string.format('string %q', #v > 40 and v:sub(1, 37) .. '...' or v)\n"
    "  elseif t == 'table' then\n"
    "    local mt = getmetatable(v)\n"
    "    local cname = type(mt) == 'table' and rawget(mt, '__name')\n"
    "    if type(cname) == 'string' then return cname end\n"
    "    local n = 0\n"
    "    for _ in pairs(v) do n = n + 1 end\n"
    "    return string.format('table (%d entries)', n)\n"
    "  end\n"
    "  return t\n"
    "end\n"
    "\n"
    "function who()\n"
    "  local names = {}\n"
    "  for k in pairs(_G) do\n"
    "    if type(k) == 'string' and not initial[k] then names[#names + 1] = k end\n"
    "  end\n"
    "  table.sort(names)\n"
    "  local width = 0\n"
    "  for _, k in ipairs(names) do width = math.max(width, #k) end\n"
    "  for _, k in ipairs(names) do print(string.format('%-' .. width .. 's  %s', k, describe(rawget(_G, k)))) end\n"
    "end\n"
    "-- what exists now is not the user's: who() lists only what comes after\n"
    "for k in pairs(_G) do initial[k] = true end\n";

/* Defines help and who (protected). */
static int setup_help_p(lua_State *L) {
  const cdoc_t *d;
  if (luaL_loadbuffer(L, HELP_LUA, sizeof HELP_LUA - 1, "=(help)") != LUA_OK) return lua_error(L);
  lua_newtable(L);
  for (d = CDOCS; d->name != NULL; d++) {
    lua_pushstring(L, d->text);
    lua_setfield(L, -2, d->name);
  }
  lua_pushcfunction(L, module_source);
  lua_newtable(L);
  lua_call(L, 3, 0);
  return 0;
}

static void setup_help(lua_State *L) {
  lua_pushcfunction(L, setup_help_p);
  lutorch_report(L, lutorch_docall(L, 0, 0), "lutorch: help");
}

/* Runs ~/.lutorchrc when there is one; an error in it is reported, not fatal. */
static void run_rc_file(lua_State *L) {
  const char *home = getenv("HOME");
  char *path;
  size_t n;
  int status;
  if (home == NULL || home[0] == '\0') return;
  n = strlen(home) + sizeof "/" RC_FILE;
  path = malloc(n);
  if (path == NULL) return;
  snprintf(path, n, "%s/%s", home, RC_FILE);
  if (access(path, F_OK) != 0) {
    free(path);
    return;
  }
  status = luaL_loadfile(L, path);
  if (status == LUA_OK) status = lutorch_docall(L, 0, 0);
  lutorch_report(L, status, "lutorch");
  free(path);
}

/* ---------------------------------------------------------------------- */
/* The loop.                                                              */
/* ---------------------------------------------------------------------- */

static struct sigaction old_sigint, old_sigwinch;

static void repl_begin(lua_State *L) {
  repl_L = L;
  use_readline = isatty(STDIN_FILENO);
  const char *why = NULL;
  if (use_readline && !rl_load(&why)) {
    fprintf(stderr, "lutorch: no line editing (cannot load GNU readline: %s)\n", why);
    use_readline = 0;
  }
  if (use_readline) {
    rl_readline_name = "lutorch"; /* for $if lutorch in ~/.inputrc */
    /* We handle SIGINT and SIGWINCH ourselves (see read_line_rl). */
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = LUA_WORD_BREAKS;
    rl_completer_word_break_characters = LUA_WORD_BREAKS;
    rl_completer_quote_characters = "\"'";
    rl_completion_word_break_hook = word_break_hook;
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
  setup_help(L);
  run_rc_file(L);
  lua_settop(L, top);
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
