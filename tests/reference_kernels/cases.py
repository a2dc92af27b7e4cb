"""Default configurations of the reference kernels: arguments, grid and a numpy check.

`CASES[name](rng, scale)` returns `(kernel, args, grid, check)`; `check()` raises if the outputs
(written into `args` by a launch) do not match numpy. `scale` multiplies the problem size (the
tests use 1; shapes stay multiples of 16 so that the specialization proves alignment).
"""
from __future__ import annotations

import numpy as np

from . import attention, batched_matmul, layernorm, matmul, softmax, transpose, vector_add


def _close(out, ref, rtol, atol):
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=rtol, atol=atol)


def case_vector_add(rng, scale=1):
    n, tile = 4096 * scale, 1024
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.zeros_like(a)
    return vector_add.vector_add, (a, b, c, tile), (n // tile,), lambda: _close(c, a + b, 0, 0)


def case_softmax(rng, scale=1, dtype=np.float32, cols=1024):
    rows = 16 * scale
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    y = np.zeros_like(x)

    def check():
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        tol = 1e-5 if dtype == np.float32 else 2e-3
        _close(y, e / e.sum(axis=1, keepdims=True), tol, tol * 1e-3)
    return softmax.softmax, (x, y, cols), (rows,), check


def case_layernorm(rng, scale=1, dtype=np.float32, n=1024, tile=256):
    m = 8 * scale
    x = (rng.standard_normal((m, n)) * 2 + 0.5).astype(dtype)
    w = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    y = np.zeros_like(x)
    eps = 1e-5

    def check():
        x64 = x.astype(np.float64)
        mu = x64.mean(axis=1, keepdims=True)
        ref = (x64 - mu) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * w + b
        tol = 1e-4 if dtype == np.float32 else 1e-2
        _close(y, ref, tol, tol)
    return layernorm.layernorm, (x, w, b, y, eps, n, tile), (m,), check


def _mm_check(c, ref, a_abs_b, rtol):
    worst = float(np.max(np.abs(c - ref) / (a_abs_b + 1e-30)))
    assert worst <= rtol, f"error {worst:.2e} of the terms' scale > {rtol}"


def case_matmul(rng, scale=1, dtype=np.float16, tiles=(64, 64, 32)):
    m = n = k = 128 * scale
    tm, tn, tk = tiles
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), np.float32)

    def check():
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        rtol = 2e-3 if dtype == np.float32 else 1e-5      # f32 inputs go through tf32
        _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), rtol)
    return matmul.matmul, (a, b, c, tm, tn, tk), (m // tm, n // tn), check


def case_batched_matmul(rng, scale=1, dtype=np.float16):
    bt, m, n, k = 4 * scale, 64, 64, 64
    tiles = (1, 64, 64, 32)
    a = rng.standard_normal((bt, m, k)).astype(dtype)
    b = rng.standard_normal((bt, k, n)).astype(dtype)
    c = np.zeros((bt, m, n), np.float32)

    def check():
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        _mm_check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 1e-5)
    grid = (bt // tiles[0], m // tiles[1], n // tiles[2])
    return batched_matmul.batched_matmul, (a, b, c, *tiles), grid, check


def case_attention(rng, scale=1, dtype=np.float16):
    bh, s, d, bm, bn = 2 * scale, 128, 64, 64, 64
    q = rng.standard_normal((bh, s, d)).astype(dtype)
    k = rng.standard_normal((bh, s, d)).astype(dtype)
    v = rng.standard_normal((bh, s, d)).astype(dtype)
    o = np.zeros_like(q)
    scale_qk = float(1 / np.sqrt(d))

    def check():
        q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
        sc = q64 @ k64.transpose(0, 2, 1) * scale_qk
        p = np.exp(sc - sc.max(axis=2, keepdims=True))
        ref = (p / p.sum(axis=2, keepdims=True)) @ v64
        _close(o, ref, 2e-2, 2e-2)
    return attention.attention, (q, k, v, o, scale_qk, bm, bn, d), (s // bm, bh), check


def case_transpose(rng, rows=64, cols=64, tile=64, dtype=np.float32):
    x = rng.standard_normal((rows, cols)).astype(dtype)
    y = np.zeros((cols, rows), dtype)
    grid = (-(-rows // tile), -(-cols // tile))
    return transpose.transpose, (x, y, tile), grid, lambda: _close(y, x.T, 0, 0)


def case_attention_ragged(rng, d=64, bm=64, bn=64, s=None, dtype=np.float16):
    """`attention_ragged` at the shortest sequence that has more than one key block and a ragged
    last block of keys and of queries (s = max(bm, bn) + 16)."""
    s = s or max(bm, bn) + 16
    q, k, v = (rng.standard_normal((1, s, d)).astype(dtype) for _ in range(3))
    o = np.zeros_like(q)
    scale_qk = float(1 / np.sqrt(d))

    def check():
        q64, k64, v64 = (t[0].astype(np.float64) for t in (q, k, v))
        sc = q64 @ k64.T * scale_qk
        p = np.exp(sc - sc.max(axis=1, keepdims=True))
        _close(o[0], (p / p.sum(axis=1, keepdims=True)) @ v64, 2e-2, 2e-2)
    args = (q, k, v, o, scale_qk, bm, bn, d)
    return attention.attention_ragged, args, (-(-s // bm), 1), check


CASES = {
    "vector_add": case_vector_add,
    "softmax": case_softmax,
    "layernorm": case_layernorm,
    "matmul_f16": case_matmul,
    "batched_matmul": case_batched_matmul,
    "attention": case_attention,
}
