"""Writes spec/data/index_reference.lua: PyTorch 1.13's values for indexing expressions on a 3-D and a
4-D tensor (numbers, ranges with steps, Ellipsis, None, int64/int32/bool index tensors, mixed), read
by spec/index_advanced_spec.lua. Each expression is written once below as a list of index items and
translated here both to PyTorch's syntax (0-based, slices, ..., None) and to lutorch's table form
(1-based, {first, last, step}, '...', torch.newaxis, torch.tensor(...)). Each case has: the read
x[key] (a view or a copy as PyTorch gives it), the writes x[key] = value tensor and x[key] = number,
the gradient of sum(x[key] * w) for x, and for the cases without repeated positions the gradients of
an assignment into a non-leaf. Run with /usr/bin/python3 (python3-torch)."""
import torch

from lua_reference import write


class R:
    """a range {first, last[, step]}: 1-based, inclusive, negative bounds from the end; R() is {}"""

    def __init__(self, *b):
        self.b = b


class T:
    """an index tensor with lutorch's 1-based values (negative from the end)"""

    def __init__(self, values, dtype="int64"):
        self.values, self.dtype = values, dtype


ELL, NEW = "...", "newaxis"


def py_item(it):
    if isinstance(it, int):
        return it - 1 if it > 0 else it
    if isinstance(it, R):
        if not it.b:
            return slice(None)
        a = it.b[0]
        b = it.b[1] if len(it.b) > 1 else a
        step = it.b[2] if len(it.b) > 2 else 1
        start = a - 1 if a > 0 else a
        stop = b if b > 0 else (b + 1 if b < -1 else None)
        return slice(start, stop, step)
    if it == ELL:
        return Ellipsis
    if it == NEW:
        return None
    if isinstance(it, T):
        if it.dtype == "bool":
            return torch.tensor(it.values, dtype=torch.bool)
        shift = lambda v: [shift(u) for u in v] if isinstance(v, list) else (v - 1 if v > 0 else v)
        # PyTorch 1.13 refuses int32 index tensors (lutorch takes them as int64): the same values
        return torch.tensor(shift(it.values), dtype=torch.int64)
    raise TypeError(it)


def py_text(k):
    if isinstance(k, slice):
        t = lambda b: "" if b is None else str(b)
        return t(k.start) + ":" + t(k.stop) + ("" if k.step in (None, 1) else ":" + str(k.step))
    if k is Ellipsis:
        return "..."
    if isinstance(k, torch.Tensor):
        dt = "" if k.dtype in (torch.int64, torch.bool) else ", dtype=torch.%s" % str(k.dtype).split(".")[1]
        return "torch.tensor(%r%s)" % (k.tolist(), dt)
    return repr(k)


def lua_values(v):
    if isinstance(v, list):
        return "{" + ", ".join(lua_values(u) for u in v) + "}"
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def lua_item(it):
    if isinstance(it, int):
        return str(it)
    if isinstance(it, R):
        return "{" + ", ".join(str(b) for b in it.b) + "}"
    if it == ELL:
        return "'...'"
    if it == NEW:
        return "torch.newaxis"
    if isinstance(it, T):
        opts = ", { dtype = torch.%s }" % it.dtype if it.dtype == "int32" or it.values == [] else ""
        return "torch.tensor(%s%s)" % (lua_values(it.values), opts)
    raise TypeError(it)


# (name, tensor: 3 or 4 dims, items, whether positions repeat); items that are not a list are the
# key itself (x[t], not x[{ t }])
A, B = T([3, 1, 4]), T([2, -1])
CASES = [
    # basic forms: views
    ("step", 3, [R(), R(1, -1, 2)], False),
    ("step_first", 3, [R(2, 4, 2), 2], False),
    ("step_beyond", 3, [R(), R(), R(2, 6, 3)], False),
    ("step_one_element", 3, [R(3, 3, 5)], False),
    ("ellipsis_last_number", 3, [ELL, 1], False),
    ("ellipsis_first_number", 3, [2, ELL], False),
    ("ellipsis_middle", 4, [1, ELL, -1], False),
    ("ellipsis_alone", 3, [ELL], False),
    ("ellipsis_nothing", 3, [1, 2, ELL, 3], False),
    ("newaxis_first", 3, [NEW], False),
    ("newaxis_around_ellipsis", 3, [NEW, ELL, NEW], False),
    ("newaxis_step_ellipsis", 4, [R(2, -1, 2), ELL, NEW, 1], False),
    ("newaxis_between", 3, [2, NEW, R(2, 3)], False),
    # one index tensor
    ("rows", 3, [A], False),
    ("rows_in_table_2d", 3, [T([[1, 4], [2, -1]])], False),
    ("cols", 3, [R(), A], False),
    ("last_dim_negative", 3, [R(), R(), T([-1, 1, -6])], False),
    ("int32", 3, [R(), T([5, 2], "int32")], False),
    ("zero_dim_tensor", 3, [R(), T(2)], False),
    ("zero_dim_tensor_alone", 3, T(2), False),
    ("zero_dim_tensor_alone_negative", 3, T(-1, "int32"), False),
    ("number_then_tensor", 3, [2, T([4, 1])], False),
    ("number_gap_tensor", 3, [2, R(), T([4, 1])], False),
    ("ellipsis_tensor", 4, [ELL, B], False),
    ("tensor_ellipsis", 4, [T([3, 1]), ELL], False),
    ("newaxis_tensor", 3, [NEW, R(), A], False),
    ("step_and_tensor", 3, [R(1, -1, 2), R(), T([6, 1])], False),
    ("range_then_tensor", 3, [R(2, 4), R(), A], False),
    ("empty_index", 3, [R(), T([])], False),
    ("repeated", 3, [R(), T([2, 2, 4, 2])], True),
    # several index tensors
    ("adjacent_pair", 3, [R(), A, T([1, 6, 2])], False),
    ("separated_pair", 3, [T([1, 4]), R(), T([6, 2])], False),
    ("broadcast_separated", 3, [T([[1], [3]]), R(), T([2, 5, 6])], False),
    ("broadcast_adjacent", 3, [R(), T([[1], [3]]), T([2, 5, 6])], False),
    ("all_three", 3, [T([1, 2]), T([5, 1]), T([6, 3])], False),
    ("separated_4d", 4, [R(), T([1, 4]), R(), T([2, 1])], False),
    ("adjacent_4d_middle", 4, [R(), T([4, 1, 2]), T([5, 1, 3]), R()], False),
    ("number_between_tensors", 4, [T([1, 3]), 2, T([5, 1])], False),
    ("number_inside_gap", 4, [1, R(), T([1, 5]), R(1, 2)], False),
    ("newaxis_between_tensors", 4, [R(), T([1, 2]), NEW, T([3, 5])], False),
    ("ellipsis_between_tensors", 4, [T([2, 3]), ELL, T([2, 1])], False),
    ("repeated_pair", 3, [T([1, 1, 2]), R(), T([3, 3, 1])], True),
    # masks
    ("mask_full", 3, [T([[[(i + j + k) % 3 == 0 for k in range(6)] for j in range(5)] for i in range(4)], "bool")], False),
    ("mask_leading", 3, [T([[(i * j) % 3 == 1 for j in range(5)] for i in range(4)], "bool")], False),
    ("mask_middle", 3, [R(), T([True, False, True, True, False], "bool")], False),
    ("mask_last_2d", 4, [R(), R(), T([[True, False], [False, False], [True, True], [False, True], [False, False]], "bool")], False),
    ("mask_and_tensor", 3, [T([True, False, False, True], "bool"), R(), T([2, 6])], False),
    ("mask_adjacent_tensor", 3, [T([False, True, True, False], "bool"), T([5, 1])], False),
    ("mask_ellipsis_tensor", 4, [T([[i == j for j in range(4)] for i in range(3)], "bool"), ELL, T([2])], False),
    ("ellipsis_mask_2d", 4, [ELL, T([[True, False], [False, False], [True, True], [False, True], [True, False]], "bool")], False),
    ("number_ellipsis_mask", 4, [2, ELL, T([[k % 2 == 0, k % 3 == 0] for k in range(5)], "bool")], False),
    ("mask_all_false", 3, [R(), T([False] * 5, "bool")], False),
    ("mask_zero_dim_true", 3, [R(), T(True, "bool")], False),
    ("mask_zero_dim_false", 3, [T(False, "bool"), R(2, 3)], False),
]

# A mask of k > 1 dims followed by more items: PyTorch 1.13 applies the items from the mask's second
# dim (it moves on by one dim per tensor) and fails; lutorch applies them after the mask's dims, as
# NumPy does: these reads and writes are NumPy's (for keys where NumPy's integers, which are index
# arrays when arrays are present, give PyTorch's result)
NUMPY_CASES = [
    ("mask_then_number", 3, [T([[(i + j) % 2 == 0 for j in range(5)] for i in range(4)], "bool"), 2]),
    ("mask_then_range", 3, [T([[(i * j) % 4 == 1 for j in range(5)] for i in range(4)], "bool"), R(2, 5, 2)]),
    ("mask_then_newaxis", 4, [ELL, T([[k % 2 == 0, k % 3 == 0] for k in range(5)], "bool"), NEW]),
]

SHAPES = {3: (4, 5, 6), 4: (3, 4, 5, 2)}


def source(nd):
    n = 1
    for s in SHAPES[nd]:
        n *= s
    return (torch.arange(n, dtype=torch.float64) * 0.5 + 1).reshape(SHAPES[nd]).clone()


def weights(n, k):
    return torch.arange(n, dtype=torch.float64) % k + 1


ref = {"x3": source(3).reshape(-1), "x4": source(4).reshape(-1), "cases": []}
for name, nd, items, repeated in CASES:
    bare = not isinstance(items, list)
    key = py_item(items) if bare else tuple(py_item(it) for it in items)
    x = source(nd)
    r = x[key]
    n = r.numel()
    case = {
        "name": name,
        "nd": nd,
        "key": lua_item(items) if bare else "{ " + ", ".join(lua_item(it) for it in items) + " }",
        "python": "x[" + (py_text(key) if bare else ", ".join(py_text(k) for k in key)) + "]",
        "shape": list(r.shape),
        "values": r.reshape(-1),
        "view": r._base is x,
    }
    # writes: a value of the result's shape (-1, -2, ...), a value broadcast along the last dim, a number
    if not repeated:
        value = -(torch.arange(n, dtype=torch.float64) + 1).reshape(r.shape)
        y = x.clone()
        y[key] = value
        case["written"] = y.reshape(-1)
        last = r.shape[-1] if r.dim() > 0 else 1
        row = -(torch.arange(last, dtype=torch.float64) + 1) * 100
        y = x.clone()
        y[key] = row
        case["row"] = row
        case["written_row"] = y.reshape(-1)
        y = x.clone()
        y[key] = 7.25
        case["written_number"] = y.reshape(-1)
    # gradient of sum(x[key] * w); with repeated positions the grads add up
    xl = source(nd).requires_grad_()
    w = weights(n, 7).reshape(r.shape)
    (xl[key] * w).sum().backward()
    case["grad"] = xl.grad.reshape(-1)
    # an assignment into a non-leaf: z = 2 x; z[key] = y; sum(z * wz); grads for x and y
    if not repeated:
        xl = source(nd).requires_grad_()
        yl = (-(torch.arange(n, dtype=torch.float64) + 1)).reshape(r.shape).requires_grad_()
        z = xl * 2
        z[key] = yl
        (z * weights(x.numel(), 5).reshape(x.shape)).sum().backward()
        case["put_grad_x"] = xl.grad.reshape(-1)
        case["put_grad_y"] = yl.grad.reshape(-1)
    ref["cases"].append(case)

for name, nd, items in NUMPY_CASES:
    key = tuple(k.numpy() if isinstance(k, torch.Tensor) else k for k in (py_item(it) for it in items))
    x = source(nd).numpy()
    r = x[key]
    y = x.copy()
    y[key] = -(torch.arange(r.size, dtype=torch.float64) + 1).reshape(r.shape).numpy()
    row = -(torch.arange(r.shape[-1], dtype=torch.float64) + 1) * 100
    yr = x.copy()
    yr[key] = row.numpy()
    yn = x.copy()
    yn[key] = 7.25
    ref["cases"].append({
        "name": name,
        "nd": nd,
        "key": "{ " + ", ".join(lua_item(it) for it in items) + " }",
        "python": "numpy: x[" + ", ".join(py_text(k) for k in (py_item(it) for it in items)) + "]",
        "shape": list(r.shape),
        "values": r.reshape(-1).tolist(),
        "view": False,
        "written": y.reshape(-1).tolist(),
        "row": row,
        "written_row": yr.reshape(-1).tolist(),
        "written_number": yn.reshape(-1).tolist(),
    })

write(
    "index_reference.lua",
    "gen_index_reference.py",
    [
        "x3 (4x5x6) and x4 (3x4x5x2): 1 + 0.5 * k in row-major order, float64. Each case: key (lutorch's",
        "table form, the source of a Lua expression), python (the same index in PyTorch's syntax), shape and",
        "values of x[key], view (PyTorch's result shares x's storage), written / written_row / written_number",
        "(x after x[key] = -(1..n) shaped as the result, = row, = 7.25), grad (of sum(x[key] * w), w = k % 7 + 1",
        "over the result), put_grad_x / put_grad_y (z = 2x; z[key] = y; sum(z * (k % 5 + 1)); y = -(1..n)).",
        "The cases whose python starts with numpy: are NumPy's (PyTorch 1.13 fails on them), without gradients.",
    ],
    ref,
)
