/* The CUDA launchers of the fused LSTM cell (kernels/cuda/rnn.cu, kernels/rnn.h's math), callable
   from C: contiguous device memory as kernels/cpu/rnn.h describes it, an lt_dtype number (float32
   or float64) and a cudaStream_t as `stream`. Each returns the launch's cudaError_t as an int (0 on
   success), or -1 for another dtype. */
#ifndef LT_CUDA_RNN_H
#define LT_CUDA_RNN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int lt_cuda_k_lstm_cell(int dtype, const void *g, const void *c, void *h, void *c2, int64_t N, int64_t H,
                        void *stream);
/* dh, dc2: NULL for zero */
int lt_cuda_k_lstm_cell_backward(int dtype, const void *g, const void *c, const void *dh, const void *dc2, void *dg,
                                 void *dc, int64_t N, int64_t H, void *stream);

#ifdef __cplusplus
}
#endif

#endif
