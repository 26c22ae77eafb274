#!/usr/bin/env python3
"""Generates spec/data/nn_reference.lua: what PyTorch's torch.nn.functional computes, forward and
backward, for fixed inputs, so that spec/nn_parity_spec.lua checks lutorch against PyTorch itself.

Run from the repository root with a Python that has PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/gen_nn_reference.py

Inputs are float64 values from a fixed formula (no random generator), stored in the file with
the results. Each case gives its inputs, the keyword options, the output, and the gradient of
sum(output * gy) with respect to each input that requires grad (gy is stored too). Class targets
and ignore_index are written 1-based, as lutorch takes them.
"""

import math
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "data",
                   "nn_reference.lua")

torch.set_default_dtype(torch.float64)


def det(shape, k, scale=1.0):
    """Deterministic values in [-scale, scale] that are all distinct (no ties for max pooling)."""
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    v = torch.sin(i * 0.7071 + k * 1.3) * scale + i * 1e-4
    return v.reshape(shape)


def lua_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "0/0"
        if math.isinf(v):
            return "1/0" if v > 0 else "-1/0"
        return "%.17g" % v
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua_value(x) for x in v) + "}"
    if isinstance(v, dict):
        def key(k):  # names with dots (module parameters) need brackets
            return k if k.isidentifier() else '["%s"]' % k
        return "{" + ", ".join("%s = %s" % (key(k), lua_value(x)) for k, x in v.items()) + "}"
    if torch.is_tensor(v):
        return tensor(v)
    if v is None:
        return "nil"
    raise TypeError(type(v))


def tensor(t):
    t = t.detach()
    flat = t.reshape(-1).tolist()
    dt = "int64" if t.dtype == torch.int64 else ("bool" if t.dtype == torch.bool else "float64")
    return "{shape = %s, dtype = '%s', data = %s}" % (lua_value(list(t.shape)), dt,
                                                      lua_value([x for x in flat]))


cases = []


def add(name, fn, inputs, opts=None, grad_of=(), extra=None):
    """fn(**inputs) -> output tensor (or a tuple, first taken for gradients)."""
    ins = {}
    for k, v in inputs.items():
        if torch.is_tensor(v) and k in grad_of:
            v = v.clone().requires_grad_(True)
        ins[k] = v
    out = fn(**ins)
    outs = out if isinstance(out, tuple) else (out,)
    y = outs[0]
    rec = {"name": name, "inputs": {k: v for k, v in inputs.items()}, "out": y}
    if len(outs) > 1:
        rec["out2"] = outs[1]
    if grad_of:
        gy = det(y.shape, 7, 1.0) if y.dim() > 0 else torch.tensor(0.75)
        (y * gy).sum().backward()
        rec["gy"] = gy
        rec["grads"] = {k: ins[k].grad for k in grad_of}
    if extra:
        rec.update(extra(ins))
    cases.append(rec)


# ---- convolution ----
add("conv2d_basic", lambda x, w, b: F.conv2d(x, w, b, padding=1),
    {"x": det((2, 3, 5, 5), 1), "w": det((4, 3, 3, 3), 2, 0.5), "b": det((4,), 3)},
    grad_of=("x", "w", "b"))
add("conv2d_strided_dilated_groups",
    lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
    {"x": det((2, 4, 7, 6), 4), "w": det((6, 2, 3, 2), 5, 0.5), "b": det((6,), 6)},
    grad_of=("x", "w", "b"))
add("conv2d_depthwise_nobias", lambda x, w: F.conv2d(x, w, None, stride=2, groups=3),
    {"x": det((1, 3, 6, 6), 7), "w": det((3, 1, 2, 2), 8)}, grad_of=("x", "w"))
add("conv2d_1x1", lambda x, w, b: F.conv2d(x, w, b),
    {"x": det((2, 5, 4, 3), 9), "w": det((3, 5, 1, 1), 10), "b": det((3,), 11)},
    grad_of=("x", "w", "b"))
add("conv2d_unbatched", lambda x, w, b: F.conv2d(x, w, b, padding=2, dilation=2),
    {"x": det((2, 5, 5), 12), "w": det((3, 2, 3, 3), 13), "b": det((3,), 14)},
    grad_of=("x", "w", "b"))

add("conv1d_basic", lambda x, w, b: F.conv1d(x, w, b, padding=1),
    {"x": det((2, 3, 7), 120), "w": det((4, 3, 3), 121, 0.5), "b": det((4,), 122)}, grad_of=("x", "w", "b"))
add("conv1d_strided_dilated_groups", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2),
    {"x": det((2, 4, 11), 123), "w": det((6, 2, 3), 124, 0.5), "b": det((6,), 125)}, grad_of=("x", "w", "b"))
add("conv1d_same_unbatched", lambda x, w: F.conv1d(x, w, None, padding="same", dilation=3),
    {"x": det((2, 9), 126), "w": det((3, 2, 4), 127, 0.5)}, grad_of=("x", "w"))
add("conv2d_same_even", lambda x, w, b: F.conv2d(x, w, b, padding="same"),
    {"x": det((1, 2, 5, 6), 128), "w": det((3, 2, 2, 4), 129, 0.5), "b": det((3,), 130)}, grad_of=("x", "w", "b"))
# what nn.Conv2d / nn.Conv1d do with padding_mode (F.pad, then no padding)
add("conv2d_module_reflect", lambda x, w, b: F.conv2d(F.pad(x, (2, 2, 1, 1), mode="reflect"), w, b),
    {"x": det((2, 2, 5, 6), 131), "w": det((3, 2, 3, 5), 132, 0.5), "b": det((3,), 133)}, grad_of=("x", "w"))
add("conv2d_module_circular_same", lambda x, w, b: F.conv2d(F.pad(x, (1, 2, 0, 1), mode="circular"), w, b),
    {"x": det((1, 2, 4, 5), 134), "w": det((2, 2, 2, 4), 135, 0.5), "b": det((2,), 136)}, grad_of=("x", "w"))
add("conv1d_module_replicate", lambda x, w, b: F.conv1d(F.pad(x, (2, 2), mode="replicate"), w, b, stride=2),
    {"x": det((2, 3, 8), 137), "w": det((4, 3, 5), 138, 0.5), "b": det((4,), 139)}, grad_of=("x", "w"))

add("conv_transpose2d_basic", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
    {"x": det((2, 3, 4, 5), 300), "w": det((3, 2, 3, 3), 301, 0.5), "b": det((2,), 302)}, grad_of=("x", "w", "b"))
add("conv_transpose2d_groups_dilation",
    lambda x, w: F.conv_transpose2d(x, w, None, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                                    dilation=(1, 2)),
    {"x": det((2, 4, 3, 5), 303), "w": det((4, 3, 3, 2), 304, 0.5)}, grad_of=("x", "w"))
add("conv_transpose2d_unbatched_crop", lambda x, w, b: F.conv_transpose2d(x, w, b, padding=(2, 1)),
    {"x": det((2, 5, 6), 305), "w": det((2, 3, 2, 3), 306, 0.5), "b": det((3,), 307)}, grad_of=("x", "w"))
add("conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1, output_padding=2),
    {"x": det((2, 3, 7), 308), "w": det((3, 4, 4), 309, 0.5), "b": det((4,), 310)}, grad_of=("x", "w", "b"))
add("interpolate_nearest_factor", lambda x: F.interpolate(x, scale_factor=(1.5, 2.0)), {"x": det((2, 3, 4, 5), 311)},
    grad_of=("x",))
add("interpolate_nearest_size_1d", lambda x: F.interpolate(x, size=7), {"x": det((2, 3, 5), 312)}, grad_of=("x",))
add("interpolate_bilinear", lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"), {"x": det((2, 2, 4, 5), 313)},
    grad_of=("x",))
add("interpolate_bilinear_corners_factor",
    lambda x: F.interpolate(x, scale_factor=2.5, mode="bilinear", align_corners=True), {"x": det((1, 2, 3, 4), 314)},
    grad_of=("x",))
add("interpolate_linear_factor", lambda x: F.interpolate(x, scale_factor=1.7, mode="linear"), {"x": det((2, 3, 6), 315)},
    grad_of=("x",))

# ---- pooling ----
add("max_pool2d_ceil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                              return_indices=True),
    {"x": det((2, 3, 7, 6), 15)}, grad_of=("x",))
add("max_pool2d_dilated", lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2), dilation=(2, 1),
                                                 return_indices=True),
    {"x": det((1, 2, 6, 7), 16)}, grad_of=("x",))
add("avg_pool2d_ceil_nopad_count",
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    {"x": det((2, 3, 7, 6), 17)}, grad_of=("x",))
add("avg_pool2d_include_pad", lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 2), padding=(1, 1)),
    {"x": det((1, 2, 5, 5), 18)}, grad_of=("x",))
add("avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3),
    {"x": det((3, 4, 4), 19)}, grad_of=("x",))
add("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
    {"x": det((2, 3, 7, 9), 20)}, grad_of=("x",))

# ---- softmax ----
add("softmax_dim2", lambda x: F.softmax(x, dim=1), {"x": det((3, 4, 5), 21, 3.0)}, grad_of=("x",))
add("log_softmax_last", lambda x: F.log_softmax(x, dim=-1), {"x": det((3, 4, 5), 22, 3.0)},
    grad_of=("x",))
add("log_softmax_large", lambda x: F.log_softmax(x, dim=0), {"x": det((6, 2), 23, 1000.0)},
    grad_of=("x",))

add("max_pool1d", lambda x: F.max_pool1d(x, 3, stride=2, padding=1, dilation=1, ceil_mode=True, return_indices=True),
    {"x": det((2, 3, 10), 140)}, grad_of=("x",))
add("avg_pool1d", lambda x: F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False),
    {"x": det((2, 3, 9), 141)}, grad_of=("x",))
add("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4), {"x": det((2, 3, 10), 142)}, grad_of=("x",))
add("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-4),
    {"x": det((3, 4, 5), 143, 2.0), "w": det((4,), 144), "b": det((4,), 145)}, grad_of=("x", "w", "b"))
add("group_norm_4d_noaffine", lambda x: F.group_norm(x, 3), {"x": det((2, 6, 2, 3), 146, 2.0)}, grad_of=("x",))
# ---- normalisation ----


def bn_train(x, w, b, rm, rv):
    rm, rv = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-4)
    return y, torch.cat([rm, rv])


add("batch_norm_train_3d", bn_train,
    {"x": det((4, 3, 5), 24, 2.0), "w": det((3,), 25), "b": det((3,), 26),
     "rm": det((3,), 27), "rv": det((3,), 28).abs() + 0.5},
    grad_of=("x", "w", "b"))
add("batch_norm_train_4d_noaffine",
    lambda x: F.batch_norm(x, None, None, training=True),
    {"x": det((3, 2, 3, 4), 29, 2.0)}, grad_of=("x",))
add("batch_norm_eval_2d",
    lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3),
    {"x": det((5, 3), 30, 2.0), "w": det((3,), 31), "b": det((3,), 32),
     "rm": det((3,), 33), "rv": det((3,), 34).abs() + 0.5},
    grad_of=("x", "w", "b"))
add("layer_norm_2dims", lambda x, w, b: F.layer_norm(x, (4, 5), w, b, eps=1e-5),
    {"x": det((3, 4, 5), 35, 2.0), "w": det((4, 5), 36), "b": det((4, 5), 37)},
    grad_of=("x", "w", "b"))
add("layer_norm_noaffine", lambda x: F.layer_norm(x, (6,)),
    {"x": det((2, 3, 6), 38, 2.0)}, grad_of=("x",))

# ---- activations ----
add("gelu", lambda x: F.gelu(x), {"x": det((20,), 39, 4.0)}, grad_of=("x",))
add("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), {"x": det((20,), 40, 4.0)},
    grad_of=("x",))
# inputs across each one's kinks and thresholds (softplus and mish switch at 20, hardswish and
# hardsigmoid at -3 and 3, relu6 at 0 and 6)
add("silu", lambda x: F.silu(x), {"x": det((30,), 60, 8.0)}, grad_of=("x",))
add("mish", lambda x: F.mish(x), {"x": det((30,), 61, 25.0)}, grad_of=("x",))
add("softplus", lambda x: F.softplus(x), {"x": det((30,), 62, 25.0)}, grad_of=("x",))
add("softplus_beta_threshold", lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    {"x": det((30,), 63, 6.0)}, grad_of=("x",))
add("hardswish", lambda x: F.hardswish(x), {"x": det((30,), 64, 5.0)}, grad_of=("x",))
add("hardsigmoid", lambda x: F.hardsigmoid(x), {"x": det((30,), 65, 5.0)}, grad_of=("x",))
add("logsigmoid", lambda x: F.logsigmoid(x), {"x": det((30,), 66, 40.0)}, grad_of=("x",))
add("selu", lambda x: F.selu(x), {"x": det((30,), 67, 4.0)}, grad_of=("x",))
add("softsign", lambda x: F.softsign(x), {"x": det((30,), 68, 4.0)}, grad_of=("x",))
add("tanhshrink", lambda x: F.tanhshrink(x), {"x": det((30,), 69, 4.0)}, grad_of=("x",))
add("relu6", lambda x: F.relu6(x), {"x": det((30,), 70, 8.0)}, grad_of=("x",))
add("exp2", lambda x: torch.exp2(x), {"x": det((30,), 71, 8.0)}, grad_of=("x",))
add("frac", lambda x: torch.frac(x), {"x": det((30,), 72, 8.0) + 0.0625}, grad_of=("x",))
add("leaky_relu", lambda x: F.leaky_relu(x, 0.2), {"x": det((30,), 73, 3.0)}, grad_of=("x",))
add("elu", lambda x: F.elu(x, alpha=0.7), {"x": det((30,), 74, 3.0)}, grad_of=("x",))
add("celu", lambda x: F.celu(x, alpha=1.5), {"x": det((30,), 75, 3.0)}, grad_of=("x",))
add("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), {"x": det((30,), 76, 3.0)}, grad_of=("x",))
add("threshold", lambda x: F.threshold(x, 0.3, -2.0), {"x": det((30,), 77, 3.0)}, grad_of=("x",))
add("prelu_channels", lambda x, w: F.prelu(x, w), {"x": det((2, 3, 4), 78, 2.0), "w": det((3,), 79)},
    grad_of=("x", "w"))
add("prelu_single", lambda x, w: F.prelu(x, w), {"x": det((5, 2), 80, 2.0), "w": torch.tensor([0.3])},
    grad_of=("x", "w"))
add("glu_last", lambda x: F.glu(x), {"x": det((3, 6), 81, 2.0)}, grad_of=("x",))
add("glu_dim1", lambda x: F.glu(x, dim=0), {"x": det((4, 3), 82, 2.0)}, grad_of=("x",))
add("softmin", lambda x: F.softmin(x, dim=1), {"x": det((3, 5), 83, 2.0)}, grad_of=("x",))

# ---- padding, normalisation, distances, rearranging ----
add("pad_constant", lambda x: F.pad(x, (1, 2, 2, 0), value=-0.5), {"x": det((2, 3, 4), 84)}, grad_of=("x",))
add("pad_crop", lambda x: F.pad(x, (-1, 2, 1, -1)), {"x": det((2, 3, 4), 85)}, grad_of=("x",))
add("pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), {"x": det((1, 2, 3, 4), 86)},
    grad_of=("x",))
add("pad_replicate", lambda x: F.pad(x, (3, 1, 0, 2), mode="replicate"), {"x": det((1, 2, 3, 4), 87)},
    grad_of=("x",))
add("pad_circular", lambda x: F.pad(x, (2, 3), mode="circular"), {"x": det((2, 2, 4), 88)}, grad_of=("x",))
add("normalize", lambda x: F.normalize(x), {"x": det((3, 4), 89)}, grad_of=("x",))
add("normalize_p1_dim0", lambda x: F.normalize(x, p=1.0, dim=0), {"x": det((3, 4), 90)}, grad_of=("x",))
add("cosine_similarity", lambda a, b: F.cosine_similarity(a, b), {"a": det((3, 5), 91), "b": det((3, 5), 92)},
    grad_of=("a", "b"))
add("cosine_similarity_broadcast", lambda a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-6),
    {"a": det((2, 3, 4), 93), "b": det((3, 4), 94)}, grad_of=("a", "b"))
add("pairwise_distance", lambda a, b: F.pairwise_distance(a, b, p=3.0, keepdim=True),
    {"a": det((4, 5), 95), "b": det((4, 5), 96)}, grad_of=("a", "b"))
add("tril_triu", lambda x: torch.tril(x, 1) * 2 + torch.triu(x, -1) * 3, {"x": det((2, 4, 5), 97)},
    grad_of=("x",))
add("binary_cross_entropy", lambda x, y, w: F.binary_cross_entropy(x, y, weight=w),
    {"x": det((3, 4), 99).abs() * 0.9 + 0.05, "y": (det((3, 4), 100) + 1) / 2, "w": det((3, 4), 101).abs()},
    grad_of=("x",))
add("smooth_l1_loss", lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), {"x": det((20,), 102, 2.0), "y": det((20,), 103)},
    grad_of=("x", "y"))
add("smooth_l1_loss_beta0_sum", lambda x, y: F.smooth_l1_loss(x, y, beta=0.0, reduction="sum"),
    {"x": det((20,), 104, 2.0), "y": det((20,), 105)}, grad_of=("x",))
add("huber_loss", lambda x, y: F.huber_loss(x, y, delta=0.7, reduction="none"),
    {"x": det((20,), 106, 2.0), "y": det((20,), 107)}, grad_of=("x", "y"))
add("kl_div_batchmean", lambda x, t: F.kl_div(x, t, reduction="batchmean"),
    {"x": F.log_softmax(det((3, 5), 108), 1), "t": torch.cat([F.softmax(det((2, 5), 109), 1), torch.tensor([[0.0, 0.5, 0.5, 0.0, 0.0]])])},
    grad_of=("x",))  # a target's gradient where it is 0 is NaN in PyTorch (-inf in fact); lutorch's is finite
add("kl_div_log_target", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
    {"x": F.log_softmax(det((3, 5), 110), 1), "t": F.log_softmax(det((3, 5), 111), 1)}, grad_of=("x", "t"))
add("margin_ranking_loss", lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.3),
    {"a": det((10,), 112), "b": det((10,), 113), "y": torch.tensor([1.0, -1, 1, 1, -1, -1, 1, -1, 1, 1])},
    grad_of=("a", "b"))
add("soft_margin_loss", lambda x, y: F.soft_margin_loss(x, y),
    {"x": det((10,), 114, 3.0), "y": torch.tensor([1.0, -1, 1, 1, -1, -1, 1, -1, 1, 1])}, grad_of=("x",))
add("flip_roll", lambda x: torch.flip(x, (0, 2)) * 2 + torch.roll(x, (1, -2), (1, 2)) * 3,
    {"x": det((2, 3, 4), 98)}, grad_of=("x",))

# ---- recurrent layers: the module's parameters, set from det(), are stored as inputs of their names
# (set in place: functional_call in PyTorch 1.13 misses the RNNs' cached flat weights) ----
def module_record(name, m, x, state, grad_params, seed, call=None, extra_inputs=None):
    """m with det() parameters on x (and state, or call(m, x)); records x, the state, extra inputs and
    the parameters under their names, the output (and a second one), gradients of x and grad_params"""
    params = {}
    with torch.no_grad():
        for i, (k, p) in enumerate(m.named_parameters()):
            params[k] = det(tuple(p.shape), seed + i, 0.5)
            p.copy_(params[k])
    xr = x.clone().requires_grad_(True)
    hx = None
    if state:
        hx = tuple(state) if len(state) == 2 else state[0]
    if call is not None:
        out = call(m, xr)
    else:
        out = m(xr) if hx is None else m(xr, hx)
    if isinstance(out, tuple):
        y = out[0]
        y2 = out[1][0] if isinstance(out[1], tuple) else out[1]
    else:
        y, y2 = out, None
    gy = det(y.shape, 7, 1.0)
    (y * gy).sum().backward()
    inputs = dict(x=x)
    for i, t in enumerate(state or ()):
        inputs["h%d" % i] = t
    inputs.update(extra_inputs or {})
    inputs.update(params)
    rec = {"name": name, "inputs": inputs, "out": y}
    if y2 is not None:
        rec["out2"] = y2
    rec["gy"] = gy
    named = dict(m.named_parameters())
    rec["grads"] = dict(x=xr.grad, **{k: named[k].grad for k in grad_params})
    cases.append(rec)


def rnn_case(name, make, x, state=None, seed=150, grad_params=("weight_hh_l0",)):
    module_record(name, make(), x, state, grad_params, seed)


rnn_case("lstm_2layer_bidirectional_batch_first",
         lambda: torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
         det((2, 5, 3), 150), state=(det((4, 2, 4), 151, 0.5), det((4, 2, 4), 152, 0.5)),
         grad_params=("weight_hh_l0", "weight_ih_l1_reverse", "bias_hh_l1"))
rnn_case("gru_unbatched", lambda: torch.nn.GRU(3, 5), det((6, 3), 160), grad_params=("weight_hh_l0", "bias_ih_l0"))
rnn_case("gru_2layer_h0", lambda: torch.nn.GRU(2, 3, num_layers=2), det((4, 2, 2), 170),
         state=(det((2, 2, 3), 171, 0.5),))
rnn_case("rnn_relu_bidirectional", lambda: torch.nn.RNN(3, 4, nonlinearity="relu", bidirectional=True),
         det((5, 2, 3), 180), grad_params=("weight_hh_l0", "weight_hh_l0_reverse"))
rnn_case("lstm_nobias", lambda: torch.nn.LSTM(2, 3, bias=False), det((4, 2, 2), 190))


def cell_case(name, make, x, state=None, seed=200):
    module_record(name, make(), x, state, ("weight_hh",), seed)


cell_case("lstm_cell", lambda: torch.nn.LSTMCell(3, 4), det((2, 3), 210), state=(det((2, 4), 211), det((2, 4), 212)))
cell_case("gru_cell", lambda: torch.nn.GRUCell(3, 4), det((2, 3), 220), state=(det((2, 4), 221),))
cell_case("rnn_cell_unbatched", lambda: torch.nn.RNNCell(3, 4, nonlinearity="relu"), det((3,), 230))

# ---- attention and transformer encoders (training mode with dropout 0: PyTorch's own path, not the
# fused inference one) ----
key_pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
module_record("mha_self_padding", torch.nn.MultiheadAttention(6, 2), det((5, 2, 6), 240), None,
              ("in_proj_weight", "out_proj.weight"), 241,
              call=lambda m, x: m(x, x, x, key_padding_mask=key_pad), extra_inputs={"pad": key_pad})
module_record("mha_causal_batch_first_heads", torch.nn.MultiheadAttention(8, 4, batch_first=True),
              det((2, 5, 8), 250), None, ("in_proj_bias",), 251,
              call=lambda m, x: m(x, x * 0.5, x, attn_mask=causal, average_attn_weights=False),
              extra_inputs={"causal": causal})
module_record("mha_unbatched_float_mask", torch.nn.MultiheadAttention(4, 1, bias=False), det((3, 4), 260), None,
              ("in_proj_weight",), 261, call=lambda m, x: m(x, x, x, attn_mask=det((3, 3), 262)),
              extra_inputs={"fmask": det((3, 3), 262)})
module_record("encoder_layer_post_norm",
              torch.nn.TransformerEncoderLayer(6, 2, dim_feedforward=10, dropout=0.0), det((5, 2, 6), 270), None,
              ("self_attn.in_proj_weight", "linear1.weight", "norm2.weight"), 271,
              call=lambda m, x: m(x, src_key_padding_mask=key_pad), extra_inputs={"pad": key_pad})
module_record("encoder_layer_pre_norm_gelu",
              torch.nn.TransformerEncoderLayer(6, 3, dim_feedforward=12, dropout=0.0, activation="gelu",
                                               norm_first=True, batch_first=True),
              det((2, 5, 6), 280), None, ("linear2.weight",), 281, call=lambda m, x: m(x, src_mask=causal),
              extra_inputs={"causal": causal})
enc_layer = torch.nn.TransformerEncoderLayer(6, 2, dim_feedforward=8, dropout=0.0)
module_record("encoder_2_layers_norm",
              torch.nn.TransformerEncoder(enc_layer, 2, norm=torch.nn.LayerNorm(6), enable_nested_tensor=False),
              det((4, 3, 6), 290), None, ("layers.1.linear1.weight",), 291)

mha_kv = torch.nn.MultiheadAttention(6, 2, kdim=4, vdim=3, add_bias_kv=True, add_zero_attn=True)
key_pad6 = torch.tensor([[False, False, False, False, True, True], [False] * 6])
module_record("mha_kdim_vdim_bias_kv_zero_attn", mha_kv, det((5, 2, 6), 300), None,
              ("q_proj_weight", "k_proj_weight", "bias_v"), 301,
              call=lambda m, x: m(x, det((6, 2, 4), 302), det((6, 2, 3), 303), key_padding_mask=key_pad6,
                                  attn_mask=causal[:, :1].expand(5, 6).contiguous()),
              extra_inputs={"k": det((6, 2, 4), 302), "v": det((6, 2, 3), 303), "pad": key_pad6,
                            "amask": causal[:, :1].expand(5, 6).contiguous()})
tgt_pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
module_record("decoder_layer_post_norm",
              torch.nn.TransformerDecoderLayer(6, 2, dim_feedforward=10, dropout=0.0), det((4, 2, 6), 310), None,
              ("self_attn.in_proj_weight", "multihead_attn.in_proj_weight", "linear1.weight", "norm3.weight"), 311,
              call=lambda m, x: m(x, det((5, 2, 6), 312), tgt_mask=causal[:4, :4], memory_key_padding_mask=key_pad,
                                  tgt_key_padding_mask=tgt_pad),
              extra_inputs={"memory": det((5, 2, 6), 312), "causal4": causal[:4, :4], "pad": key_pad,
                            "tpad": tgt_pad})
module_record("decoder_layer_pre_norm_gelu_batch_first",
              torch.nn.TransformerDecoderLayer(6, 3, dim_feedforward=12, dropout=0.0, activation="gelu",
                                               norm_first=True, batch_first=True),
              det((2, 4, 6), 320), None, ("multihead_attn.out_proj.weight", "linear2.weight"), 321,
              call=lambda m, x: m(x, det((2, 5, 6), 322), memory_mask=det((4, 5), 323)),
              extra_inputs={"memory": det((2, 5, 6), 322), "mmask": det((4, 5), 323)})
module_record("transformer_small",
              torch.nn.Transformer(6, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=8, dropout=0.0),
              det((4, 2, 6), 330), None, ("encoder.layers.0.linear1.weight", "decoder.layers.1.multihead_attn.in_proj_bias",
                                          "decoder.norm.weight"), 331,
              call=lambda m, x: m(det((5, 2, 6), 332), x,
                                  tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
                                  src_key_padding_mask=key_pad),
              extra_inputs={"src": det((5, 2, 6), 332), "pad": key_pad})

# ---- einsum ----
add("einsum_matmul", lambda a, b: torch.einsum("ij,jk->ik", a, b), {"a": det((2, 3), 340), "b": det((3, 4), 341)},
    grad_of=("a", "b"))
add("einsum_batch_attention", lambda q, k: torch.einsum("bhqd,bhkd->bhqk", q, k),
    {"q": det((2, 2, 3, 4), 342), "k": det((2, 2, 5, 4), 343)}, grad_of=("q", "k"))
add("einsum_trace_diag", lambda m, v: torch.einsum("ii", m) * torch.einsum("jj->j", m) + torch.einsum("i,i", v, v),
    {"m": det((3, 3), 344), "v": det((3,), 345)}, grad_of=("m", "v"))
add("einsum_ellipsis_broadcast", lambda x, y: torch.einsum("...ij,...jk", x, y),
    {"x": det((2, 1, 3, 4), 346), "y": det((5, 4, 2), 347)}, grad_of=("x", "y"))
add("einsum_three_operands_outer", lambda a, b, c: torch.einsum("ab,bc,cd->da", a, b, c) + torch.einsum("a,b->ab", a[0], c[0]).sum(),
    {"a": det((2, 3), 348), "b": det((3, 4), 349), "c": det((4, 5), 350)}, grad_of=("a", "b", "c"))
add("einsum_implicit_sum_size1", lambda x, y: torch.einsum("iBj,ij->Bi", x, y) + torch.einsum("...->", x),
    {"x": det((3, 2, 1), 351), "y": det((3, 4), 352)}, grad_of=("x", "y"))

# ---- embedding, linear ----
add("embedding_padding", lambda idx, w: F.embedding(idx - 1, w, padding_idx=2),
    {"idx": torch.tensor([[1, 3, 5], [3, 2, 1]]), "w": det((5, 4), 41)}, grad_of=("w",),
    extra=lambda ins: {"padding_idx": 3})
add("linear_3d", lambda x, w, b: F.linear(x, w, b),
    {"x": det((2, 3, 4), 42), "w": det((5, 4), 43), "b": det((5,), 44)},
    grad_of=("x", "w", "b"))

# ---- losses (targets stored 1-based; the lambdas shift them) ----
t1 = torch.tensor([2, 0, 3, 1, 3])
add("cross_entropy_weight_ignore_smooth",
    lambda x, target, weight: F.cross_entropy(x, target - 1, weight=weight, ignore_index=3,
                                              label_smoothing=0.1),
    {"x": det((5, 4), 45, 2.0), "target": t1 + 1, "weight": det((4,), 46).abs() + 0.2},
    grad_of=("x",), extra=lambda ins: {"ignore_index": 4})
add("cross_entropy_ignore_smooth",
    lambda x, target: F.cross_entropy(x, target - 1, ignore_index=1, label_smoothing=0.3),
    {"x": det((5, 4), 60, 2.0), "target": t1 + 1}, grad_of=("x",), extra=lambda ins: {"ignore_index": 2})
add("cross_entropy_plain", lambda x, target: F.cross_entropy(x, target - 1),
    {"x": det((5, 4), 47, 2.0), "target": t1 + 1}, grad_of=("x",))
add("cross_entropy_smooth_sum", lambda x, target: F.cross_entropy(x, target - 1, label_smoothing=0.2,
                                                                  reduction="sum"),
    {"x": det((5, 4), 48, 2.0), "target": t1 + 1}, grad_of=("x",))
add("cross_entropy_kdim_none",
    lambda x, target: F.cross_entropy(x, target - 1, reduction="none"),
    {"x": det((2, 3, 4), 49, 2.0), "target": torch.tensor([[0, 2, 1, 1], [2, 2, 0, 1]]) + 1},
    grad_of=("x",))
add("nll_loss_weight_sum",
    lambda x, target, weight: F.nll_loss(x, target - 1, weight=weight, reduction="sum"),
    {"x": det((5, 4), 50, 2.0), "target": t1 + 1, "weight": det((4,), 51).abs() + 0.2},
    grad_of=("x",))
add("mse_loss", lambda x, y: F.mse_loss(x, y), {"x": det((3, 4), 52), "y": det((3, 4), 53)},
    grad_of=("x", "y"))
add("l1_loss_sum", lambda x, y: F.l1_loss(x, y, reduction="sum"),
    {"x": det((3, 4), 54), "y": det((3, 4), 55)}, grad_of=("x", "y"))
add("bce_with_logits_posweight",
    lambda x, y, weight, pos_weight: F.binary_cross_entropy_with_logits(
        x, y, weight=weight, pos_weight=pos_weight),
    {"x": det((3, 4), 56, 3.0), "y": (det((3, 4), 57) > 0).double(), "weight": det((4,), 58).abs(),
     "pos_weight": det((4,), 59).abs() + 0.5},
    grad_of=("x",))



# ---- a training run: a two-layer MLP, cross-entropy, SGD with momentum, 200 steps, float32 ----
def mlp_training():
    X = det((32, 4), 61, 2.0).float()
    Y = ((det((32,), 62) + 1) * 1.49).long().clamp(0, 2)  # classes 0..2
    W1, b1 = det((8, 4), 63, 0.5).float(), det((8,), 64, 0.1).float()
    W2, b2 = det((3, 8), 65, 0.5).float(), det((3,), 66, 0.1).float()
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).float()
    with torch.no_grad():
        model[0].weight.copy_(W1); model[0].bias.copy_(b1)
        model[2].weight.copy_(W2); model[2].bias.copy_(b2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(200):
        loss = F.cross_entropy(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"X": X.double(), "Y": Y + 1, "W1": W1.double(), "b1": b1.double(), "W2": W2.double(),
            "b2": b2.double(), "losses": losses, "final_W2": model[2].weight.detach().double()}


training = mlp_training()


def inits():
    """every parameter of modules made right after torch.manual_seed(0), flattened: the same seed must
    give lutorch the same initial weights (its generator is PyTorch's)"""
    makers = [
        ("Conv1d", lambda: torch.nn.Conv1d(3, 2, 3)),
        ("ConvTranspose2d", lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2)),
        ("LSTM", lambda: torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)),
        ("GRUCell", lambda: torch.nn.GRUCell(3, 4)),
        ("MultiheadAttention", lambda: torch.nn.MultiheadAttention(8, 2)),
        ("TransformerEncoderLayer", lambda: torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)),
        ("MultiheadAttention_kdim_bias_kv", lambda: torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)),
        ("Transformer", lambda: torch.nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=1,
                                                     dim_feedforward=16)),
        ("PReLU", lambda: torch.nn.PReLU(3)),
        ("GroupNorm", lambda: torch.nn.GroupNorm(2, 4)),
    ]
    out = {}
    torch.set_default_dtype(torch.float32)  # float32 parameters, as lutorch's by default (float64 draws differ)
    for name, make in makers:
        torch.manual_seed(0)
        m = make()
        out[name] = [p.detach().double().reshape(-1).tolist() for _, p in m.named_parameters()]
    torch.set_default_dtype(torch.float64)
    return out


init_values = inits()

with open(OUT, "w") as f:
    f.write("-- Generated by tools/gen_nn_reference.py from PyTorch %s; do not edit.\n"
            % torch.__version__)
    f.write("return {\n")
    for c in cases:
        f.write("  {\n")
        for k, v in c.items():
            f.write("    %s = %s,\n" % (k, lua_value(v)))
        f.write("  },\n")
    f.write("  inits = {\n")
    for k, v in init_values.items():
        f.write("    %s = %s,\n" % (k, lua_value(v)))
    f.write("  },\n")
    f.write("  training = {\n")
    for k, v in training.items():
        f.write("    %s = %s,\n" % (k, lua_value(v)))
    f.write("  },\n")
    f.write("}\n")
print("wrote %d cases to %s" % (len(cases), OUT))
