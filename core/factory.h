/* Tensor creation: filled, ranges, identity, and random tensors from a generator. */
#ifndef LT_FACTORY_H
#define LT_FACTORY_H

#include "core/elementwise.h"
#include "core/random.h"
#include "core/tensor.h"

lt_tensor_t *lt_full(int ndim, const int64_t *sizes, lt_operand_t value, lt_dtype dt, lt_device_t dev);
/* start + i*step for i in [0, ceil((end-start)/step)) */
lt_tensor_t *lt_arange(double start, double end, double step, lt_dtype dt, lt_device_t dev);
lt_tensor_t *lt_linspace(double start, double end, int64_t steps, lt_dtype dt, lt_device_t dev);
/* An uninitialised tensor of the given sizes and strides (>= 0), over a storage of just the
   elements they reach (torch.empty_strided). */
lt_tensor_t *lt_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, lt_dtype dt, lt_device_t dev);
lt_tensor_t *lt_eye(int64_t n, int64_t m, lt_dtype dt, lt_device_t dev);

/* In-place random fills of any tensor (non-contiguous ones through a temporary). g NULL: the
   default CPU generator. */
int lt_uniform_(lt_tensor_t *x, double from, double to, lt_generator_t *g);
int lt_normal_(lt_tensor_t *x, double mean, double std, lt_generator_t *g);
int lt_random_int_(lt_tensor_t *x, int64_t low, int64_t high, lt_generator_t *g);
int lt_bernoulli_(lt_tensor_t *x, double p, lt_generator_t *g);
int lt_exponential_(lt_tensor_t *x, double lambd, lt_generator_t *g);
int lt_geometric_(lt_tensor_t *x, double p, lt_generator_t *g);
int lt_cauchy_(lt_tensor_t *x, double median, double sigma, lt_generator_t *g);
int lt_log_normal_(lt_tensor_t *x, double mean, double std, lt_generator_t *g);
lt_tensor_t *lt_randperm(int64_t n, lt_dtype dt, lt_device_t dev, lt_generator_t *g);

#endif
