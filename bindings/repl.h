/*
 * repl.h - the lutorch read-eval-print loop and the helpers that run Lua
 * code the way the stock `lua` interpreter does (message handler with a
 * traceback, Ctrl-C interrupts the running chunk).
 *
 * The REPL uses GNU readline (line editing, history in ~/.lutorch_history,
 * Tab completion of Lua names) when standard input is a terminal, and plain
 * line reads otherwise.  Link with -llua5.4 -ldl (readline is loaded at run
 * time, when the loop starts on a terminal).
 */
#ifndef LUTORCH_REPL_H
#define LUTORCH_REPL_H

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Runs the interactive loop on L until end of input (Ctrl-D).  Errors in the
 * code typed are reported on stderr and never end the loop.  Leaves the
 * stack of L as it found it.  Returns 0.
 */
int lutorch_repl(lua_State *L);

/*
 * Calls the function under its `narg` arguments on top of the stack, like
 * lua_pcall(L, narg, nres, h) with a message handler that appends a
 * traceback.  While it runs, SIGINT (Ctrl-C) stops the Lua code with the
 * error "interrupted!"; a second Ctrl-C before Lua notices kills the
 * process.  Returns the lua_pcall status; on error the message is on top.
 */
int lutorch_docall(lua_State *L, int narg, int nres);

/*
 * If status is not LUA_OK, prints the message on top of the stack to stderr
 * as "<progname>: <message>" (no prefix when progname is NULL) and pops it.
 * Returns status.
 */
int lutorch_report(lua_State *L, int status, const char *progname);

#ifdef __cplusplus
}
#endif

#endif /* LUTORCH_REPL_H */
