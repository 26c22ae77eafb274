/* Tests of core/steal.c: the runs a static split gives, taken from the front by their owner and
   from the back by others; every unit taken exactly once, with one thread or many, with a worker
   the team lacks, with a slow worker (whose units the others then take), and with more workers
   than units; and the single steps (own front, another's back, what is left, the runs) that the
   Winograd weight gradient's ordered sums rely on.

   Build: make build/test/test_steal (linked with the core, as every C test)
   Run: ./test_steal
   Output: a line per failed check, then "N passed, N failed"; the exit status is 1 on failure. */
#include "core/steal.h"
#include "spec/c/tensor_check.h"

#include <omp.h>
#include <stdbool.h>
#include <time.h>

/* one thread playing every worker in turn, by hand: the order of what each takes */
static void sequential(void) {
  lt_steal_t s;
  lt_steal_init(&s, 10, 3); /* runs [0, 3), [3, 6), [6, 10) */
  check(lt_steal_next(&s, 0) == 0 && lt_steal_next(&s, 0) == 1 && lt_steal_next(&s, 0) == 2,
        "worker 0 takes its run 0, 1, 2 from the front");
  check(lt_steal_next(&s, 1) == 3, "worker 1 starts at 3");
  check(lt_steal_next(&s, 0) == 9, "worker 0, its run empty, takes the back (9) of the longest run");
  check(lt_steal_next(&s, 0) == 8, "then 8: worker 2's run, 3 left, is still longer than worker 1's 2");
  check(lt_steal_next(&s, 2) == 6, "worker 2 starts at its front");
  check(lt_steal_next(&s, 1) == 4 && lt_steal_next(&s, 1) == 5, "worker 1 goes on from its front to its end");
  check(lt_steal_next(&s, 1) == 7, "worker 1, its run empty, takes worker 2's last");
  check(lt_steal_next(&s, 0) == -1 && lt_steal_next(&s, 1) == -1 && lt_steal_next(&s, 2) == -1,
        "all empty: -1 for every worker");

  lt_steal_init(&s, 5, 1);
  bool order = true;
  for (int64_t i = 0; i < 5; i++) order = order && lt_steal_next(&s, 0) == i;
  check(order && lt_steal_next(&s, 0) == -1, "one worker: 0..4 in order, then -1");

  lt_steal_init(&s, 0, 4);
  check(lt_steal_next(&s, 2) == -1, "no units: -1");

  lt_steal_init(&s, 2, 4); /* runs [0,0) [0,1) [1,1) [1,2) */
  int64_t a = lt_steal_next(&s, 0), b = lt_steal_next(&s, 0), c = lt_steal_next(&s, 0);
  check(((a == 0 && b == 1) || (a == 1 && b == 0)) && c == -1, "more workers than units: each taken once (%lld %lld %lld)",
        (long long)a, (long long)b, (long long)c);

  lt_steal_init(&s, 6, 2);
  int64_t u = lt_steal_next(&s, 7); /* a worker beyond the runs only steals */
  check(u == 2 || u == 5, "a worker without a run steals a back unit (%lld)", (long long)u);
}

/* the parts of the interface the weight gradient's ordered sums rely on */
static void parts(void) {
  lt_steal_t s;
  lt_steal_init(&s, 11, 2); /* runs [0, 5), [5, 11) */
  int64_t b, e;
  lt_steal_run(11, 2, 0, &b, &e);
  check(b == 0 && e == 5, "lt_steal_run: worker 0's run [0, 5) (%lld, %lld)", (long long)b, (long long)e);
  lt_steal_run(11, 2, 1, &b, &e);
  check(b == 5 && e == 11, "lt_steal_run: worker 1's run [5, 11) (%lld, %lld)", (long long)b, (long long)e);
  lt_steal_run(11, 2, 2, &b, &e);
  check(b == e, "lt_steal_run: no run for a worker beyond the count");
  check(lt_steal_own(&s, 1) == 5 && lt_steal_own(&s, 1) == 6, "lt_steal_own: from the front");
  check(lt_steal_other(&s) == 4, "lt_steal_other: the back of the longest run (worker 0's: 5 left against 4)");
  check(lt_steal_other(&s) == 3, "lt_steal_other: of runs as long, the first");
  check(lt_steal_other(&s) == 10, "lt_steal_other: then worker 1's, now the longer");
  lt_steal_left(&s, 0, &b, &e);
  check(b == 0 && e == 3, "lt_steal_left: worker 0 has [0, 3) left (%lld, %lld)", (long long)b, (long long)e);
  lt_steal_left(&s, 1, &b, &e);
  check(b == 7 && e == 10, "lt_steal_left: worker 1 has [7, 10) left (%lld, %lld)", (long long)b, (long long)e);
  check(lt_steal_own(&s, 1) == 7 && lt_steal_own(&s, 1) == 8 && lt_steal_own(&s, 1) == 9 && lt_steal_own(&s, 1) == -1,
        "lt_steal_own: to the end of what is left, then -1");
  lt_steal_left(&s, 1, &b, &e);
  check(b == e, "lt_steal_left: nothing left of an emptied run");
  check(lt_steal_set_delay(7) == 0 && lt_steal_set_delay(0) == 7, "lt_steal_set_delay returns the previous");
}

static void spin_us(double us) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((double)(t.tv_sec - t0.tv_sec) * 1e6 + (double)(t.tv_nsec - t0.tv_nsec) * 1e-3 < us);
}

/* a team of nt threads over n units, worker `slow` (or none: -1) taking `delay` us a unit; every
   unit must be taken once; returns how many units worker `slow`'s run lost to others */
static int64_t team(int64_t n, int nw, int nt, int slow, double delay) {
  lt_steal_t s;
  lt_steal_init(&s, n, nw);
  int *seen = calloc((size_t)n, sizeof *seen), *by = calloc((size_t)n, sizeof *by);
#pragma omp parallel num_threads(nt)
  {
    int w = omp_get_thread_num();
    for (int64_t u; (u = lt_steal_next(&s, w)) >= 0;) {
      if (u < n) __atomic_add_fetch(&seen[u], 1, __ATOMIC_RELAXED), by[u] = w;
      if (w == slow) spin_us(delay);
    }
  }
  int64_t once = 0, lost = 0;
  for (int64_t u = 0; u < n; u++) {
    once += seen[u] == 1;
    if (slow >= 0 && u >= n * slow / nw && u < n * (slow + 1) / nw && by[u] != slow) lost++;
  }
  check(once == n, "%d threads, %d runs, %lld units: each taken exactly once (%lld)", nt, nw, (long long)n,
        (long long)once);
  free(seen), free(by);
  return lost;
}

int main(void) {
  sequential();
  parts();
  for (int r = 0; r < 20; r++) {
    team(1000, 2, 2, -1, 0);
    team(1000, 4, 4, -1, 0);
    team(37, 3, 2, -1, 0); /* a run whose worker the team lacks */
    team(3, 8, 8, -1, 0);
  }
  /* worker 0 slow: 1 ms a unit against nothing for the others, who then take most of its run */
  int64_t lost = team(40, 2, 2, 0, 1000.0);
  check(lost >= 10, "a slow worker's run is taken by the other (%lld of 20 units)", (long long)lost);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
