/* The shared-memory all-reduce of one machine's ranks (core/comm_shm.h). */
#include "core/comm_shm.h"

#include <sched.h>
#include <string.h>

#define SHM_HEADER 4096 /* a region's barrier count, then its call's signature, alone on their page */

/* what a rank is reducing: the same on every rank, or the ranks are out of step */
typedef struct {
  int64_t n;    /* elements of the whole call */
  int32_t kind; /* dtype, + 256 for AVG */
} signature_t;

size_t lt_shm_piece_for(int size) {
  size_t piece = (size_t)4 << 20;
  if (size > 4) piece = ((size_t)24 << 20) / (size_t)size;
  if (piece < ((size_t)256 << 10)) piece = (size_t)256 << 10;
  return piece & ~(size_t)4095;
}

size_t lt_shm_bytes(int size, size_t piece) { return (size_t)size * (SHM_HEADER + piece); }

void lt_shm_init(lt_shm_t *s, void *base, int rank, int size, size_t piece) {
  s->base = base;
  s->rank = rank;
  s->size = size;
  s->piece = piece;
  s->gen = 0;
}

bool lt_shm_takes(lt_dtype dt, bool sum_or_avg) { return sum_or_avg && (dt == LT_FLOAT32 || dt == LT_FLOAT64); }

static char *region(const lt_shm_t *s, int k) { return s->base + (size_t)k * (SHM_HEADER + s->piece); }
static uint64_t *count_of(const lt_shm_t *s, int k) { return (uint64_t *)region(s, k); }
static signature_t *signature_of(const lt_shm_t *s, int k) { return (signature_t *)(region(s, k) + 64); }
static char *buffer(const lt_shm_t *s, int k) { return region(s, k) + SHM_HEADER; }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* every rank's count reached this rank's: spins ~50-100 us, then gives the core away between looks */
static void barrier(lt_shm_t *s) {
  const uint64_t g = ++s->gen;
  __atomic_store_n(count_of(s, s->rank), g, __ATOMIC_RELEASE);
  for (int k = 0; k < s->size; k++) {
    if (k == s->rank) continue;
    const uint64_t *c = count_of(s, k);
    for (unsigned spins = 0; __atomic_load_n(c, __ATOMIC_ACQUIRE) < g; spins++) {
      if (spins < 2048) cpu_relax();
      else sched_yield();
    }
  }
}

/* d1[i] = d2[i] = the sum of src[0..size)[i] in rank order (/ size when avg), i in [0, n). d1 is
   one of the sources, so more than two are summed a block at a time into a stack buffer before d1
   is written. */
#define REDUCE_SLICE(sfx, T)                                                                        \
  static void reduce_##sfx(T *d1, T *d2, const T *const *src, int size, int64_t n, bool avg) {     \
    const T *s0 = src[0], *s1 = src[1];                                                             \
    const T d = (T)size;                                                                            \
    if (size == 2) {                                                                                \
      if (avg) {                                                                                    \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d1[i] = d2[i] = (s0[i] + s1[i]) / d;    \
      } else {                                                                                      \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d1[i] = d2[i] = s0[i] + s1[i];          \
      }                                                                                             \
      return;                                                                                       \
    }                                                                                               \
    T acc[512];                                                                                     \
    for (int64_t b = 0; b < n; b += 512) {                                                          \
      const int64_t m = n - b < 512 ? n - b : 512;                                                  \
      _Pragma("omp simd") for (int64_t j = 0; j < m; j++) acc[j] = s0[b + j] + s1[b + j];          \
      for (int k = 2; k < size; k++) {                                                              \
        const T *sk = src[k] + b;                                                                   \
        _Pragma("omp simd") for (int64_t j = 0; j < m; j++) acc[j] += sk[j];                       \
      }                                                                                             \
      if (avg) {                                                                                    \
        _Pragma("omp simd") for (int64_t j = 0; j < m; j++) acc[j] /= d;                           \
      }                                                                                             \
      memcpy(d1 + b, acc, sizeof(T) * (size_t)m);                                                   \
      memcpy(d2 + b, acc, sizeof(T) * (size_t)m);                                                   \
    }                                                                                               \
  }
REDUCE_SLICE(f32, float)
REDUCE_SLICE(f64, double)

/* rank k's slice of a piece of m elements: [m k / size, m (k + 1) / size) */
static int64_t slice_at(int64_t m, int k, int size) { return m * k / size; }

/* where element `at` of the segments' concatenation is (*p), and how many of the next m elements
   follow it contiguously there */
static int64_t run_at(void *const *seg, const int64_t *len, int count, size_t es, int64_t at, int64_t m,
                      char **p) {
  int64_t start = 0;
  for (int j = 0; j < count; start += len[j], j++) {
    if (at >= start + len[j]) continue;
    *p = (char *)seg[j] + (at - start) * (int64_t)es;
    return len[j] - (at - start) < m ? len[j] - (at - start) : m;
  }
  *p = NULL;
  return 0;
}

/* copies elements [at, at + m) of the segments' concatenation into buf (in) or from buf (out) */
static void move(void *const *seg, const int64_t *len, int count, size_t es, int64_t at, int64_t m, char *buf,
                 bool in) {
  while (m > 0) {
    char *p;
    const int64_t take = run_at(seg, len, count, es, at, m, &p);
    if (take <= 0) return;
    if (in) memcpy(buf, p, (size_t)take * es);
    else memcpy(p, buf, (size_t)take * es);
    buf += take * (int64_t)es, at += take, m -= take;
  }
}

/* A piece: each rank copies into its buffer only the slices the others sum (its own stays where it
   is), sums its slice of every rank's data -- its own read from the tensor -- into the tensor and
   into its buffer's slot for it, and copies the others' slices from their buffers. Slice k of any
   piece has the same slot, [k, k + 1) * per / size elements, in every buffer. */
int lt_shm_all_reduce_many(lt_shm_t *s, void *const *seg, const int64_t *len, int count, lt_dtype dt, bool avg) {
  const size_t es = lt_dtype_size(dt);
  const int R = s->size, me = s->rank;
  const int64_t per = (int64_t)(s->piece / es) / R * R, slot = per / R;
  if (R == 1) return -1; /* a sum over one rank, divided by 1 */
  int64_t n = 0;
  for (int j = 0; j < count; j++) n += len[j];
  const signature_t mine = {n, (int32_t)dt + (avg ? 256 : 0)};
  char *mine_in[LT_SHM_MAX_RANKS]; /* rank k's buffer, at the slot of this rank's slice */
  const void *src[LT_SHM_MAX_RANKS];
  for (int k = 0; k < R; k++) mine_in[k] = buffer(s, k) + me * slot * (int64_t)es;
  for (int64_t off = 0; off < n; off += per) {
    const int64_t m = n - off < per ? n - off : per;
    for (int k = 0; k < R; k++) {
      if (k == me) continue;
      const int64_t a = slice_at(m, k, R), z = slice_at(m, k + 1, R);
      move(seg, len, count, es, off + a, z - a, buffer(s, me) + k * slot * (int64_t)es, true);
    }
    /* read by the others before they pass the next barrier, which this rank passes only after
       them: it is not overwritten before */
    *signature_of(s, me) = mine;
    barrier(s);
    for (int k = 0; k < R; k++) {
      const signature_t *o = signature_of(s, k);
      if (o->n != mine.n || o->kind != mine.kind) {
        s->their_n = o->n;
        s->their_dtype = (lt_dtype)(o->kind & 255);
        s->their_avg = o->kind >= 256;
        return k;
      }
    }
    const int64_t lo = slice_at(m, me, R), hi = slice_at(m, me + 1, R);
    for (int64_t at = lo; at < hi;) {
      char *own;
      const int64_t t = run_at(seg, len, count, es, off + at, hi - at, &own);
      if (t <= 0) break;
      const int64_t in_slot = (at - lo) * (int64_t)es;
      for (int k = 0; k < R; k++) src[k] = k == me ? own : mine_in[k] + in_slot;
      if (dt == LT_FLOAT32)
        reduce_f32((float *)own, (float *)(mine_in[me] + in_slot), (const float *const *)src, R, t, avg);
      else reduce_f64((double *)own, (double *)(mine_in[me] + in_slot), (const double *const *)src, R, t, avg);
      at += t;
    }
    barrier(s);
    for (int k = 0; k < R; k++) {
      if (k == me) continue;
      const int64_t a = slice_at(m, k, R), z = slice_at(m, k + 1, R);
      move(seg, len, count, es, off + a, z - a, buffer(s, k) + k * slot * (int64_t)es, false);
    }
  }
  return -1;
}

int lt_shm_all_reduce(lt_shm_t *s, void *data, int64_t n, lt_dtype dt, bool avg) {
  return lt_shm_all_reduce_many(s, &data, &n, 1, dt, avg);
}
