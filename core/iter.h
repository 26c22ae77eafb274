/* Elementwise iteration over broadcast operands: the shapes are broadcast, dimensions that can be
   merged are merged, and a kernel's inner loop is called once per innermost row (split across
   threads above a size threshold). Kernels see only pointers, byte strides and counts. */
#ifndef LT_ITER_H
#define LT_ITER_H

#include "core/tensor.h"

#include <omp.h>

#define LT_ITER_MAX_OPS 4

/* data[k] points at operand k's first element of the row; strides[k] is its byte stride along the
   row; n elements. ctx carries the op's scalar arguments. */
typedef void (*lt_loop_fn)(char **data, const int64_t *strides, int64_t n, const void *ctx);

typedef struct {
  int nops;            /* operand 0 is the output */
  int ndim;            /* after merging; dimension 0 is the innermost */
  int64_t numel;
  int64_t shape[LT_MAX_DIM];
  int64_t strides[LT_MAX_DIM][LT_ITER_MAX_OPS]; /* bytes */
  char *data[LT_ITER_MAX_OPS];
} lt_iter_t;

/* Broadcast shapes (PyTorch's rules); error names op and both shapes. */
int lt_broadcast_shapes(const char *op, int na, const int64_t *a, int nb, const int64_t *b,
                        int *nout, int64_t *out);
/* Set up an iteration: ops[0] is the output, whose shape must be the broadcast shape of all. An
   input given as NULL is a single value broadcast everywhere: set it->data[k] to it afterwards. */
int lt_iter_init(lt_iter_t *it, int nops, lt_tensor_t *const *ops);
/* Run loop over the iteration; threads when there is enough work (grain: elements per thread). */
void lt_iter_run(const lt_iter_t *it, lt_loop_fn loop, const void *ctx, int64_t grain);

/* Threads used by CPU kernels (OpenMP), and the element count above which loops go parallel. */
int lt_num_threads(void);
void lt_set_num_threads(int n);
/* A limit for the calling thread only (0: none): lt_num_threads() there returns the smaller of it
   and the global setting, and OpenMP regions the thread starts use at most n threads. */
void lt_set_thread_num_threads(int n);
int lt_thread_num_threads(void); /* the calling thread's limit, 0 for none */
#define LT_GRAIN 32768
/* Threads for `work` units of which each thread should get at least `per_thread`: at most `limit`
   (lt_num_threads() when 0), one inside a parallel region. A parallel region costs more with every
   thread it wakes: on 16 cores, splitting 2M multiply-adds over all of them made an LSTM's step 3x
   slower than one thread; each thread needs work worth its wake-up. */
int lt_threads_for(double work, double per_thread, int limit);

/* The size of every parallel region the CPU kernels open: the same on a thread whatever the work
   (lt_num_threads(), within OpenMP's setting), 1 inside a parallel region. libgomp re-forms its
   thread pool whenever a region asks for another number of threads than the one before: on 16
   cores a region cost 1-5 us at a constant size and 20-450 us when sizes alternated (4/2: 20 us,
   16/2: 380-450 us; bench/omp_regions.c). So a loop with work for fewer threads than the team leaves
   the others idle (they pass the region's end) instead of asking for a smaller team. */
int lt_team_size(void);

/* Runs the statements in a parallel region of lt_team_size() threads of which the first `nt` (or
   as many as the team has) are workers, `lt_w` (0-based) of `lt_nw`; the others skip them. With nt
   <= 1 they run here, as worker 0 of 1. They may not contain OpenMP worksharing or barriers. */
#define LT_WORKERS(nt, ...)                                                                       \
  do {                                                                                            \
    const int lt_nt_ = (nt);                                                                      \
    if (lt_nt_ > 1) {                                                                             \
      _Pragma("omp parallel num_threads(lt_team_size())")                                         \
      {                                                                                           \
        const int lt_tn_ = omp_get_num_threads();                                                 \
        const int lt_nw = lt_tn_ < lt_nt_ ? lt_tn_ : lt_nt_, lt_w = omp_get_thread_num();         \
        if (lt_w < lt_nw) { __VA_ARGS__ }                                                         \
      }                                                                                           \
    } else {                                                                                      \
      const int lt_nw = 1, lt_w = 0;                                                              \
      (void)lt_nw, (void)lt_w;                                                                    \
      { __VA_ARGS__ }                                                                             \
    }                                                                                             \
  } while (0)

#endif
