/* The LSTM cell's elementwise step, written once for the CPU loop (kernels/cpu/rnn.c) and the CUDA
   kernel (kernels/cuda/rnn.cu). One unit of one row: the gate pre-activations gi, gf, gg, go
   (PyTorch's order: input, forget, cell, output; the recurrent and input projections and their
   biases already added) and the cell state c give
     c2 = sigmoid(gf) c + sigmoid(gi) tanh(gg),   h = sigmoid(go) tanh(c2)
   and backward, from the gradients dh and dc2 of h and c2, those of the four gates and of c. The
   sigmoid and tanh are the elementwise table's (kernels/elementwise.h), so that the fused cell
   computes what the composed ops compute. */
#ifndef LT_RNN_KERNEL_H
#define LT_RNN_KERNEL_H

#include "elementwise.h"

#define LT_RNN_CELL(T, SUF)                                                                          \
  LT_HD T lt_rnn_sigmoid_##SUF(T v) { return (T)1 / ((T)1 + LT_EXP(-(v))); }                         \
  LT_HD void lt_lstm_cell_fwd_##SUF(T gi, T gf, T gg, T go, T c, T *h, T *c2) {                      \
    T i = lt_rnn_sigmoid_##SUF(gi), f = lt_rnn_sigmoid_##SUF(gf), g = LT_TANH(gg);                   \
    T o = lt_rnn_sigmoid_##SUF(go);                                                                  \
    T fc = f * c, ig = i * g;                                                                        \
    T cn = fc + ig;                                                                                  \
    *c2 = cn;                                                                                        \
    *h = o * LT_TANH(cn);                                                                            \
  }                                                                                                  \
  /* *di, *df, *dg, *do_: the gates' gradients; *dc: c's */                                          \
  LT_HD void lt_lstm_cell_bwd_##SUF(T gi, T gf, T gg, T go, T c, T dh, T dc2, T *di, T *df, T *dg,    \
                                    T *do_, T *dc) {                                                 \
    T i = lt_rnn_sigmoid_##SUF(gi), f = lt_rnn_sigmoid_##SUF(gf), g = LT_TANH(gg);                   \
    T o = lt_rnn_sigmoid_##SUF(go);                                                                  \
    T fc = f * c, ig = i * g;                                                                        \
    T tc = LT_TANH(fc + ig);                                                                         \
    T dcn = dc2 + dh * o * ((T)1 - tc * tc);                                                         \
    *di = dcn * g * ((T)1 - i) * i;                                                                  \
    *df = dcn * c * ((T)1 - f) * f;                                                                  \
    *dg = dcn * i * ((T)1 - g * g);                                                                  \
    *do_ = dh * tc * ((T)1 - o) * o;                                                                 \
    *dc = dcn * f;                                                                                   \
  }

LT_RNN_CELL(float, f)
LT_RNN_CELL(double, d)

#endif
