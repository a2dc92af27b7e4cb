"""The benchmark problems: for each tutorial kernel, its inputs, its numpy reference, and how
each framework launches or compiles it (grid, arguments, signature). One table, so every tool
gets the same inputs, tile sizes and checks.

Sizes are small because Numba's CUDA simulator runs every CUDA thread as a Python thread (about
half a millisecond per thread before any work); every CPU runner uses these same sizes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


#: benchmark name (= kernel name) -> the tutorial that defines the kernel
TUTORIAL = {"vector_add": "01_vector_add", "softmax": "02_softmax", "matmul": "03_matmul",
            "layernorm": "04_layernorm", "attention": "05_attention"}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Problem:
    name: str
    label: str                                  # kernel and size, for the table
    make: Callable[[np.random.Generator], dict]  # name -> numpy array (inputs and outputs)
    outputs: tuple[str, ...]
    reference: Callable[[dict], dict]           # name -> expected output (float64)
    tol: float                                  # max |out - ref| / (1 + |ref|) allowed
    tilepy: Callable[[dict], tuple]             # arrays -> (grid, args); also cuTile's args
    cutile_sig: Callable[[object, object, dict], list]   # (ct, compilation, arrays) -> params
    triton: Callable[[dict], tuple]             # arrays -> (grid, args, constexpr kwargs)
    triton_sig: dict                            # parameter name -> Triton type string
    numba: Callable[[dict], tuple] | None       # arrays -> (grid, block, args)


def _arr(ct, C, a: np.ndarray):
    dt = {np.float32: ct.float32, np.float16: ct.float16}[a.dtype.type]
    return C.ArrayConstraint(dt, a.ndim, index_dtype=ct.int32, stride_lower_bound_incl=0,
                             alias_groups=(), may_alias_internally=False,
                             stride_constant=(None,) * (a.ndim - 1) + (1,),
                             base_addr_divisible_by=16)


# ----------------------------------------------------------------------------- vector add
N_VEC = 8192


def _vec_make(rng):
    a = rng.standard_normal(N_VEC).astype(np.float32)
    return {"a": a, "b": rng.standard_normal(N_VEC).astype(np.float32), "c": np.zeros_like(a)}


VECTOR_ADD = Problem(
    "vector_add", f"vector add f32, n={N_VEC}", _vec_make, ("c",),
    lambda d: {"c": d["a"].astype(np.float64) + d["b"]}, 1e-6,
    tilepy=lambda d: ((_cdiv(N_VEC, 1024),), (d["a"], d["b"], d["c"], 1024)),
    cutile_sig=lambda ct, C, d: [_arr(ct, C, d["a"])] * 3 + [1024],
    triton=lambda d: ((_cdiv(N_VEC, 1024),), (d["a"], d["b"], d["c"], N_VEC), {"BLOCK": 1024}),
    triton_sig={"a": "*fp32", "b": "*fp32", "c": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    numba=lambda d: (_cdiv(N_VEC, 128), 128, (d["a"], d["b"], d["c"])),
)

# ----------------------------------------------------------------------------- softmax
SM_ROWS, SM_COLS = 8, 1000


def _softmax_ref(d):
    x = d["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


SOFTMAX = Problem(
    "softmax", f"softmax f32, {SM_ROWS}x{SM_COLS}",
    lambda rng: {"x": (rng.standard_normal((SM_ROWS, SM_COLS)) * 3).astype(np.float32),
                 "y": np.zeros((SM_ROWS, SM_COLS), np.float32)},
    ("y",), _softmax_ref, 1e-5,
    tilepy=lambda d: ((SM_ROWS,), (d["x"], d["y"], 1024)),
    cutile_sig=lambda ct, C, d: [_arr(ct, C, d["x"])] * 2 + [1024],
    triton=lambda d: ((SM_ROWS,), (d["x"], d["y"], SM_COLS, SM_COLS, SM_COLS), {"BLOCK": 1024}),
    triton_sig={"x": "*fp32", "y": "*fp32", "n_cols": "i32", "stride_x": "i32",
                "stride_y": "i32", "BLOCK": "constexpr"},
    numba=lambda d: (SM_ROWS, 128, (d["x"], d["y"])),
)

# ----------------------------------------------------------------------------- matmul
MM = 64          # M = N = K


def _mm_make(rng):
    return {"A": rng.standard_normal((MM, MM)).astype(np.float16),
            "B": rng.standard_normal((MM, MM)).astype(np.float16),
            "C": np.zeros((MM, MM), np.float32)}


MATMUL = Problem(
    "matmul", f"matmul f16->f32, {MM}x{MM}x{MM}", _mm_make, ("C",),
    lambda d: {"C": d["A"].astype(np.float64) @ d["B"].astype(np.float64)}, 1e-4,
    tilepy=lambda d: ((_cdiv(MM, 64), _cdiv(MM, 64)), (d["A"], d["B"], d["C"], 64, 64, 32)),
    cutile_sig=lambda ct, C, d: [_arr(ct, C, d["A"])] * 2 + [_arr(ct, C, d["C"]), 64, 64, 32],
    triton=lambda d: ((_cdiv(MM, 64), _cdiv(MM, 64)),
                      (d["A"], d["B"], d["C"], MM, MM, MM, MM, MM, MM),
                      {"BM": 64, "BN": 64, "BK": 32}),
    triton_sig={"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                "stride_a": "i32", "stride_b": "i32", "stride_c": "i32",
                "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
    numba=lambda d: ((_cdiv(MM, 16), _cdiv(MM, 16)), (16, 16), (d["A"], d["B"], d["C"])),
)

# ----------------------------------------------------------------------------- layernorm
LN_ROWS, LN_COLS, LN_EPS = 8, 1000, 1e-5


def _ln_make(rng):
    return {"X": (rng.standard_normal((LN_ROWS, LN_COLS)) * 2 + 1).astype(np.float32),
            "W": rng.uniform(0.5, 1.5, LN_COLS).astype(np.float32),
            "B": rng.uniform(-0.5, 0.5, LN_COLS).astype(np.float32),
            "Y": np.zeros((LN_ROWS, LN_COLS), np.float32),
            "Mean": np.zeros(LN_ROWS, np.float32), "Rstd": np.zeros(LN_ROWS, np.float32)}


def _ln_ref(d):
    x = d["X"].astype(np.float64)
    mean, rstd = x.mean(axis=1), 1 / np.sqrt(x.var(axis=1) + LN_EPS)
    return {"Y": (x - mean[:, None]) * rstd[:, None] * d["W"] + d["B"], "Mean": mean, "Rstd": rstd}


def _ln_args(d):
    return (d["X"], d["W"], d["B"], d["Y"], d["Mean"], d["Rstd"])


LAYERNORM = Problem(
    "layernorm", f"layernorm f32, {LN_ROWS}x{LN_COLS}", _ln_make, ("Y", "Mean", "Rstd"), _ln_ref,
    1e-5,
    tilepy=lambda d: ((LN_ROWS,), _ln_args(d) + (LN_EPS, 256)),
    cutile_sig=lambda ct, C, d: [_arr(ct, C, d[k]) for k in ("X", "W", "B", "Y", "Mean", "Rstd")]
    + [C.ScalarConstraint(ct.float32), 256],
    triton=lambda d: ((LN_ROWS,), _ln_args(d) + (LN_COLS, LN_COLS, LN_EPS), {"BLOCK": 256}),
    triton_sig={"X": "*fp32", "W": "*fp32", "B": "*fp32", "Y": "*fp32", "Mean": "*fp32",
                "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32",
                "BLOCK": "constexpr"},
    numba=lambda d: (LN_ROWS, 128, _ln_args(d) + (np.float32(LN_EPS),)),
)

# ----------------------------------------------------------------------------- attention
AT_BH, AT_S, AT_D = 2, 64, 32
AT_SCALE = 1 / math.sqrt(AT_D)


def _at_make(rng):
    q, k, v = (rng.standard_normal((AT_BH, AT_S, AT_D)).astype(np.float16) for _ in range(3))
    return {"Q": q, "K": k, "V": v, "O": np.zeros_like(q)}


def _at_ref(d):
    q, k, v = (d[n].astype(np.float64) for n in "QKV")
    s = q @ k.transpose(0, 2, 1) * AT_SCALE
    p = np.exp(s - s.max(axis=2, keepdims=True))
    return {"O": (p / p.sum(axis=2, keepdims=True)) @ v}


ATTENTION = Problem(
    "attention", f"attention f16, {AT_BH} heads, S={AT_S}, D={AT_D}", _at_make, ("O",), _at_ref,
    2e-3,
    tilepy=lambda d: ((_cdiv(AT_S, 64), AT_BH),
                      (d["Q"], d["K"], d["V"], d["O"], AT_SCALE, 64, 32, AT_D)),
    cutile_sig=lambda ct, C, d: [_arr(ct, C, d["Q"])] * 4 + [C.ScalarConstraint(ct.float32),
                                                             64, 32, AT_D],
    triton=lambda d: ((_cdiv(AT_S, 64), AT_BH),
                      (d["Q"], d["K"], d["V"], d["O"], AT_S, AT_SCALE, AT_S * AT_D, AT_D),
                      {"BM": 64, "BN": 32, "D": AT_D}),
    triton_sig={"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "seq_len": "i32",
                "qk_scale": "fp32", "stride_bh": "i32", "stride_s": "i32", "BM": "constexpr",
                "BN": "constexpr", "D": "constexpr"},
    numba=lambda d: ((_cdiv(AT_S, 128), AT_BH), 128,
                     (d["Q"], d["K"], d["V"], d["O"], np.float32(AT_SCALE))),
)

PROBLEMS = {p.name: p for p in (VECTOR_ADD, SOFTMAX, MATMUL, LAYERNORM, ATTENTION)}


def check(problem: Problem, arrays: dict) -> float:
    """The worst error of the outputs against the reference, relative to 1 + |reference|;
    raises AssertionError past the problem's tolerance."""
    ref = problem.reference(arrays)
    worst = 0.0
    for name in problem.outputs:
        got = np.asarray(arrays[name], dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(got - ref[name]) / (1 + np.abs(ref[name])))))
    assert worst <= problem.tol, f"{problem.name}: error {worst:.2e} > {problem.tol}"
    return worst
