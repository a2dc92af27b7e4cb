"""The directed rounding modes (rounding<zero>, <negative_inf>, <positive_inf>) of addf, subf,
mulf, divf, fma and sqrt on f16, bf16, f32 and f64: the interpreter and both CPU modes against
an exact reference written here (Python's fractions, rounded by hand), on random and edge
operands (subnormals, halfway points, cancellations to zero, overflow past the largest finite
value, infinities and NaN); NVRTC's SASS for sm_80/sm_90 holds the rounding in the instructions.
ftof in the directed modes NVIDIA's 13.4 dialect takes (cuTile's astype) likewise."""
import functools
import math
from fractions import Fraction

import numpy as np
import pytest

import tilepy as ct
from tilepy.api.compiler import compile_module
from tilepy.ir.parser import parse_module

MODES = ("zero", "negative_inf", "positive_inf")
OPS = (("addf", 2), ("subf", 2), ("mulf", 2), ("divf", 2), ("fma", 3), ("sqrt", 1))
# element type -> (numpy dtype, precision, smallest normal exponent, largest exponent)
FORMATS = {"f16": (np.float16, 11, -14, 15), "bf16": (None, 8, -126, 127),
           "f32": (np.float32, 24, -126, 127), "f64": (np.float64, 53, -1022, 1023),
           "tf32": (None, 11, -126, 127)}
N = 256                                  # operands per element type (the first
N_INTERPRET = 128                        # N_INTERPRET in the interpreter: its own tests are
                                         # test_interpret_numerics)
OUTS = len(OPS) * len(MODES)


# ---------------------------------------------------------------------------- the reference
def round_exact(x: Fraction, elem: str, mode: str) -> float:
    """x (nonzero) rounded to elem in a directed mode or to nearest with ties away, as a Python
    float."""
    _, p, emin, emax = FORMATS[elem]
    num, den = abs(x.numerator), x.denominator
    e = num.bit_length() - den.bit_length()               # 2**e <= |x| < 2**(e+1)
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    q = max(e, emin) - (p - 1)                             # the exponent of an ulp at |x|
    div = den << q if q >= 0 else den
    n, rem = divmod(num, div) if q >= 0 else divmod(num << -q, den)
    away = mode in ("nearest_away", "negative_inf" if x < 0 else "positive_inf")
    n += int(2 * rem >= div if mode == "nearest_away" else away and rem != 0)
    if e > emax or (e == emax and n >> p):                 # past the largest finite value
        r = math.inf if away else math.ldexp(2 ** p - 1, emax - p + 1)
    else:
        r = math.ldexp(n, q)
    return -r if x < 0 else r


def _sum_zero(x: float, y: float, mode: str) -> float:
    """The sign of an exactly zero x + y (IEEE 754 6.3)."""
    neg = math.copysign(1, x) < 0 if math.copysign(1, x) == math.copysign(1, y) \
        else mode == "negative_inf"
    return -0.0 if neg else 0.0


def reference(name: str, mode: str, elem: str, a: float, b: float, c: float) -> float:
    a, b, c = float(a), float(b), float(c)
    xs = (a, b, c)[:dict(OPS)[name]]
    if name == "sqrt":
        xs = (abs(a),)
    with np.errstate(all="ignore"):
        plain = {"addf": lambda: np.float64(a) + b, "subf": lambda: np.float64(a) - b,
                 "mulf": lambda: np.float64(a) * b, "divf": lambda: np.float64(a) / b,
                 "fma": lambda: np.float64(a) * b + c, "sqrt": lambda: np.sqrt(abs(a))}[name]()
    if not all(map(math.isfinite, xs)) or (name == "divf" and b == 0):
        return float(plain)                                # infinities and NaN: exact
    fa, fb, fc = (Fraction(v) if math.isfinite(v) else None for v in (a, b, c))   # used: finite
    exact = {"addf": lambda: fa + fb, "subf": lambda: fa - fb, "mulf": lambda: fa * fb,
             "divf": lambda: fa / fb, "fma": lambda: fa * fb + fc, "sqrt": None}[name]
    if name == "sqrt":
        return _sqrt_directed(abs(fa), elem, mode) if a != 0 else 0.0
    r = exact()
    if r != 0:
        return round_exact(r, elem, mode)
    if name in ("mulf", "divf"):
        return float(plain)                                # a zero operand: the signs' xor
    x, y = (a, -b) if name == "subf" else (a * b, c) if name == "fma" else (a, b)
    return _sum_zero(x, y, mode)


def _sqrt_directed(m: Fraction, elem: str, mode: str) -> float:
    """sqrt(m) rounded: bracketed by integer square roots at 2 more bits than the format."""
    _, p, emin, _ = FORMATS[elem]
    k = p - emin + 2            # 2**-k: an eighth of the smallest subnormal
    s = Fraction(2) ** (2 * k) * m                         # sqrt(m) = sqrt(s) / 2**k
    r = math.isqrt(s.numerator // s.denominator)
    exact = r * r * s.denominator == s.numerator
    lo = Fraction(r, 2 ** k)
    # sqrt(m) is lo, or strictly between lo and lo + 2**-k, multiples of 2**-k as every value
    # of the format is: any point strictly between rounds alike
    return round_exact(lo if exact else lo + Fraction(1, 2 ** (k + 1)), elem, mode)


# ---------------------------------------------------------------------------- the operands
def operands(elem: str, seed: int):
    """a, b, c (float64 holding elem values): edges first, then random bit patterns and close
    pairs; the storage array to hand the kernel is `storage(elem, x)`."""
    rng = np.random.default_rng(seed)
    dt, p, emin, emax = FORMATS[elem]
    tiny, big = 2.0 ** (emin - p + 1), float(round_exact(Fraction(2) ** (emax + 1), elem, "zero"))
    ulp1 = 2.0 ** (1 - p)
    edges = [(1, ulp1 / 2, 0), (1, -ulp1 / 2, 0), (1 + ulp1, ulp1 / 2, -1), (big, big, -big),
             (big, -big, 0), (-big, -big, big), (tiny, 0.5, tiny), (-tiny, 0.5, 0), (tiny, tiny, -0.0),
             (0.0, 0.0, 0.0), (0.0, -0.0, -0.0), (-0.0, -0.0, 0.0), (3, 3, -9), (1, 3, 0),
             (-1, 3, 1), (2, 0.0, 1), (-2, 0.0, -0.0), (math.inf, 1, 1), (1, math.inf, -math.inf),
             (math.nan, 1, 1), (2 ** (emin + 1), 3, 0), (big, 2, 1), (big, 0.5, -big),
             (2 * tiny, 1 / 3, 0), (1e-3 if elem != "f64" else 1e-300, 1e-3, 0)]
    a, b, c = (to_elem(np.array(v, np.float64), elem) for v in zip(*edges))
    nbits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[elem]
    k = N - len(edges)
    raw = rng.integers(0, 2 ** nbits, size=(3, k), dtype=np.uint64)
    with np.errstate(invalid="ignore"):                # NaN patterns, replaced below
        if elem == "bf16":
            vals = (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            vals = raw.astype(f"u{nbits // 8}").view(dt).astype(np.float64)
    close = rng.standard_normal((3, k))
    close[1] = -close[0] * (1 + rng.integers(-8, 8, k) * ulp1)   # cancellation
    pick = rng.random((3, k)) < 0.5
    vals = np.where(pick, vals, close)
    vals = to_elem(vals, elem)
    vals[~np.isfinite(vals)] = 1.5
    return [np.concatenate([x, v]) for x, v in zip((a, b, c), vals)]


def to_elem(x, elem):
    """float64 values rounded (to nearest) into elem, as float64 (past its range: infinities)."""
    with np.errstate(over="ignore"):
        return _to_elem(x, elem)


def _to_elem(x, elem):
    if elem == "bf16":
        import ml_dtypes
        return np.asarray(x).astype(ml_dtypes.bfloat16).astype(np.float64)
    return np.asarray(x).astype(FORMATS[elem][0]).astype(np.float64)


def storage(x, elem):
    if elem == "bf16":
        import ml_dtypes
        return np.asarray(x).astype(ml_dtypes.bfloat16)
    return np.asarray(x).astype(FORMATS[elem][0])


@functools.lru_cache(maxsize=None)
def case(elems: tuple):
    """Operands and the expected results (OUTS x N per element type)."""
    out = {}
    for i, elem in enumerate(elems):
        a, b, c = operands(elem, 31 + i)
        want = np.array([[reference(n, m, elem, x, y, z) for x, y, z in zip(a, b, c)]
                         for n, _ in OPS for m in MODES])
        out[elem] = (a, b, c, want)
    return out


# ---------------------------------------------------------------------------- the kernel
def pointer_param(v: str, elem: str, n: int, load: bool) -> list[str]:
    """Entry parameter v (a pointer to elem) offset to a tile of n pointers `{v}p`, and with
    `load` its elements `{v}v`."""
    t, pt = f"tile<{n}x{elem}>", f"tile<{n}xptr<{elem}>>"
    lines = [f"{v}1 = reshape {v} : tile<ptr<{elem}>> -> tile<1xptr<{elem}>>",
             f"{v}b = broadcast {v}1 : tile<1xptr<{elem}>> -> {pt}",
             f"{v}p = offset {v}b, %offs : {pt}, tile<{n}xi32> -> {pt}"]
    return lines + [f"{v}v, {v}k = load_ptr_tko weak {v}p : {pt} -> {t}, token"] * load


def store_at(r: str, value: str, k: int, n: int, out: str, elem: str) -> list[str]:
    """Store tile `value` (n elements of elem) at out[k*n:(k+1)*n] (`out`: a tile of n pointers
    from pointer_param); `r` names the ops."""
    t, pt = f"tile<{n}x{elem}>", f"tile<{n}xptr<{elem}>>"
    return [f"{r}n = constant <i32: {k * n}> : tile<{n}xi32>",
            f"{r}p = offset {out}, {r}n : {pt}, tile<{n}xi32> -> {pt}",
            f"{r}s = store_ptr_tko weak {r}p, {value} : {pt}, {t} -> token"]


def module(entry: str, params: list[str], lines: list[str]) -> str:
    return (f"cuda_tile.module @m {{\nentry @{entry}(" + ", ".join(params) + ") {\n"
            + "\n".join(lines) + "\nreturn\n}\n}\n")


def module_text(elems, n=N) -> str:
    """One entry: for each element type, operands a, b, c (n elements) and an output o of
    OUTS * n: o[k*n:(k+1)*n] is (op, mode) number k of OPS x MODES (sqrt of |a|)."""
    lines, params = [f"%offs = iota : tile<{n}xi32>"], []
    for elem in elems:
        t = f"tile<{n}x{elem}>"
        for p in "abco":
            params.append(f"%{p}_{elem}: tile<ptr<{elem}>>")
            lines += pointer_param(f"%{p}_{elem}", elem, n, load=p != "o")
        lines.append(f"%abs_{elem} = absf %a_{elem}v : {t}")
        k = 0
        for name, arity in OPS:
            args = ", ".join(f"%{p}_{elem}v" for p in "abc"[:arity])
            args = f"%abs_{elem}" if name == "sqrt" else args
            for mode in MODES:
                r = f"%r{k}_{elem}"
                lines += [f"{r} = {name} {args} rounding<{mode}> : {t}",
                          *store_at(r, r, k, n, f"%o_{elem}p", elem)]
                k += 1
    return module("directed", params, lines)


ELEMS = ("f16", "bf16", "f32", "f64")


def _same(got, want):
    """Equal values, zeros by sign, NaN as NaN."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_directed_rounding_matches_exact_reference(mode):
    from tilepy import interpret
    data = case(ELEMS)
    args, outs = [], {}
    for elem in ELEMS:
        a, b, c, _ = data[elem]
        outs[elem] = storage(np.zeros(OUTS * N), elem)
        args += [storage(a, elem), storage(b, elem), storage(c, elem), outs[elem]]
    n = N_INTERPRET if mode == "interpret" else N
    text = module_text(ELEMS, n)
    if mode == "interpret":
        interpret.run(parse_module(text), 1, args)
    else:
        compile_module(parse_module(text)).run_cpu(1, args, mode=mode)
    for elem in ELEMS:
        a, b, c, want = data[elem]
        got = outs[elem].astype(np.float64)[:OUTS * n].reshape(OUTS, n)
        want = want[:, :n]
        ok = _same(got, want)
        if not ok.all():
            k, i = np.argwhere(~ok)[0]
            name, rm = OPS[k // len(MODES)][0], MODES[k % len(MODES)]
            pytest.fail(f"{mode} {elem} {name} rounding<{rm}>({a[i]!r}, {b[i]!r}, {c[i]!r}) = "
                        f"{got[k, i]!r}, exact {want[k, i]!r} ({(~ok).sum()} of {ok.size} differ)")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_sass_rounds_in_the_instructions(arch):
    """f32/f64 + - * fma: one FADD.RZ/DMUL.RM/... each (CUDA's _rz/_rd/_ru intrinsics); f16
    through f32 in the same mode and a conversion in it (F2F...RM/RP, F2FP...RZ)."""
    import collections
    from kernels_util import cubin_stats
    from tilepy.launch.nvrtc import compile_cubin
    cm = compile_module(parse_module(module_text(("f16", "f32", "f64"), 32)))
    cb = compile_cubin(cm.compile_source(), arch, cm.symbol)
    (r,) = cubin_stats(cb.data, cb.log).values()
    ops = collections.Counter(r["ops"])
    for base in ("FADD", "FMUL", "FFMA", "DADD", "DMUL", "DFMA", "F2F.F16.F32"):
        for rnd in ("RZ", "RM", "RP"):
            name = f"{base}.{rnd}"
            if base == "F2F.F16.F32" and rnd == "RZ":
                name = "F2FP.PACK_AB.RZ" if arch == "sm_80" else "F2FP.F16.F32.PACK_AB.RZ"
            assert ops[name] > 0, (name, sorted(ops))


# ---------------------------------------------------------------------------- conversions
# (source, target, modes): the narrowing conversions NVIDIA's 13.4 table takes directed (and to
# nearest with ties away)
CONVERSIONS = (("f64", "f32", MODES), ("f64", "f16", MODES[:1]), ("f64", "bf16", MODES[:1]),
               ("f64", "tf32", MODES[:1]), ("f32", "f16", MODES[:1]), ("f32", "bf16", MODES[:1]),
               ("f32", "tf32", MODES[:1]), ("bf16", "f16", MODES),
               ("f32", "tf32", ("nearest_away",)), ("bf16", "f16", ("nearest_away",)))
SOURCES = ("f64", "f32", "bf16")


def conversion_text(n: int) -> str:
    """For each source type a: an input a (n elements); o (f64): each conversion of CONVERSIONS
    in each of its modes, widened back to f64 exactly, at o[k*n:(k+1)*n]."""
    lines, params = [f"%offs = iota : tile<{n}xi32>"], []
    for elem in (*SOURCES, "o"):
        e = "f64" if elem == "o" else elem
        params.append(f"%{elem}: tile<ptr<{e}>>")
        lines += pointer_param(f"%{elem}", e, n, load=elem != "o")
    k = 0
    for src, dst, modes in CONVERSIONS:
        for mode in modes:
            r = f"%c{k}"
            lines += [f"{r} = ftof %{src}v rounding<{mode}> : tile<{n}x{src}> -> tile<{n}x{dst}>",
                      f"{r}w = ftof {r} : tile<{n}x{dst}> -> tile<{n}xf64>",
                      *store_at(r, f"{r}w", k, n, "%op", "f64")]
            k += 1
    return module("convert", params, lines)


def _convert_reference(x: float, dst: str, mode: str) -> float:
    return x if x == 0 or not math.isfinite(x) else round_exact(Fraction(x), dst, mode)


@functools.lru_cache(maxsize=None)
def conversion_case():
    """The source values (f64, f32, bf16: their edges and random values) and the expected
    results, one row per conversion and mode."""
    rng = np.random.default_rng(7)
    f64 = np.concatenate([[0.0, -0.0, 1 + 2.0 ** -40, -(1 + 2.0 ** -40), 65519.0, 65520.0,
                           -70000.0, 1e300, -1e300, 2.0 ** -140, -(2.0 ** -150), 2.0 ** -25,
                           3.0e38, math.inf, -math.inf, math.nan, 1 + 2.0 ** -11,
                           -(1 + 3 * 2.0 ** -11), 5 * 2.0 ** -25, -3 * 2.0 ** -25],
                          rng.standard_normal(N - 20) * 10.0 ** rng.integers(-30, 30, N - 20)])
    vals = {"f64": f64, "f32": to_elem(f64, "f32"), "bf16": to_elem(f64, "bf16")}
    want = np.array([[_convert_reference(float(x), dst, mode) for x in vals[src]]
                     for src, dst, modes in CONVERSIONS for mode in modes])
    return vals, want


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_directed_conversions_match_exact_reference(mode):
    from tilepy import interpret
    vals, want = conversion_case()
    n = N_INTERPRET if mode == "interpret" else N
    out = np.zeros(len(want) * n)
    args = [storage(vals[e][:n], e) for e in SOURCES] + [out]
    if mode == "interpret":
        interpret.run(parse_module(conversion_text(n)), 1, args)
    else:
        compile_module(parse_module(conversion_text(n))).run_cpu(1, args, mode=mode)
    got, want = out.reshape(len(want), n), want[:, :n]
    ok = _same(got, want)
    if not ok.all():
        k, i = np.argwhere(~ok)[0]
        rows = [(s, d, m) for s, d, ms in CONVERSIONS for m in ms]
        pytest.fail(f"{mode}: ftof {rows[k]} of {vals[rows[k][0]][i]!r} = {got[k, i]!r}, exact "
                    f"{want[k, i]!r} ({(~ok).sum()} of {ok.size} differ)")


def test_directed_conversions_compile_with_nvrtc_and_need_bytecode_13_4():
    from tilepy.bytecode import write_module
    from tilepy.errors import TileUnsupportedFeatureError
    from tilepy.launch.nvrtc import compile_cubin
    cm = compile_module(parse_module(conversion_text(32)))
    for arch in ("sm_80", "sm_90"):
        compile_cubin(cm.compile_source(), arch, cm.symbol)
    write_module(parse_module(conversion_text(32)), (13, 4))
    with pytest.raises(TileUnsupportedFeatureError, match="ftof rounding_mode=zero into f32 needs "
                                                          "bytecode 13.4"):
        write_module(parse_module(conversion_text(32)), (13, 3))
