#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char lt_errbuf[2048];

int lt_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lt_errbuf, sizeof lt_errbuf, fmt, ap);
  va_end(ap);
  return LT_ERR;
}

const char *lt_last_error(void) { return lt_errbuf; }

void lt_clear_error(void) { lt_errbuf[0] = '\0'; }
