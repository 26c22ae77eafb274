/* What an OpenMP parallel region costs with libgomp, at a constant team size and when the size
   changes from one region to the next: the measurement behind core/iter.h's one team for every
   kernel region (lt_team_size, LT_WORKERS). Empty regions, then regions 20 us apart (the time a
   Lua op between two kernels takes).

     mkdir -p build && gcc -O2 -fopenmp bench/omp_regions.c -o build/omp_regions && build/omp_regions

   On a 16-core machine (bench/RESULTS.md): 0.9-4.4 us a region at a constant size, 380-400 us
   alternating 16 and 2 threads, 220-240 us mixing 16, 2, 8 and 3. */
#include <omp.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void busy(int us) {
  double t = now();
  while (now() - t < us * 1e-6) {
  }
}

/* regions of the sizes in seq, in turn; the time a region beyond the gap */
static void run(const char *name, const int *seq, int len, int gap_us) {
  int reps = 20000 / len;
  double t = now();
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < len; i++) {
#pragma omp parallel num_threads(seq[i])
      { __asm__ volatile("" ::: "memory"); }
      if (gap_us) busy(gap_us);
    }
  printf("%-30s gap %2d us: %8.2f us a region\n", name, gap_us, (now() - t) / (reps * len) * 1e6 - gap_us);
}

int main(void) {
  int n = omp_get_max_threads();
  int all[] = {n}, half[] = {n / 2 > 0 ? n / 2 : 1}, two[] = {2}, alt[] = {n, 2}, mix[] = {n, 2, n / 2, 3};
  printf("# %d threads available\n", n);
  for (int gap = 0; gap <= 20; gap += 20) {
    run("constant, all threads", all, 1, gap);
    run("constant, half of them", half, 1, gap);
    run("constant, 2", two, 1, gap);
    run("alternating all and 2", alt, 2, gap);
    run("mixed all, 2, half, 3", mix, 4, gap);
  }
  return 0;
}
