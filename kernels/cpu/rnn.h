/* The CPU loops of the fused LSTM cell (kernels/rnn.h's math) over contiguous memory: the gate
   pre-activations g are [N, 4H] (rows of i, f, g, o), the states c, h, c2 [N, H]. float32 and
   float64. */
#ifndef LT_CPU_RNN_H
#define LT_CPU_RNN_H

#include "core/dtype.h"

#include <stdint.h>

void lt_cpu_lstm_cell(lt_dtype dt, const void *g, const void *c, void *h, void *c2, int64_t N, int64_t H);
/* dg [N, 4H] and dc [N, H] from dh and dc2 (either NULL: zero) */
void lt_cpu_lstm_cell_backward(lt_dtype dt, const void *g, const void *c, const void *dh, const void *dc2, void *dg,
                               void *dc, int64_t N, int64_t H);

#endif
