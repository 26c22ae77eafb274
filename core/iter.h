/* Elementwise iteration over broadcast operands: the shapes are broadcast, dimensions that can be
   merged are merged, and a kernel's inner loop is called once per innermost row (split across
   threads above a size threshold). Kernels see only pointers, byte strides and counts. */
#ifndef LT_ITER_H
#define LT_ITER_H

#include "core/tensor.h"

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

#endif
