#!/usr/bin/env python3
"""Lists the public functions of PyTorch (torch.*, Tensor methods, torch.nn.functional.*,
torch.linalg.*, torch.special.*, torch.fft.*) that lutorch lacks.

Run from the repository root after make: /usr/bin/python3 tools/api_coverage.py [path to lutorch]
(default build/lutorch). It collects the names from the PyTorch it runs with, drops those that are
private, internal or about what lutorch has no use for (quantized, sparse and complex tensors,
mkldnn/cudnn/miopen/fbgemm entry points, the JIT, ONNX, named tensors, storages), and hands the rest
to tools/api_coverage.lua inside lutorch, which says which are missing. It prints them by family,
with a count per family; --all prints the names it checked too. torch.fft is checked only where
lutorch has a torch.fft table (it has none: the family is then reported as absent as a whole).
"""
import inspect
import os
import re
import subprocess
import sys

import torch
import torch.fft
import torch.nn.functional as F

# names about what lutorch has no use for: quantized, sparse and complex tensors, backends' private
# entry points, the JIT and ONNX, named tensors, storages and the legacy type objects
SKIP = re.compile(
    r"^_|quantiz|^q_|^int_repr$|^dequantize|fbgemm|sparse|^smm$|^sspaddmm$|^hspmm$|^saddmm$|^indices$|"
    r"^values$|indices_copy$|^values_copy$|^dsmm$|^hsmm$|^spmm$|^coalesce$|^is_coalesced$|fake_quant|"
    r"^choose_qparams|^crow_indices$|^col_indices$|^ccol_indices$|^row_indices$|^cfloat$|^cdouble$|^chalf$|"
    r"^dense_dim$|^to_dense$|complex|^conj|^is_conj$|^resolve_conj$|^resolve_neg$|^is_neg$|^view_as_real|"
    r"^polar$|^real$|^imag$|mkldnn|cudnn|miopen|nnpack|vulkan|xnnpack|^is_mps$|^is_ipu$|^is_xpu$|"
    r"^is_hpu$|^is_ort$|^is_meta$|^nested|^to_padded_tensor$|^jit$|onnx|^script|^compile|^fork$|^wait$|"
    r"^refine_names$|^rename_?$|^align_|^names$|^has_names$|storage|^data_ptr$|^share_memory_$|"
    r"^is_shared$|^set_$|^from_file$|^frombuffer$|dlpack|^module_load$|^import_ir_module|^parse_ir$|"
    r"^parse_schema$|^parse_type_comment$|^merge_type_from_type_comment$|^unify_type_list$|vital|"
    r"^autocast_(de|in)crement_nesting$|^get_file_path$|^prepare_multiprocessing_environment$|"
    r"^classproperty$|^obj$|^sym_|^has_torch_function|^assert_int_or_pair$|^candidate$"
)
# typing helpers and decorators that torch.nn.functional imports, not its own functions
F_FOREIGN = ("typing", "torch._jit_internal", "torch.overrides", "torch._C._jit", "torch.types")


def public(names):
    return sorted(n for n in names if not SKIP.search(n))


def functions(mod):
    out = []
    for n in dir(mod):
        o = getattr(mod, n, None)
        if o is None or inspect.isclass(o) or inspect.ismodule(o) or not callable(o):
            continue
        if (getattr(o, "__module__", None) or "").startswith(F_FOREIGN):
            continue
        out.append(n)
    return public(out)


def tensor_methods():
    out = []
    for n in dir(torch.Tensor):
        o = getattr(torch.Tensor, n, None)
        if o is None or inspect.isclass(o):
            continue
        out.append(n)  # methods and properties (x.T, x.mT, x.ndim, ...) alike
    return public(out)


def families():
    fam = [("torch", functions(torch)), ("Tensor", tensor_methods()), ("nn.functional", functions(F)),
           ("linalg", functions(torch.linalg)), ("special", functions(torch.special)), ("fft", functions(torch.fft))]
    return fam


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_all = "--all" in sys.argv
    lutorch = args[0] if args else os.path.join("build", "lutorch")
    here = os.path.dirname(os.path.abspath(__file__))
    fams = families()
    lines = "".join("%s %s\n" % (f, n) for f, names in fams for n in names)
    res = subprocess.run([lutorch, os.path.join(here, "api_coverage.lua")], input=lines, capture_output=True,
                         text=True, check=False)
    if res.returncode != 0:
        sys.exit("api_coverage.lua failed: " + res.stderr)
    missing = {}
    for line in res.stdout.splitlines():
        f, n = line.split(" ", 1)
        missing.setdefault(f, []).append(n)
    print("PyTorch %s against lutorch (%s)" % (torch.__version__, lutorch))
    for f, names in fams:
        miss = missing.get(f, [])
        if f in missing and miss == ["*"]:
            print("\n%s: absent from lutorch (%d names in PyTorch)" % (f, len(names)))
            continue
        print("\n%s: %d of %d missing" % (f, len(miss), len(names)))
        if miss:
            print("  " + " ".join(miss))
        if show_all:
            print("  checked: " + " ".join(names))


if __name__ == "__main__":
    main()
