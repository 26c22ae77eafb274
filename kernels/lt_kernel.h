/* The one macro that marks kernel math shared by the CPU and CUDA backends: plain `static inline`
   in C, `__host__ __device__` under nvcc. Every per-element body in the kernel math headers uses it. */
#ifndef LT_KERNEL_H
#define LT_KERNEL_H

#include <stdint.h>

#ifdef __CUDACC__
#define LT_HD static inline __host__ __device__
#else
#define LT_HD static inline __attribute__((always_inline))
#endif

#endif
