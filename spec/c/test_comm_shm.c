/* Tests of core/comm_shm.c, the shared-memory all-reduce, over 2, 3 and 5 forked processes sharing
   an anonymous mapping: float32 and float64, SUM and AVG, lengths from 0 to several pieces (small
   pieces, so that a piece boundary falls inside a slice, and many pieces go through each buffer),
   calls back to back (a fast rank must not overwrite a buffer a slow one still reads: one rank
   sleeps now and then), and the same values split over several segments reduced as one; ranks
   that call with different lengths or dtypes find out and name each other. Each rank checks its result bit for bit against the sum computed here in
   rank order from what every rank held (the values are a function of rank and index), so every
   rank also has the same bits as the others.

   Build (from the repository root):
     gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -fopenmp -I. spec/c/test_comm_shm.c \
         core/comm_shm.c core/dtype.c core/error.c -lm -lpthread -o test_comm_shm
   Run: ./test_comm_shm [-v]
   Output: a line per failed check, then "N passed, N failed"; the exit status is 1 on failure. */
#include "core/comm_shm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int verbose;

/* what rank r holds at index i of call c: not exactly representable sums, so that order matters */
static double value(int r, int64_t i, int c) { return 0.1 * (r + 1) + 1e-3 * (double)((i * 7 + c) % 1000) / 3.0; }

typedef struct {
  int passed, failed;
  char first_failure[256];
} tally_t;

static void record(tally_t *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void record(tally_t *t, int ok, const char *fmt, ...) {
  if (ok) {
    t->passed++;
    return;
  }
  if (t->failed++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->first_failure, sizeof t->first_failure, fmt, ap);
    va_end(ap);
  }
}

static void nap(void) {
  struct timespec ts = {0, 300000};
  nanosleep(&ts, NULL);
}

/* one rank's run of every case; its tally goes to *t (in shared memory) */
static void run_rank(lt_shm_t *s, tally_t *t) {
  static const int64_t lengths[] = {0, 1, 2, 3, 5, 1023, 1024, 1025, 4096, 10000, 100003};
  int call = 0;
  for (int d = 0; d < 2; d++) {
    const lt_dtype dt = d ? LT_FLOAT64 : LT_FLOAT32;
    for (int avg = 0; avg < 2; avg++)
      for (int many = 0; many < 2; many++)
      for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++, call++) {
        const int64_t n = lengths[li];
        void *data = malloc((size_t)(n ? n : 1) * 8);
        for (int64_t i = 0; i < n; i++) {
          double v = value(s->rank, i, call);
          if (dt == LT_FLOAT32) ((float *)data)[i] = (float)v;
          else ((double *)data)[i] = v;
        }
        if (s->rank == 1 && call % 3 == 0) nap(); /* a late rank */
        int other = -1;
        if (!many) {
          other = lt_shm_all_reduce(s, data, n, dt, avg);
        } else { /* the same values in five separate segments (one empty), reduced as one, copied back */
          const int64_t cut[6] = {0, n / 7, n / 3, n / 3, n / 3 + (n > 2), n}, es = dt == LT_FLOAT32 ? 4 : 8;
          void *seg[5];
          int64_t len[5];
          for (int j = 0; j < 5; j++) {
            len[j] = cut[j + 1] - cut[j];
            seg[j] = malloc((size_t)(len[j] ? len[j] : 1) * 8);
            memcpy(seg[j], (char *)data + cut[j] * es, (size_t)(len[j] * es));
          }
          other = lt_shm_all_reduce_many(s, seg, len, 5, dt, avg);
          for (int j = 0; j < 5; j++) {
            memcpy((char *)data + cut[j] * es, seg[j], (size_t)(len[j] * es));
            free(seg[j]);
          }
        }
        if (s->rank == 0 && call % 5 == 0) nap(); /* a rank that reads late */
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++) {
          if (dt == LT_FLOAT32) {
            float want = (float)value(0, i, call);
            for (int r = 1; r < s->size; r++) want += (float)value(r, i, call);
            if (avg) want /= (float)s->size;
            if (memcmp(&want, (float *)data + i, sizeof want) != 0) bad = i;
          } else {
            double want = value(0, i, call);
            for (int r = 1; r < s->size; r++) want += value(r, i, call);
            if (avg) want /= (double)s->size;
            if (memcmp(&want, (double *)data + i, sizeof want) != 0) bad = i;
          }
        }
        record(t, other == -1, "%d ranks, rank %d: rank %d said to differ", s->size, s->rank, other);
        record(t, bad < 0, "%d ranks, rank %d: %s %s of %lld elements%s differs at %lld", s->size, s->rank,
               d ? "float64" : "float32", avg ? "AVG" : "SUM", (long long)n, many ? " in 5 segments" : "",
               (long long)bad);
        free(data);
      }
  }
}

static int passed, failed;

/* `size` processes over one mapping with buffers of `piece` bytes */
static void suite(int size, size_t piece) {
  size_t bytes = lt_shm_bytes(size, piece);
  char *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  tally_t *tallies = mmap(NULL, sizeof(tally_t) * (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
  if (base == MAP_FAILED || tallies == MAP_FAILED) {
    printf("FAILED cannot map %zu bytes\n", bytes);
    failed++;
    return;
  }
  memset(tallies, 0, sizeof(tally_t) * (size_t)size);
  pid_t kids[8];
  for (int r = 1; r < size; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      lt_shm_t s;
      lt_shm_init(&s, base, r, size, piece);
      run_rank(&s, &tallies[r]);
      _exit(0);
    }
  }
  lt_shm_t s;
  lt_shm_init(&s, base, 0, size, piece);
  run_rank(&s, &tallies[0]);
  for (int r = 1; r < size; r++) {
    int st = 0;
    waitpid(kids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      printf("FAILED %d ranks: rank %d ended abnormally (status %d)\n", size, r, st);
      failed++;
    }
  }
  for (int r = 0; r < size; r++) {
    passed += tallies[r].passed;
    failed += tallies[r].failed;
    if (tallies[r].failed) printf("FAILED %s (and %d more)\n", tallies[r].first_failure, tallies[r].failed - 1);
  }
  if (verbose) printf("ok     %d ranks, %zu-byte pieces: %d checks a rank\n", size, piece, tallies[0].passed);
  munmap(base, bytes);
  munmap(tallies, sizeof(tally_t) * (size_t)size);
}

/* two ranks calling with different lengths, then different dtypes: each names the other and its call */
static void suite_out_of_step(void) {
  size_t piece = 4096, bytes = lt_shm_bytes(2, piece);
  char *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    printf("FAILED cannot map %zu bytes\n", bytes);
    failed++;
    return;
  }
  double data[20] = {0};
  pid_t kid = fork();
  const int me = kid == 0;
  lt_shm_t s;
  lt_shm_init(&s, base, me, 2, piece);
  int k1 = lt_shm_all_reduce(&s, data, me ? 20 : 10, LT_FLOAT32, false);
  int ok1 = k1 == 1 - me && s.their_n == (me ? 10 : 20) && s.their_dtype == LT_FLOAT32 && !s.their_avg;
  if (me) _exit(ok1 ? 0 : 1);
  int st = 0;
  waitpid(kid, &st, 0);
  int ok = ok1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  ok ? passed++ : failed++;
  if (!ok || verbose) printf("%s ranks reducing 10 and 20 elements each name the other\n", ok ? "ok    " : "FAILED");
  /* a new group over a fresh mapping: the first is out of step for good */
  munmap(base, bytes);
  base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    printf("FAILED cannot map %zu bytes\n", bytes);
    failed++;
    return;
  }
  kid = fork();
  const int me2 = kid == 0;
  lt_shm_init(&s, base, me2, 2, piece);
  int k2 = lt_shm_all_reduce(&s, data, 8, me2 ? LT_FLOAT64 : LT_FLOAT32, true);
  int ok2 = k2 == 1 - me2 && s.their_n == 8 && s.their_dtype == (me2 ? LT_FLOAT32 : LT_FLOAT64) && s.their_avg;
  if (me2) _exit(ok2 ? 0 : 1);
  waitpid(kid, &st, 0);
  ok = ok2 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  ok ? passed++ : failed++;
  if (!ok || verbose) printf("%s ranks reducing float32 and float64 each name the other\n", ok ? "ok    " : "FAILED");
  munmap(base, bytes);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-v") == 0) verbose = 1;
  /* the sizes the MPI backend picks */
  int ok = lt_shm_piece_for(2) == (size_t)4 << 20 && lt_shm_piece_for(8) == (size_t)3 << 20 &&
           lt_shm_piece_for(64) == (size_t)384 << 10 && lt_shm_piece_for(1000) == (size_t)256 << 10;
  ok ? passed++ : failed++;
  if (!ok || verbose) printf("%s piece sizes for 2, 8, 64, 1000 ranks\n", ok ? "ok    " : "FAILED");
  ok = lt_shm_takes(LT_FLOAT32, true) && lt_shm_takes(LT_FLOAT64, true) && !lt_shm_takes(LT_FLOAT32, false) &&
       !lt_shm_takes(LT_FLOAT16, true) && !lt_shm_takes(LT_INT64, true);
  ok ? passed++ : failed++;
  if (!ok || verbose) printf("%s dtypes and ops taken\n", ok ? "ok    " : "FAILED");
  suite(2, 4096);            /* 1024 floats a piece: most lengths span several */
  suite(3, 4096);
  suite(5, 8192);
  suite(2, (size_t)4 << 20); /* the backend's size: one piece */
  suite(1, 4096);            /* one rank: the data unchanged but for AVG's division by 1 */
  suite_out_of_step();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
