/* The fused LSTM cell (core/rnn.c over kernels/rnn.h): one op for the elementwise part of an LSTM
   step, so that a step is a matrix product and this, instead of ten ops (each a kernel launch on a
   GPU and a node of the graph). */
#ifndef LT_RNN_H
#define LT_RNN_H

#include "core/tensor.h"

/* From the gate pre-activations g [N, 4H] (input, forget, cell, output) and the cell state c
   [N, H], float32 or float64 on one device: *h = sigmoid(o) tanh(c2) and *c2 = sigmoid(f) c +
   sigmoid(i) tanh(g), recorded for autograd (ThnnFusedLstmCellBackward0, differentiable twice). */
int lt_lstm_cell(lt_tensor_t *g, lt_tensor_t *c, lt_tensor_t **h, lt_tensor_t **c2);
/* Its backward without autograd: *dg [N, 4H] and *dc [N, H] from dh and dc2 (either NULL: zero). */
int lt_lstm_cell_backward(lt_tensor_t *g, lt_tensor_t *c, lt_tensor_t *dh, lt_tensor_t *dc2, lt_tensor_t **dg,
                          lt_tensor_t **dc);

#endif
