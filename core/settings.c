/* Process-wide settings consulted by ops (see settings.h). Deterministic algorithms: lutorch's CPU
   kernels give the same bits on every run with the same inputs and thread count (each output
   element is written by one thread; a reduction split over threads cuts its range into one part a
   thread and combines the parts in order; scatter_add / index_add run each destination slice on
   one thread; no float atomics), and CUDA tensors' indexing ops run on the host; the CUDA kernels
   that add with atomics (the pooling backwards) and cuBLAS without a fixed workspace are the ones
   that call lt_alert_not_deterministic (lt_alert_deterministic). */
#include "core/settings.h"

#include "core/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

static atomic_bool deterministic = false, warn_only = false, warn_always = false;

void lt_set_deterministic(bool mode, bool only_warn) {
  atomic_store(&deterministic, mode);
  atomic_store(&warn_only, only_warn);
}
bool lt_deterministic(void) { return atomic_load(&deterministic); }
bool lt_deterministic_warn_only(void) { return atomic_load(&warn_only); }
void lt_set_warn_always(bool on) { atomic_store(&warn_always, on); }
bool lt_warn_always(void) { return atomic_load(&warn_always); }

/* the ops already warned about (once each unless warn_always) */
#define MAX_WARNED 32
static const char *warned[MAX_WARNED];
static int n_warned;
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;

static bool first_warning(const char *op) {
  pthread_mutex_lock(&warned_lock);
  bool first = true;
  for (int i = 0; i < n_warned && first; i++)
    if (strcmp(warned[i], op) == 0) first = false;
  if (first && n_warned < MAX_WARNED) warned[n_warned++] = op;
  pthread_mutex_unlock(&warned_lock);
  return first;
}

#define ALERT_TAIL                                                                                    \
  " does not have a deterministic implementation, but you set 'torch.use_deterministic_algorithms(true)'. " \
  "You can turn off determinism just for this operation, or you can use the 'warn_only = true' option, "   \
  "if that's acceptable for your application."

int lt_alert_deterministic(const char *key, const char *msg) {
  if (!lt_deterministic()) return LT_OK;
  if (!lt_deterministic_warn_only()) return lt_error("%s", msg);
  if (lt_warn_always() || first_warning(key)) fprintf(stderr, "UserWarning: %s\n", msg);
  return LT_OK;
}

int lt_alert_not_deterministic(const char *op) {
  if (!lt_deterministic()) return LT_OK;
  char msg[512];
  snprintf(msg, sizeof msg, "%s" ALERT_TAIL, op);
  return lt_alert_deterministic(op, msg);
}

bool lt_set_flush_denormal(bool on) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse3")) return false; /* DAZ needs it (PyTorch's check too) */
  unsigned csr = _mm_getcsr();
  const unsigned ftz = 0x8000, daz = 0x0040;
  _mm_setcsr(on ? csr | ftz | daz : csr & ~(ftz | daz));
  return true;
#else
  (void)on;
  return false;
#endif
}
