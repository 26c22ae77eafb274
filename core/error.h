/* Errors as values: every core function that can fail returns LT_ERR (-1) and leaves a message
   naming the operation and the problem in a per-thread buffer; the Lua binding raises it. */
#ifndef LT_ERROR_H
#define LT_ERROR_H

#include <stddef.h>

#define LT_OK 0
#define LT_ERR (-1)

#if defined(__GNUC__)
#define LT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LT_PRINTF(a, b)
#endif

/* Set the thread's error message (printf-style); returns LT_ERR so callers can `return lt_error(...)`. */
int lt_error(const char *fmt, ...) LT_PRINTF(1, 2);
/* The thread's last error message ("" when none). */
const char *lt_last_error(void);
/* Clear the thread's error message. */
void lt_clear_error(void);

/* Propagate a failure: `LT_TRY(f(x));` returns LT_ERR from the caller when f fails. */
#define LT_TRY(expr) do { if ((expr) != LT_OK) return LT_ERR; } while (0)

#endif
