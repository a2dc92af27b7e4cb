"""Run NVIDIA TileGym's cuTile ops unchanged on tilepy's CPU backend; one line per kernel.

    python benchmarks/tilegym_ops.py /path/to/TileGym [--only softmax rms_norm ...]
        [--mode fast|faithful] [--capability 10.0] [--timeout 900] [--list]

The checkout is a TileGym work tree (fetch it; never commit it). Each op of
`src/tilegym/ops/cutile` runs in a child process of its own under cutile_samples.py's
emulation (`import cuda.tile as ct` is tilepy, torch's "cuda" device is the CPU, CUDA's matmul
and layer_norm numerics for the references), through TileGym's own entry point
(`tilegym.ops.<op>` with the "cutile" backend, or the op module's function) on small CPU
tensors, and is checked against TileGym's torch reference: the `reference` of the op's test
class in `tests/ops` (or its interface's torch implementation) where TileGym has one, else a
reference written here from the op's definition (`# ours` beside it). The ops' source is
untouched; the tolerances are the test's where it states them.

Per kernel (the `@ct.kernel` functions of the op's module): PASS (launched, every check after
it passed), WRONG (a check after it failed), CRASH (an error inside tilepy or the launch, or a
harness error), UNSUPPORTED (TileUnsupportedFeatureError), REFUSED (tilepy raised a located
user error: TileTypeError, TileValueError, ...), UNCHECKED (launched, no check followed), NOT
RUN (no case launched it; the detail says why).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cutile_samples as samples   # noqa: E402  (the emulation and the per-kernel record)

STATUSES = ("PASS", "WRONG", "CRASH", "UNSUPPORTED", "REFUSED", "UNCHECKED", "NOT RUN")
samples.RANK.setdefault("REFUSED", samples.RANK["UNSUPPORTED"])


# ---- the cases: one per op, TileGym's entry point and reference on small tensors ------------

CASES: dict[str, tuple[str, object]] = {}      # op -> (module under ops/cutile, case)


def case(op, module=None):
    def deco(fn):
        CASES[op] = (module or op, fn)
        return fn
    return deco


class Ctx:
    """What a case sees: torch, TileGym's modules, its test references, the checks."""

    def __init__(self, record, checkout):
        import torch
        self.torch, self.record, self.checkout = torch, record, checkout
        torch.manual_seed(0)

    def mod(self, name):
        import importlib
        return importlib.import_module(name)

    @property
    def ops(self):
        return self.mod("tilegym.ops")

    def cutile(self, name):
        return self.mod(f"tilegym.ops.cutile.{name}")

    def test(self, path, cls=None):
        """TileGym's test module `tests/ops/<path>.py` (or its class `cls`)."""
        m = self.mod("tests.ops." + path.replace("/", "."))
        return getattr(m, cls) if cls else m

    def rand(self, *shape, dtype=None, std=1.0):
        torch = self.torch
        return (torch.randn(*shape) * std).to(dtype or torch.float16)

    def check_grads(self, op, reference, inputs, rtol, atol, what="backward"):
        """The op's backward against autograd through the reference (in float32), for a
        random output gradient: the gradients of every floating-point input."""
        torch = self.torch
        ours = [t.clone().requires_grad_() if t.is_floating_point() else t for t in inputs]
        refs = [t.detach().float().requires_grad_() if t.is_floating_point() else t
                for t in inputs]
        out = op(*ours)
        dy = torch.randn_like(out.float()).to(out.dtype)
        out.backward(dy)
        reference(*refs).backward(dy.float())
        self.check([t.grad for t in ours if t.is_floating_point()],
                   [t.grad for t in refs if t.is_floating_point()], rtol, atol, what)

    def check(self, actual, expected, rtol=None, atol=None, what=""):
        """torch.testing.assert_close (the tolerance of the dtype unless given), recorded."""
        torch = self.torch
        if isinstance(actual, (tuple, list)):
            for i, (a, e) in enumerate(zip(actual, expected)):
                self.check(a, e, rtol, atol, f"{what}[{i}]")
            return
        expected = expected.to(actual.dtype) if expected.dtype != actual.dtype else expected
        kw = {} if rtol is None else {"rtol": rtol, "atol": atol}
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True, **kw)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if "mismatched" in ln.lower()
                     or "greatest" in ln.lower()]
            self.record.checked(False, f"{what} " + ("; ".join(lines) or samples._first_line(e)))
            return
        self.record.checked(True)


@case("softmax")
def _softmax(c):
    torch, ref = c.torch, c.test("test_softmax", "Test_Softmax").reference
    for n, dtype in ((256, torch.float32), (9, torch.float32), (1009, torch.float16)):
        x = torch.rand(64, n, dtype=dtype)
        tol = (1e-3, 1e-5) if dtype == torch.float16 else (1e-5, 1e-7)
        for kw in ({}, {"use_tma": True}, {"use_chunked": True}, {"use_multi_wave": True}):
            c.check(c.ops.softmax(x, **kw), ref(x), *tol, what=f"{n} {kw}")


@case("dropout")
def _dropout(c):
    torch = c.torch
    x = torch.randn(64, 300)
    for p in (0.0, 0.5):
        y = c.ops.dropout(x, 1234, p, True, False)
        # ours: every element is 0 or x/(1-p), the kept fraction about 1-p
        kept = y != 0
        scaled = torch.where(kept, x / (1 - p), torch.zeros_like(x))
        c.check(y, scaled, 1e-6, 1e-6, what=f"p={p} values")
        frac = kept.float().mean().item()
        ok = abs(frac - (1 - p)) < 0.05
        c.record.checked(ok, "" if ok else f"p={p}: kept fraction {frac:.3f}")


@case("gelu", "activation/gelu")
def _gelu(c):
    torch, ref = c.torch, c.test("activation/test_gelu", "Test_GeLU").reference
    for approximate in ("none", "tanh"):
        x = torch.randn(32, 257, dtype=torch.float32)
        c.check(c.ops.activation.gelu(x, approximate), ref(x, approximate), 0.0, 1e-2,
                what=approximate)


@case("relu", "activation/relu")
def _relu(c):
    torch, ref = c.torch, c.test("activation/test_relu", "Test_ReLU").reference
    x = torch.randn(32, 257, dtype=torch.float16)
    c.check(c.ops.activation.relu(x), ref(x), 0, 0)


@case("geglu", "activation/geglu")
def _geglu(c):
    torch, ref = c.torch, c.test("activation/test_geglu", "Test_GEGLU").reference
    for approximate in ("none", "tanh"):
        x = torch.randn(16, 512, dtype=torch.float32)
        c.check(c.ops.activation.geglu(x, -1, approximate), ref(x, -1, approximate), 1e-2, 1e-2,
                what=approximate)
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        dy = torch.randn(16, 256)
        c.ops.activation.geglu(x1, -1, approximate).backward(dy)
        ref(x2, -1, approximate).backward(dy)
        c.check(x1.grad, x2.grad, 1e-2, 1e-2, what=f"{approximate} backward")


@case("matmul")
def _matmul(c):
    torch, ref = c.torch, c.test("test_matmul", "Test_Matmul").reference
    for kw in ({"static_persistent": False}, {"static_persistent": True}, {"use_tma": True}):
        a = torch.randn(192, 128, dtype=torch.float16)
        b = torch.randn(128, 160, dtype=torch.float16)
        if kw.get("trans_b"):
            b = b.t().contiguous()
        c.check(c.ops.matmul(a, b, **kw), ref(a, b, trans_b=kw.get("trans_b", False)),
                1e-2, 1e-2, what=str(kw))


@case("bmm")
def _bmm(c):
    torch, ref = c.torch, c.test("test_bmm", "Test_BMM_FWD").reference
    for persistent in (False, True):
        a = torch.randn(3, 96, 64, dtype=torch.float16)
        b = torch.randn(3, 64, 80, dtype=torch.float16)
        c.check(c.ops.bmm(a, b, static_persistent=persistent), ref(a, b), 1e-3, 1e-8,
                what=f"persistent={persistent}")


@case("group_gemm")
def _group_gemm(c):
    torch, ref = c.torch, c.test("test_group_gemm", "Test_GroupGemm").reference
    for transpose_b in (False, True):
        shapes = ((64, 96, 128), (128, 64, 64))
        A = [torch.rand(m, k, dtype=torch.float16) for m, n, k in shapes]
        B = [torch.rand(*((n, k) if transpose_b else (k, n)), dtype=torch.float16)
             for m, n, k in shapes]
        c.check(list(c.ops.group_gemm(A, B, transpose_b=transpose_b)),
                list(ref(A, B, transpose_b=transpose_b)), 1e-3, 1e-8,
                what=f"transpose_b={transpose_b}")


@case("rms_norm")
def _rms_norm(c):
    torch, ref = c.torch, c.test("test_rms_norm", "Test_RMSNorm").reference
    x = torch.randn(48, 320, dtype=torch.float16)
    w = torch.randn(320, dtype=torch.float16)
    for mode in (None, "static_persistent", "multi_wave_reload", "multi_wave_cached"):
        y = c.ops.rms_norm(x, (320,), w, 1e-6, mode=mode)
        c.check(y, ref(x, (320,), w, 1e-6), 0.0, 5e-2, what=f"mode={mode}")
    c.check_grads(lambda x, w: c.ops.rms_norm(x, (320,), w, 1e-6),
                  lambda x, w: ref(x, (320,), w, 1e-6), [x, w], 5e-2, 5e-2)


@case("layer_norm_legacy")
def _layer_norm(c):
    torch = c.torch
    ref = c.test("test_layer_norm_legacy").__dict__
    cls = [v for v in ref.values() if isinstance(v, type) and hasattr(v, "reference")]
    x = torch.randn(40, 256, dtype=torch.float16)
    w, b = torch.randn(256, dtype=torch.float16), torch.randn(256, dtype=torch.float16)
    c.check(c.ops.layer_norm_legacy(x, (256,), w, b, 1e-5, 0.0),
            cls[0].reference(x, (256,), w, b, 1e-5, 0.0), 1e-2, 1e-2, what="layer_norm_legacy")
    x, w, b = (t.to(torch.bfloat16) for t in (x, w, b))      # the persistent kernel's dtype
    y, mean, rstd = c.ops.persistent_layer_norm(x, (256,), w, b, 1e-6)[:3]
    c.check([y, mean, rstd], [cls[1].reference(x, w, b, 1e-6), x.float().mean(-1),
                              1 / torch.sqrt(x.float().var(-1, unbiased=False) + 1e-6)],
            1e-2, 1e-2, what="persistent")


@case("silu_and_mul")
def _silu_and_mul(c):
    torch, ref = c.torch, c.test("test_silu_and_mul", "Test_SiLUAndMul").reference
    x = torch.randn(24, 2 * 200, dtype=torch.float16)
    c.check(c.ops.silu_and_mul(x), ref(x), 0.0, 1e-2)
    c.check_grads(c.ops.silu_and_mul, ref, [x], 1e-2, 1e-2)


@case("swiglu")
def _swiglu(c):
    torch, ref = c.torch, c.test("test_swiglu", "Test_SwiGLU").reference
    a, b = torch.randn(24, 200, dtype=torch.float16), torch.randn(24, 200, dtype=torch.float16)
    c.check(c.ops.get_swiglu()(a, b), ref(a, b), 1e-2, 1e-2)
    c.check_grads(c.ops.get_swiglu(), ref, [a, b], 1e-2, 1e-2)


@case("rope")
def _rope(c):
    torch = c.torch
    B, H, S, D = 2, 4, 16, 64
    q, k = torch.randn(B, H, S, D, dtype=torch.float16), torch.randn(B, 2, S, D, dtype=torch.float16)
    ang = torch.randn(1, S, D // 2)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(torch.float16)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(torch.float16)

    def rot(x):     # ours: llama's rotate_half RoPE
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat([-x2, x1], -1)
    cq, sq = cos.unsqueeze(1).float(), sin.unsqueeze(1).float()
    eq = (q.float() * cq + rot(q.float()) * sq).half()
    ek = (k.float() * cq + rot(k.float()) * sq).half()
    c.check(list(c.ops.apply_rope_base(q.clone(), k.clone(), cos, sin)), [eq, ek], 1e-2, 1e-2)


@case("splitk_reduce")
def _splitk(c):
    torch, ref = c.torch, c.test("test_splitk_reduce", "Test_SplitkReduce").reference
    B, H, S, D = 2, 8, 4, 64
    o = torch.randn(B, H, S, D, dtype=torch.float32)
    lse = torch.randn(B, H, S, dtype=torch.float32)
    out = torch.empty(B, H, D, dtype=torch.float16)
    r = c.ops.splitk_reduce(o, lse, out, 4 * 64)
    c.check(out if r is None else r, ref(o, lse, 4 * 64), 1e-2, 1e-2)


def _sdpa(torch, q, k, v, scale, causal):
    # ours: attention in float32 (grouped heads share kv)
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        m = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(s.shape[-1] - s.shape[-2])
        s = s.masked_fill(~m, float("-inf"))
    return (s.softmax(-1) @ v.float()).to(q.dtype)


@case("attention")
def _attention(c):
    torch = c.torch
    ref = c.test("test_attention", "Test_FMHA").reference
    from tilegym.ops.attn_interface import fmha_interface
    for causal in (True, False):
        q, k, v = (c.rand(1, 2, 128, 64) for _ in range(3))
        c.check(fmha_interface(q, k, v, is_causal=causal, scaling=0.125, backend="cutile"),
                ref(q, k, v, scaling=0.125, is_causal=causal), 1e-2, 1e-2,
                what=f"causal={causal}")
    q, k, v = (c.rand(1, 2, 128, 64).requires_grad_() for _ in range(3))
    out = c.cutile("attention").tile_fmha_with_backward(q, k, v, 0.125, True)
    out.sum().backward()
    grads = [t.grad for t in (q, k, v)]
    q2, k2, v2 = (t.detach().float().requires_grad_() for t in (q, k, v))
    _sdpa(torch, q2, k2, v2, 0.125, True).sum().backward()
    c.check([out] + grads, [_sdpa(torch, q, k, v, 0.125, True).detach()] +
            [t.grad for t in (q2, k2, v2)], 2e-2, 2e-2, what="backward")


@case("flash_decode")
def _flash_decode(c):
    torch, ref = c.torch, c.test("test_flash_decode", "Test_FlashDecode").reference
    q = c.rand(2, 8, 1, 64)
    k, v = c.rand(2, 2, 256, 64), c.rand(2, 2, 256, 64)
    c.check(c.ops.fmha_decode(q, k, v, 0.125), ref(q, k, v, 0.125), 1e-2, 1e-2)


@case("gemma_attention")
def _gemma(c):
    torch, t = c.torch, c.test("test_gemma_attention")
    B, Hq, Hkv, S, D = 1, 4, 2, 128, 64
    for window, soft_cap in ((0, None), (48, 50.0)):
        q, k, v = t._get_qkv(B, Hq, Hkv, S, S, D, "cpu", torch.bfloat16)
        mask = t._get_mask(B, Hq, S, "cpu", True, window)
        out = c.ops.gemma_attention(q=q, k=k, v=v, scaling=1 / math.sqrt(D), is_causal=True,
                                    soft_cap=soft_cap, window_size=window)
        c.check(out, t.einsum_reference(q=q, k=k, v=v, scaling=1 / math.sqrt(D), mask=mask,
                                        soft_cap=soft_cap), 1e-2, 1e-2,
                what=f"window={window} soft_cap={soft_cap}")


@case("gemma_attention_decode")
def _gemma_decode(c):
    torch, t = c.torch, c.test("test_gemma_attention_decode")
    B, Hq, Hkv, S, D = 2, 8, 2, 256, 64
    for window, soft_cap in ((0, None), (96, 50.0)):
        q, k, v = t._get_qkv_decode(B, Hq, Hkv, S, D, "cpu", torch.bfloat16)
        kw = dict(q=q, k=k, v=v, scaling=1 / math.sqrt(D), window_size=window, soft_cap=soft_cap)
        c.check(t.gemma_attention_decode(**kw), t.einsum_reference_decode(**kw), 1e-2, 1e-2,
                what=f"window={window} soft_cap={soft_cap}")


@case("attention_sink")
def _sink(c):
    torch, ref = c.torch, c.test("test_attention_sink", "Test_AttentionSink").reference
    B, S, Hkv, G, D = 1, 64, 2, 2, 64
    q = c.rand(B, S, Hkv, G, D, dtype=torch.bfloat16)
    k, v = c.rand(B, S, Hkv, D, dtype=torch.bfloat16), c.rand(B, S, Hkv, D, dtype=torch.bfloat16)
    sinks = torch.randn(Hkv * G, dtype=torch.float32)
    start = torch.tensor([0], dtype=torch.int32)
    c.check(c.ops.attention_sink(q, k, v, sinks, 0.125, None, start),
            ref(q, k, v, sinks, 0.125, None, start), 2e-2, 2e-2)


@case("attention_sink_decode")
def _sink_decode(c):
    torch, ref = c.torch, c.test("test_attention_sink", "Test_AttentionSink").reference
    B, Skv, Hkv, G, D = 1, 128, 2, 2, 64
    q = c.rand(B, 1, Hkv, G, D, dtype=torch.bfloat16)
    k, v = c.rand(B, Skv, Hkv, D, dtype=torch.bfloat16), c.rand(B, Skv, Hkv, D, dtype=torch.bfloat16)
    sinks = torch.randn(Hkv * G, dtype=torch.float32)
    start = torch.tensor([Skv - 1], dtype=torch.int32)
    c.check(c.ops.attention_sink_decode(q, k, v, sinks, 0.125, None, start),
            ref(q, k, v, sinks, 0.125, None, start), 2e-2, 2e-2)


@case("mla")
def _mla(c):
    torch, ref = c.torch, c.test("test_mla", "Test_MLA").reference
    from tilegym.ops.attn_interface import mla_interface
    B, H, S, D, P = 1, 2, 128, 128, 64
    q, k, v = c.rand(B, H, S, D, std=0.3), c.rand(B, H, S, D, std=0.3), c.rand(B, H, S, D, std=0.3)
    qpe, kpe = c.rand(B, H, S, P, std=0.3), c.rand(B, 1, S, P, std=0.3)
    scaling = 1 / math.sqrt(D + P)
    c.check(mla_interface(q, k, v, qpe, kpe, is_causal=True, scaling=scaling, backend="cutile"),
            ref(q, k, v, qpe, kpe, True, scaling), 1e-2, 1e-2)


@case("mla_decoding")
def _mla_decoding(c):
    torch, ref = c.torch, c.test("test_mla_decoding", "Test_MLADecoding").reference
    B, H, S, D, P = 2, 16, 128, 128, 64
    q, qpe = c.rand(B, H, D), c.rand(B, H, P)
    kv, kpe = c.rand(B, S, D), c.rand(B, S, P)
    scale = 1 / math.sqrt(D + P)
    c.check(c.cutile("mla_decoding").mla_decoding(q, qpe, kv, kpe, scale),
            ref(q, qpe, kv, kpe, scale), 1e-2, 1e-2)


@case("mla_decoding_split_kv")
def _mla_split(c):
    torch, ref = c.torch, c.test("test_mla_decoding_split_kv", "Test_MLADecodingSplitKV").reference
    B, H, S, D, P = 2, 16, 384, 128, 64
    q, qpe = c.rand(B, H, D), c.rand(B, H, P)
    kv, kpe = c.rand(B, S, D), c.rand(B, S, P)
    scale = 1 / math.sqrt(D + P)
    c.check(c.ops.mla_decoding_split_kv(q, qpe, kv, kpe, scale, 128),
            ref(q, qpe, kv, kpe, scale), 1e-2, 1e-2)


@case("moe")
def _moe(c):
    torch, ref = c.torch, c.test("test_moe", "Test_MOE").reference
    from tilegym.ops.moe_interface import fused_moe
    T, Hd, I, E, K = 16, 256, 128, 4, 2
    x = c.rand(T, Hd, std=0.1)
    w1, w2 = c.rand(E, 2 * I, Hd, std=0.1), c.rand(E, Hd, I, std=0.1)
    logits = torch.randn(T, E)
    wts, ids = torch.topk(logits.softmax(-1), K, -1)
    c.check(fused_moe(x, w1, w2, wts.to(torch.float16), ids.to(torch.int32)),
            ref(x, w1, w2, wts.to(torch.float16), ids), 1e-2, 1e-2)


@case("moe_align_block")
def _moe_align(c):
    torch = c.torch
    E, bs = 8, 16
    ids = torch.randint(0, E, (37, 2), dtype=torch.int32)
    out = c.cutile("moe_align_block").moe_align_block_size(ids, bs, E)
    sorted_ids, expert_ids, npad = out[0], out[1], out[2]
    # ours: each expert's tokens (flat indices) padded to a multiple of the block size
    flat = ids.flatten()
    counts = torch.bincount(flat.long(), minlength=E)
    padded = ((counts + bs - 1) // bs) * bs
    total = int(padded.sum())
    ok = int(npad.flatten()[0]) == total
    c.record.checked(ok, "" if ok else f"padded total {int(npad.flatten()[0])} != {total}")
    start, ok = 0, True
    for e in range(E):
        got = sorted_ids[start:start + int(counts[e])].long().sort().values
        want = (flat == e).nonzero().flatten()
        ok &= bool(torch.equal(got, want))
        ok &= bool((expert_ids[start // bs:(start + int(padded[e])) // bs] == e).all())
        start += int(padded[e])
    c.record.checked(ok, "" if ok else "tokens or experts not grouped by expert")


@case("recurrent_gated_delta_rule")
def _recurrent(c):
    torch = c.torch
    ref = c.test("test_recurrent_gated_delta_rule", "Test_RecurrentGatedDeltaRule").reference
    # the op's autotuning picks one of its kernels; without it (TileGym's switch) `persistent`
    # and a one-step decode pick each
    for T, persistent, tune in ((8, None, True), (8, False, False), (8, True, False),
                                (1, None, False)):
        B, H, K, V = 1, 2, 64, 64
        q, k = c.rand(B, T, H, K, dtype=torch.float32), c.rand(B, T, H, K, dtype=torch.float32)
        v = c.rand(B, T, H, V, dtype=torch.float32)
        g = -torch.rand(B, T, H)
        beta = torch.rand(B, T, H)
        s0 = torch.randn(B, H, K, V) * 0.1
        args = (q, k, v, g, beta, s0, True, True)
        os.environ["TILEGYM_DISABLE_AUTOTUNE"] = "0" if tune else "1"
        c.check(list(c.ops.recurrent_gated_delta_rule(*args, persistent=persistent)),
                list(ref(*args)), 1e-3, 1e-3, what=f"T={T} persistent={persistent}")


@case("chunk_gated_delta_rule")
def _chunk(c):
    torch = c.torch
    ref = c.test("test_chunk_gated_delta_rule", "Test_ChunkGatedDeltaRule").reference
    B, T, H, K, V = 1, 128, 2, 64, 64
    q, k = c.rand(B, T, H, K, dtype=torch.float32), c.rand(B, T, H, K, dtype=torch.float32)
    v = c.rand(B, T, H, V, dtype=torch.float32)
    g = -torch.rand(B, T, H) * 0.1
    beta = torch.rand(B, T, H)
    c.check(list(c.ops.chunk_gated_delta_rule(q, k, v, g, beta, 64, None, True, True)),
            list(ref(q, k, v, g, beta, 64, None, True, True)), 2e-3, 2e-3)


@case("mhc", "experimental/mhc")
def _mhc(c):
    torch, T = c.torch, c.test("experimental/test_mhc", "Test_MHC")
    n, Bt, C = 4, 32, 64
    x = c.rand(Bt, n * C, dtype=torch.bfloat16)
    w = c.rand(n * C, 2 * n + n * n, dtype=torch.bfloat16, std=0.1)
    bias = torch.randn(2 * n + n * n) * 0.1
    y, r = c.ops.mhc_gemm_rms_scale(x, w, n, 0.5, 0.7, 0.9, bias)
    ey, er = T.reference_gemm_rmsnorm(x, w)
    c.check([y, r], [T.reference_scale_bias_sigmoid(ey, er, n, 0.5, 0.7, 0.9, bias), er],
            2e-2, 2e-2, what="gemm_rms_scale")
    yy = torch.rand(Bt, 2 * n + n * n)
    c.check(c.ops.mhc_sinkhorn(yy.clone(), n), T.reference_sinkhorn(yy, n), 1e-4, 1e-4,
            what="sinkhorn")
    C = 1024                                # the op's tile of C (it launches C // 1024 blocks)
    x, f = c.rand(Bt, n * C, dtype=torch.bfloat16), c.rand(Bt, C, dtype=torch.bfloat16)
    c.check(c.ops.mhc_apply_residual(x, f, yy, n), T.reference_apply_residual(x, f, yy, n),
            1e-2, 2e-2, what="apply_residual")


def _e2m1_codes(torch, v):
    """ours: float32 -> e2m1 codes (round to nearest even, saturating at 6)."""
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    m = v.abs().clamp(max=6.0)
    d = (m.unsqueeze(-1) - grid).abs()
    best = d.min(-1, keepdim=True).values
    tie = (d == best)
    code = torch.where(tie.sum(-1) > 1, (tie * torch.arange(8)).argmax(-1) & ~1,
                       d.argmin(-1))        # a tie picks the even code of the two
    return (code | torch.signbit(v).long() << 3).to(torch.uint8)     # -0 keeps its sign


@case("nvfp4_quantize", "experimental/nvfp4_quantize")
def _nvfp4(c):
    torch = c.torch
    rows, cols, s_enc = 128, 64, 1.0
    x = c.rand(rows, cols, dtype=torch.bfloat16)
    packed, scales = c.ops.nvfp4_quantize(x, s_enc=s_enc)
    # ours, from the op's definition: per 16 columns, scale = e4m3(max(amax / 6 * s_enc, eps)),
    # values e2m1(x * s_enc / scale), two per byte (the first in the low nibble), scales in the
    # 128x4 -> 512-byte swizzle (byte (r % 32) * 16 + (r // 32) * 4 + c)
    b = x.float().view(rows, cols // 16, 16)
    scale = (b.abs().amax(-1) / 6.0 * s_enc).clamp(min=1.5258789e-05).to(torch.float8_e4m3fn)
    codes = _e2m1_codes(torch, b * (s_enc / scale.float()).unsqueeze(-1)).view(rows, cols)
    want_packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    r, g = torch.arange(128).view(-1, 1), torch.arange(4).view(1, -1)
    want_scales = torch.zeros(512, dtype=torch.uint8)
    want_scales[((r % 32) * 16 + (r // 32) * 4 + g).flatten()] = \
        scale.view(torch.uint8)[:, :4].flatten()
    c.check([packed, scales], [want_packed, want_scales], 0, 0)


@case("sparse_mla", "experimental/sparse_mla")
def _sparse_mla(c):
    torch, t = c.torch, c.test("experimental/test_sparse_mla")
    ref = t.Test_SparseMLA.reference
    B, H, S, S_kv, D, P, H_kv, topk = 1, 16, 64, 128, 128, 64, 1, 64     # TileGym's smallest
    q = c.rand(B, H, S, D, dtype=torch.bfloat16, std=0.3)
    k, v = (c.rand(B, H_kv, S_kv, D, dtype=torch.bfloat16, std=0.3) for _ in range(2))
    qpe = c.rand(B, H, S, P, dtype=torch.bfloat16, std=0.3)
    kpe = c.rand(B, 1, S_kv, P, dtype=torch.bfloat16, std=0.3)
    idx = t._generate_indices(B, S, H_kv, topk, S_kv, "cpu")
    scaling = 1 / math.sqrt(D + P)
    c.check(c.ops.sparse_mla(q, k, v, idx, qpe, kpe, is_causal=True, scaling=scaling),
            ref(q, k, v, idx, qpe, kpe, True, scaling), 1e-2, 1e-2)


@case("swa_attention", "experimental/swa_attention")
def _swa(c):
    torch = c.torch
    q, k, v = c.rand(1, 2, 128, 64), c.rand(1, 2, 128, 64), c.rand(1, 2, 128, 64)
    W = 32
    out = c.ops.swa_attention(q, k, v, window_size=W, is_causal=True)
    # ours: causal attention over the last W keys (key j visible to query i if i-W < j <= i)
    s = (q.float() @ k.float().transpose(-1, -2)) / 8.0
    i, j = torch.arange(128).view(-1, 1), torch.arange(128).view(1, -1)
    s = s.masked_fill(~((j <= i) & (j > i - W)), float("-inf"))
    c.check(out, (s.softmax(-1) @ v.float()).half(), 1e-2, 1e-2)


@case("fused_linear_cross_entropy", "experimental/fused_linear_cross_entropy")
def _flce(c):
    torch = c.torch
    h = c.rand(64, 128, dtype=torch.float32)
    w = c.rand(300, 128, dtype=torch.float32, std=0.1)
    tgt = torch.randint(0, 300, (64,))
    tgt[3] = -100
    out = c.ops.fused_linear_cross_entropy(h, w, tgt, chunk_size=32)
    exp = torch.nn.functional.cross_entropy(h @ w.t(), tgt, ignore_index=-100)   # ours
    c.check(out, exp, 1e-4, 1e-4)


# ---- the child: one op ------------------------------------------------------------------------

def _located(e):
    """A user error tilepy raised on purpose (located), not an internal one."""
    import tilepy.errors as errors
    internal = getattr(errors, "TileInternalError", ())
    return isinstance(e, errors.TileError) and not isinstance(e, internal) and \
        not isinstance(e, errors.TileUnsupportedFeatureError)


def _kernels(module):
    from tilepy.frontend.kernel import KernelFunction
    return [v.name for v in vars(module).values() if isinstance(v, KernelFunction)]


def run_child(op, checkout, out_path, capability, sms):
    record = samples.Record()
    samples._emulate_cuda(capability, sms)
    samples._cuda_tile(record, capability)
    sys.path[:0] = [os.path.join(checkout, "src"), checkout]
    module, fn = CASES[op]
    ended = "completed"
    kernels, mod = [], None
    try:
        import tilegym
        tilegym.set_backend("cutile")
        mod = __import__(f"tilegym.ops.cutile.{module.replace('/', '.')}", fromlist=["_"])
        kernels = _kernels(mod)
        fn(Ctx(record, checkout))
    except BaseException as e:                   # noqa: BLE001 - recorded, reported
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{os.path.relpath(fr.filename, checkout)}:{fr.lineno}"
                      for fr in reversed(tb) if fr.filename.startswith(checkout)), "?")
        ended = f"stopped at {where}: {type(e).__name__}: {samples._first_line(e)}"
        if _located(e):
            for name in record.pending:
                if record.status.get(name) == "CRASH":
                    record.status[name] = "REFUSED"
    # a kernel of another op's module (splitk_reduce under flash_decode) has that op's row
    others = {k for name, m in list(sys.modules.items()) if m is not mod and
              name.startswith("tilegym.ops.cutile.") for k in _kernels(m)} - set(kernels)
    samples.write_rows(out_path, kernels + [k for k in record.status if k not in others],
                       record, ended)


# ---- the parent: every op in a child process ------------------------------------------------

def run_op(op, args):
    return samples.run_in_child(
        lambda out: [sys.executable, os.path.abspath(__file__), os.path.abspath(args.checkout),
                     "--child", op, out, "--capability", args.capability, "--sms",
                     str(args.sms)], args)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", help="a TileGym work tree (src/tilegym/ops/cutile is run)")
    p.add_argument("--only", nargs="*", help="op names (default: all; --list names them)")
    p.add_argument("--list", action="store_true", help="print the op names and exit")
    samples.emulation_arguments(p)
    p.add_argument("--timeout", type=float, default=900, help="seconds per op")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(CASES))
        return
    capability = tuple(int(x) for x in args.capability.split("."))
    if args.child:
        return run_child(args.child[0], os.path.abspath(args.checkout), args.child[1],
                         capability, args.sms)
    unknown = [op for op in args.only or () if op not in CASES]
    if unknown:
        p.error(f"no case for {', '.join(unknown)} (--list names the ops)")
    samples.print_table("op", args.only or CASES, lambda op: run_op(op, args), STATUSES)


if __name__ == "__main__":
    main()
