/* Work stealing for parallel loops: see steal.h. */
#include "core/steal.h"

#include <stdbool.h>
#include <time.h>

static inline uint64_t pack(uint32_t next, uint32_t end) { return (uint64_t)end << 32 | next; }

void lt_steal_init(lt_steal_t *s, int64_t n, int nw) {
  if (nw < 1) nw = 1;
  if (nw > LT_STEAL_MAX) nw = LT_STEAL_MAX;
  if (n < 0) n = 0;
  if (n > UINT32_MAX) n = UINT32_MAX;
  s->nw = nw;
  for (int w = 0; w < nw; w++) {
    int64_t b, e;
    lt_steal_run(n, nw, w, &b, &e);
    __atomic_store_n(&s->runs[w].run, pack((uint32_t)b, (uint32_t)e), __ATOMIC_RELAXED);
  }
}

/* the front unit of run r, or -1 when it is empty */
static int64_t take_front(lt_steal_run_t *r) {
  uint64_t v = __atomic_load_n(&r->run, __ATOMIC_ACQUIRE);
  for (;;) {
    uint32_t next = (uint32_t)v, end = (uint32_t)(v >> 32);
    if (next >= end) return -1;
    if (__atomic_compare_exchange_n(&r->run, &v, pack(next + 1, end), true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return next;
  }
}

/* the back unit of run r, or -1 when it is empty */
static int64_t take_back(lt_steal_run_t *r) {
  uint64_t v = __atomic_load_n(&r->run, __ATOMIC_ACQUIRE);
  for (;;) {
    uint32_t next = (uint32_t)v, end = (uint32_t)(v >> 32);
    if (next >= end) return -1;
    if (__atomic_compare_exchange_n(&r->run, &v, pack(next, end - 1), true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return end - 1;
  }
}

static int delay_us;

int lt_steal_set_delay(int us) { return __atomic_exchange_n(&delay_us, us < 0 ? 0 : us, __ATOMIC_RELAXED); }

int64_t lt_steal_own(lt_steal_t *s, int w) {
  int d = w == 0 ? __atomic_load_n(&delay_us, __ATOMIC_RELAXED) : 0;
  if (d > 0) {
    struct timespec ts = {d / 1000000, (long)(d % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
  return w >= 0 && w < s->nw ? take_front(&s->runs[w]) : -1;
}

int64_t lt_steal_other(lt_steal_t *s) {
  for (;;) { /* from the run with the most left, until none is left */
    int best = -1;
    uint32_t most = 0;
    for (int v = 0; v < s->nw; v++) {
      uint64_t r = __atomic_load_n(&s->runs[v].run, __ATOMIC_ACQUIRE);
      uint32_t next = (uint32_t)r, end = (uint32_t)(r >> 32);
      if (next < end && end - next > most) most = end - next, best = v;
    }
    if (best < 0) return -1;
    int64_t u = take_back(&s->runs[best]);
    if (u >= 0) return u;
  }
}

int64_t lt_steal_next(lt_steal_t *s, int w) {
  int64_t u = lt_steal_own(s, w);
  return u >= 0 ? u : lt_steal_other(s);
}

void lt_steal_run(int64_t n, int nw, int v, int64_t *b, int64_t *e) {
  if (nw < 1) nw = 1;
  if (nw > LT_STEAL_MAX) nw = LT_STEAL_MAX;
  if (n < 0) n = 0;
  if (n > UINT32_MAX) n = UINT32_MAX;
  *b = v < nw ? n * v / nw : n, *e = v < nw ? n * (v + 1) / nw : n;
}

void lt_steal_left(lt_steal_t *s, int v, int64_t *next, int64_t *end) {
  uint64_t r = v >= 0 && v < s->nw ? __atomic_load_n(&s->runs[v].run, __ATOMIC_ACQUIRE) : 0;
  *next = (uint32_t)r, *end = (uint32_t)(r >> 32);
  if (*end < *next) *end = *next;
}
