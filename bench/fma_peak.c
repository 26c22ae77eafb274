/* The machine's float32 fused multiply-add ceiling at the time of the run: every thread runs
   12 independent chains of a*b+c on the widest vectors the compiler targets (-march=native:
   16 floats with AVX-512, 8 with AVX2), 2 flops an element. `bench/run.sh` builds and runs it
   beside bench/mm.lua, so that the matrix product's GFLOP/s can be read against what the cores
   gave in the same minutes (this shared virtual machine's speed moves by 40% from day to day).

     gcc -O3 -march=native -fopenmp bench/fma_peak.c -o build/fma_peak && build/fma_peak */
#include <omp.h>
#include <stdio.h>
#include <time.h>

typedef float vec __attribute__((vector_size(64)));
#define CHAINS 12

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* GFLOP/s of one thread over iters rounds of CHAINS vector FMAs; sink keeps the result live */
static double chains(long iters, float *sink) {
  vec a[CHAINS], b, c;
  for (int i = 0; i < 16; i++) {
    b[i] = 0.9999f;
    c[i] = 1e-6f;
  }
  for (int k = 0; k < CHAINS; k++)
    for (int i = 0; i < 16; i++) a[k][i] = (float)(k + i) * 1e-3f;
  double t0 = now();
  for (long r = 0; r < iters; r++)
    for (int k = 0; k < CHAINS; k++) a[k] = a[k] * b + c;
  double t = now() - t0;
  float s = 0;
  for (int k = 0; k < CHAINS; k++)
    for (int i = 0; i < 16; i++) s += a[k][i];
  *sink = s;
  return (double)iters * CHAINS * 16 * 2 / t / 1e9;
}

int main(void) {
  long iters = 100000000;
  double best = 0;
  float sink = 0;
  /* best of 5 rounds of all threads at once: the sum of the threads' rates */
  for (int round = 0; round < 5; round++) {
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
      float s;
      total += chains(iters / 5, &s);
#pragma omp critical
      sink += s;
    }
    if (total > best) best = total;
  }
  printf("RESULT name=machine_fma_peak value=%.1f unit=GFLOP/s threads=%d check=%g\n", best,
         omp_get_max_threads(), (double)sink);
  return 0;
}
