#!/usr/bin/env python3
"""Writes spec/data/rnn_packed_reference.lua: PyTorch's nn.LSTM (2 layers, bidirectional) run on a
batch packed by pack_padded_sequence with enforce_sorted=False, for spec/nn_rnn_packed_spec.lua: the
PackedSequence (data, batch_sizes, sorted and unsorted indices), the output padded back by
pad_packed_sequence, h_n, c_n, and the gradients of a weighted sum of them with respect to the
padded input and two weights.

Run: /usr/bin/python3 tools/gen_rnn_packed_reference.py  (needs PyTorch; the generated file is
committed, CI has no PyTorch). Weights and inputs are float64 values from a fixed formula, so the
spec rebuilds them without PyTorch; indices are written 1-based, as lutorch gives them."""
import math

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lua_reference import write


def det(shape, k, scale=1.0):
    """float64 values sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4, i the flat index from 0"""
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4).reshape(shape)


def flat(t):
    t = t.detach()
    return {"shape": list(t.shape), "data": t.double().reshape(-1).tolist()}


T, B, I, H = 5, 4, 3, 2
LENGTHS = [3, 5, 1, 4]  # unsorted, distinct
lstm = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True).double()
names = []
with torch.no_grad():
    for k, (name, p) in enumerate(lstm.named_parameters()):
        p.copy_(det(p.shape, k + 1, 0.5))
        names.append(name)
x = det((T, B, I), 100, 1.0).requires_grad_()
packed = pack_padded_sequence(x, LENGTHS, enforce_sorted=False)
out, (h_n, c_n) = lstm(packed)
padded, lengths = pad_packed_sequence(out, total_length=T)
loss = (padded * det(padded.shape, 200)).sum() + (h_n * det(h_n.shape, 201)).sum() + \
    (c_n * det(c_n.shape, 202)).sum()
loss.backward()

write("rnn_packed_reference.lua", "gen_rnn_packed_reference.py",
      ["nn.LSTM(%d, %d, num_layers=2, bidirectional=True) on a (T=%d, B=%d) batch packed with" % (I, H, T, B),
       "enforce_sorted=False; parameter k (from 1, in named_parameters order) = det(shape, k, 0.5),",
       "x = det(shape, 100), loss = sum(padded * det(_, 200)) + sum(h_n * det(_, 201)) + sum(c_n * det(_, 202)),",
       "det(shape, k, s)[i] = sin(i * 0.7071 + k * 1.3) * s + i * 1e-4 over the flat index i from 0"],
      {"sizes": {"T": T, "B": B, "input_size": I, "hidden_size": H},
       "lengths": LENGTHS,
       "parameters": names,
       "packed_data": flat(packed.data),
       "batch_sizes": packed.batch_sizes.tolist(),
       "sorted_indices": [i + 1 for i in packed.sorted_indices.tolist()],
       "unsorted_indices": [i + 1 for i in packed.unsorted_indices.tolist()],
       "output_data": flat(out.data),
       "padded": flat(padded),
       "out_lengths": lengths.tolist(),
       "h_n": flat(h_n),
       "c_n": flat(c_n),
       "loss": loss.item(),
       "grad_x": flat(x.grad),
       "grad_weight_hh_l0_reverse": flat(lstm.weight_hh_l0_reverse.grad),
       "grad_weight_ih_l1": flat(lstm.weight_ih_l1.grad)})
