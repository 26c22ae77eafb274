#!/usr/bin/env python3
"""Writes spec/data/special_reference.lua: PyTorch's torch.special functions of one variable
(erfcx, ndtr, ndtri, log_ndtr, i0e, i1, i1e, entr, the Bessel and Airy functions), of two (zeta,
xlog1py) and the orthogonal polynomials, in float64 on fixed arguments with their edge cases (0,
negative, large, inf, NaN), for spec/special_more_spec.lua. A second table holds the same
functions at a few points from mpmath at 30 digits: an independent check of both.

Run: python3 tools/gen_special_reference.py  (needs PyTorch 1.13 and mpmath; the generated file is
committed, CI has neither). Non-finite values are written as the strings "nan", "inf", "-inf"."""
import math

import mpmath
import torch

from lua_reference import write

S = torch.special
F64 = torch.float64

GENERAL = [-50.0, -20.0, -8.5, -5.0, -2.5, -1.0, -0.3, -1e-3, 0.0, 1e-6, 0.2, 0.5, 1.0, 2.0, 2.09, 3.7, 5.0,
           7.9, 8.1, 12.0, 30.0, 100.0, 700.0, math.inf, -math.inf, math.nan]
UNARY = {
    "erfcx": GENERAL,
    # PyTorch 1.13 computes ndtr as (1 + erf(x / sqrt 2)) / 2, which loses the lower tail below -6
    # (lutorch uses erfc there, as later PyTorch): the tail is checked against mpmath only
    "ndtr": [x for x in GENERAL if not x < -6],
    "ndtri": [0.0, 1e-300, 1e-20, 1e-5, 0.01, 0.1353, 0.2, 0.5, 0.7, 0.9, 0.99, 1 - 1e-10, 1.0, -0.1, 1.5, math.nan],
    "log_ndtr": GENERAL,
    "i0e": GENERAL,
    "i1": GENERAL,
    "i1e": GENERAL,
    "entr": GENERAL,
    "bessel_j0": GENERAL,
    "bessel_j1": GENERAL,
    "bessel_y0": GENERAL,
    "bessel_y1": GENERAL,
    "modified_bessel_i0": GENERAL,
    "modified_bessel_i1": GENERAL,
    "modified_bessel_k0": GENERAL,
    "modified_bessel_k1": GENERAL,
    "scaled_modified_bessel_k0": GENERAL,
    "scaled_modified_bessel_k1": GENERAL,
    "spherical_bessel_j0": GENERAL,
    "airy_ai": GENERAL,
}
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
         "legendre_polynomial_p"]
POLY_X = [-2.0, -1.0, -0.7, -0.3, 0.0, 0.25, 0.5, 0.9, 1.0, 1.5, 3.0]
POLY_N = [-1.0, 0.0, 1.0, 2.0, 3.0, 3.7, 5.0, 7.0, 9.0, 12.0, 20.0]
ZETA_X = [1.0, 1.5, 2.0, 3.0, 4.5, 10.0, 30.0, 0.5, math.nan]
ZETA_Q = [0.25, 1.0, 2.5, 10.0, 100.0, -1.5, -2.0, 0.0, math.nan]
XLOG1PY_X = [0.0, 1.0, -2.5, 3.0, math.nan]
XLOG1PY_Y = [0.0, -0.5, 1e-10, 2.0, -1.0, -2.0, math.inf, math.nan]


def lit(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def values(t):
    return [lit(v) for v in t.reshape(-1).tolist()]


def grid(xs, ys):
    return [x for x in xs for y in ys], [y for x in xs for y in ys]


def ndtri_mp(p):
    with mpmath.workdps(400):  # 1 - 2p must keep p's digits even for p = 1e-300
        return -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(p)) if p != 0.5 else mpmath.mpf(0)


MP = {
    "erfcx": lambda x: mpmath.exp(x * x) * mpmath.erfc(x),
    "ndtr": lambda x: mpmath.ncdf(x),
    "log_ndtr": lambda x: mpmath.log(mpmath.ncdf(x)),
    "ndtri": lambda p: ndtri_mp(p),
    "i0e": lambda x: mpmath.besseli(0, x) * mpmath.exp(-abs(x)),
    "i1": lambda x: mpmath.besseli(1, x),
    "i1e": lambda x: mpmath.besseli(1, x) * mpmath.exp(-abs(x)),
    "bessel_j0": lambda x: mpmath.besselj(0, x),
    "bessel_j1": lambda x: mpmath.besselj(1, x),
    "bessel_y0": lambda x: mpmath.bessely(0, x),
    "bessel_y1": lambda x: mpmath.bessely(1, x),
    "modified_bessel_k0": lambda x: mpmath.besselk(0, x),
    "modified_bessel_k1": lambda x: mpmath.besselk(1, x),
    "scaled_modified_bessel_k1": lambda x: mpmath.besselk(1, x) * mpmath.exp(x),
    "airy_ai": lambda x: mpmath.airyai(x),
}
MP_X = {
    "erfcx": [-3.0, -0.5, 0.1, 2.0, 9.5, 10.5, 26.0, 40.0, 1e4],
    "ndtr": [-30.0, -12.0, -8.5, -1.0, 0.3, 4.0],
    "log_ndtr": [-40.0, -10.0, -2.0, 0.0, 3.0, 12.0],
    "ndtri": [1e-300, 1e-12, 0.05, 0.3, 0.5, 0.95, 0.999999],
    "i0e": [-9.0, -0.5, 3.0, 8.0, 50.0],
    "i1": [-4.0, 0.25, 7.5, 20.0],
    "i1e": [-30.0, 0.75, 8.5, 200.0],
    "bessel_j0": [0.1, 2.404, 4.9, 5.1, 17.0],
    "bessel_j1": [-3.0, 0.5, 3.8317, 11.0],
    "bessel_y0": [0.01, 0.9, 5.5, 25.0],
    "bessel_y1": [0.2, 2.0, 6.0, 40.0],
    "modified_bessel_k0": [0.05, 1.9, 2.1, 15.0],
    "modified_bessel_k1": [0.3, 2.0, 9.0],
    "scaled_modified_bessel_k1": [0.5, 4.0, 60.0],
    "airy_ai": [-15.0, -2.2, -1.0, 0.0, 1.5, 2.2, 6.0, 25.0],
}
MP_ZETA = [(2.0, 1.0), (3.5, 0.3), (7.0, 4.0), (1.2, 50.0), (2.0, -1.5)]


def main():
    mpmath.mp.dps = 30
    unary = {}
    for name, xs in UNARY.items():
        x = torch.tensor(xs, dtype=F64)
        unary[name] = dict(x=values(x), y=values(getattr(S, name)(x)))
    binary = {}
    for name in POLYS:
        x, n = grid(POLY_X, POLY_N)
        binary[name] = dict(x=x, n=n, y=values(getattr(S, name)(torch.tensor(x, dtype=F64), torch.tensor(n, dtype=F64))))
    x, q = grid(ZETA_X, ZETA_Q)
    binary["zeta"] = dict(x=[lit(v) for v in x], n=[lit(v) for v in q],
                          y=values(S.zeta(torch.tensor(x, dtype=F64), torch.tensor(q, dtype=F64))))
    x, y = grid(XLOG1PY_X, XLOG1PY_Y)
    binary["xlog1py"] = dict(x=[lit(v) for v in x], n=[lit(v) for v in y],
                             y=values(S.xlog1py(torch.tensor(x, dtype=F64), torch.tensor(y, dtype=F64))))
    mp = {}
    for name, xs in MP_X.items():
        mp[name] = dict(x=xs, y=[float(MP[name](mpmath.mpf(v))) for v in xs])
    mp["zeta"] = dict(x=[a for a, _ in MP_ZETA], n=[b for _, b in MP_ZETA],
                      y=[float(mpmath.zeta(a, b)) for a, b in MP_ZETA])
    write("special_reference.lua", "gen_special_reference.py",
          ["unary[name] = {x, y}: y = torch.special.name(x) in float64;",
           "binary[name] = {x, n, y}: y = torch.special.name(x, n) (zeta: n is q, xlog1py: n is y);",
           "mpmath[name] = {x, [n,] y}: the same functions from mpmath at 30 digits."],
          {"unary": unary, "binary": binary, "mpmath": mp})


if __name__ == "__main__":
    main()
