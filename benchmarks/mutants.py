"""The fixed, versioned mutant set of `benchmarks/mutate.py`.

Each mutant is one small deliberate bug: a list of (file, text, replacement) edits, where `text`
occurs exactly once in the file, and the tests of the default test command (not `slow`) that
should kill it. Change a mutant only with a new MUTANT_SET_VERSION, so scores stay comparable;
when the code a mutant edits moves, update `text` (tests/test_mutants.py fails until you do).
"""
from __future__ import annotations

from dataclasses import dataclass

# v2: v1's bugs, texts moved with issue 19's restructuring; v3: rt-load-pad runs the ragged
# test (it survived v2's subset: that padded load was not vectorized);
# v4: v3 with anchors moved to the merged code (selects in minmaxf, location_free keys);
# v5: pack_args's anchors moved (int64 index parameters); v6: lo-div16's anchor moved (the C++
# path's specialization keys the 16-byte facts its code reads); v7: the reductions' identity
# anchors moved (reduce_axes takes the op's name for cuTile's messages)
MUTANT_SET_VERSION = 7

RT = "tilepy/cuda_c/include/tilepy/runtime.h"
EMIT = "tilepy/cuda_c/emitter.py"
ARITH = "tilepy/frontend/builtins/arith.py"
RED = "tilepy/frontend/builtins/reduction.py"
COMB = "tilepy/frontend/builtins/combine.py"
HAZ = "tilepy/lowering/hazards.py"
CPU = "tilepy/launch/cpu.py"
NVRTC = "tilepy/launch/nvrtc.py"
LAUNCH = "tilepy/api/launcher.py"
SPEC = "tilepy/frontend/specialize.py"

NUMPY = "tests/test_api_numpy.py"
REDUCTIONS = "tests/test_api_reductions.py"
STRUCT = "tests/test_api_structure.py"
RAGGED = "tests/test_ragged_guarded.py"
HAZARDS = "tests/test_hazards_direct.py"
KEYS = "tests/test_cache_keys_callsite.py"
STRIDES = "tests/test_launch_strides.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    what: str
    edits: tuple            # ((file, text, replacement), ...)
    tests: tuple            # pytest arguments (files, node ids, -k expressions)
    named: bool = False     # one of the four the issue names


def m(id, area, what, file, text, repl, *tests, named=False):
    return Mutant(id, area, what, ((file, text, repl),), tuple(tests), named)


MUTANTS = (
    # ---------------------------------------------------------------- runtime headers
    m("rt-cosh-sinh", "runtime", "ct.cosh computes sinh", RT,
      "TP_FUN(cosh, coshf, ::cosh)", "TP_FUN(cosh, sinhf, ::sinh)", NUMPY, "-k", "cosh",
      named=True),
    m("rt-chunk-span", "runtime", "vector ragged edge one element too long (chunk_span)", RT,
      "if (left < n) n = left > 0 ? (int)left : 0;",
      "if (left < n) n = left > 0 ? (int)left + 1 : 0;", RAGGED, named=True),
    m("rt-floor-ceil", "runtime", "floor rounds up", RT,
      "TP_FUN(floor, floorf, ::floor)", "TP_FUN(floor, ceilf, ::ceil)", NUMPY, "-k", "floor"),
    m("rt-rsqrt-f64", "runtime", "f64 rsqrt is sqrt", RT,
      "TP_FUN(rsqrt, rsqrtf, 1.0 / ::sqrt)", "TP_FUN(rsqrt, rsqrtf, ::sqrt)", NUMPY, "-k",
      "rsqrt"),
    m("rt-atan2-swap", "runtime", "atan2 operands swapped", RT,
      "TP_FBIN(atan2, ::atan2(a, b))", "TP_FBIN(atan2, ::atan2(b, a))", NUMPY, "-k", "atan2"),
    m("rt-signed-zero", "runtime", "maxf/minf ignore the sign of zero", RT,
      "r = a == b ? ((sign_bit(a) == Max) ? b_ : a_) : r;", "r = a == b ? a_ : r;", NUMPY,
      "-k", "maximum or minimum"),
    m("rt-nan-number", "runtime", "maxNumber returns the first operand when one is NaN", RT,
      "return na ? ((PropagateNan || nb) ? nan : b_) : r;", "return na ? ((PropagateNan || nb) ? nan : a_) : r;", NUMPY, "-k", "maximum or minimum"),
    m("rt-floordiv-round", "runtime", "signed floor division rounds the wrong way", RT,
      "if (r != 0 && ((r < 0) != (y < 0))) { if (Rounding == 1) q -= 1; }",
      "if (r != 0 && ((r < 0) != (y < 0))) { if (Rounding == 2) q -= 1; }", NUMPY, "-k",
      "floordiv or divmod0 or op//"),
    m("rt-shr-logical", "runtime", "signed >> is logical", RT,
      "    if (Signed) return wrap_to<T>(sread(a) >>", "    if (false) return wrap_to<T>(sread(a) >>",
      NUMPY, "-k", "rshift"),
    m("rt-subi-swap", "runtime", "integer subtraction reversed", RT,
      "TP_IBIN(subi, a - b)", "TP_IBIN(subi, b - a)", NUMPY, "-k", "int_function and sub"),
    m("rt-absi", "runtime", "integer abs is the identity", RT,
      "return a < 0 ? negi{}(a) : a;", "return a;", NUMPY, "-k", "int_function and abs"),
    m("rt-cmpf-nan", "runtime", "comparisons with NaN give the unordered answer", RT,
      "if (is_nan(a) || is_nan(b)) return !Ordered;", "if (is_nan(a) || is_nan(b)) return Ordered;",
      NUMPY, "-k", "float_predicate"),
    m("rt-load-pad", "runtime", "partial vector loads read past the edge instead of padding", RT,
      'r.v[s0 + j] = j < n ? *TP_VADDR(v, off + j, 1, "a load") : pad;',
      'r.v[s0 + j] = *TP_VADDR(v, off + j, 1, "a load");',
      RAGGED),
    # ---------------------------------------------------------------------- emitter
    m("em-pred-swap", "emitter", "< and <= predicates swapped", EMIT,
      '"less_than": 2, "less_than_or_equal": 3', '"less_than": 3, "less_than_or_equal": 2',
      NUMPY, "-k", "predicate"),
    m("em-ordered", "emitter", "every float comparison emitted ordered", EMIT,
      '"true" if op.comparison_ordering == "ordered" else "false"', '"true"',
      NUMPY, "-k", "float_predicate"),
    m("em-neg-zero-pad", "emitter", "NEG_ZERO padding is +0.0", EMIT,
      '"neg_zero": -0.0', '"neg_zero": 0.0', STRUCT, "-k", "padding"),
    m("em-floordiv", "emitter", "divi rounding toward -inf emitted as toward zero", EMIT,
      '"negative_inf": 1', '"negative_inf": 0', NUMPY, "-k", "int_function and floordiv"),
    m("em-grid", "emitter", "num_blocks reads blockIdx", EMIT,
      'src = "blockIdx" if op.name == "get_tile_block_id" else "gridDim"', 'src = "blockIdx"',
      STRUCT, "-k", "int_structure and grid"),
    m("em-propagate-nan", "emitter", "propagate_nan dropped from maxf/minf", EMIT,
      "\"true\" if op.attrs.get(\"propagate_nan\") else \"false\"", '"false"', NUMPY, "-k",
      "nan"),
    # -------------------------------------------------------------------- frontend builtins
    m("fe-minmax-identity", "frontend", "identity of ct.max/ct.min is 0", RED,
      "comb, lambda d: _extreme(d, not largest),", "comb, lambda d: 0,", REDUCTIONS,
      named=True),
    m("fe-sum-identity", "frontend", "identity of ct.sum is 1", RED,
      'add, lambda d: 0, "sum")', 'add, lambda d: 1, "sum")', REDUCTIONS, "-k", "sum"),
    m("fe-mod-sign", "frontend", "% takes the dividend's sign", ARITH,
      'c("less_than", r, zero), c("less_than", b, zero)',
      'c("less_than", r, zero), c("less_than", a, zero)', NUMPY, "-k", "mod"),
    m("fe-mod-zero-sign", "frontend", "a zero remainder takes the dividend's sign", ARITH,
      'c("less_than", b, zero), neg0, zero, dtype=d)', 'c("less_than", b, zero), zero, zero, dtype=d)',
      NUMPY, "-k", "mod"),
    m("fe-floordiv-trunc", "frontend", "// on signed integers truncates", ARITH,
      'rounding = "negative_inf" if d.signed else None', "rounding = None", NUMPY, "-k",
      "int_function and floordiv"),
    m("fe-ne-ordered", "frontend", "x != NaN is false", ARITH,
      'order = "unordered" if pred == "not_equal" else "ordered"', 'order = "ordered"', NUMPY,
      "-k", "float_predicate"),
    m("fe-minimum-max", "frontend", "float ct.minimum is maxf", ARITH,
      'api.minimum: (min, "minf", "mini", True)', 'api.minimum: (min, "maxf", "mini", True)',
      NUMPY, "-k", "minimum"),
    m("fe-int-pow", "frontend", "integer ** by squaring skips a bit", ARITH,
      "        if n & 1:\n            result = emit(ctx, \"muli\", result, sq, dtype=d)",
      "        if n & 2:\n            result = emit(ctx, \"muli\", result, sq, dtype=d)", NUMPY,
      "-k", "pow3"),
    m("fe-argmax-ties", "frontend", "argmax ties give the last index", COMB,
      'first = emit(ctx, "cmpi", xi, ai, dtype=D.bool_, comparison_predicate="less_than",',
      'first = emit(ctx, "cmpi", xi, ai, dtype=D.bool_, comparison_predicate="greater_than",',
      REDUCTIONS, "-k", "arg"),
    # ---------------------------------------------------------------------- lowering
    m("lo-raw", "lowering", "read-after-write barrier dropped", HAZ,
      "if not (a.write or b.write) or not may_alias(a.root, b.root):",
      "if not b.write or not may_alias(a.root, b.root):", HAZARDS),
    m("lo-war", "lowering", "write-after-read barrier dropped", HAZ,
      "if not (a.write or b.write) or not may_alias(a.root, b.root):",
      "if not a.write or not may_alias(a.root, b.root):", HAZARDS),
    m("lo-any-pattern", "lowering", "two gathers/scatters treated as the same threads' elements",
      HAZ, 'a.pattern[0] in ("tile", "thread0"))', 'a.pattern[0] in ("tile", "thread0", "any"))',
      HAZARDS),
    m("lo-div16", "lowering", "every extent specialized as a multiple of 16 bytes", SPEC,
      "tuple(fact(d, cap) for d in info.shape)", "tuple(cap for d in info.shape)", RAGGED),
    # --------------------------------------------------------------------- cache keys
    Mutant("key-headers", "cache keys", "runtime headers dropped from the CPU and NVRTC keys",
           ((CPU, "compiler_id(cxx), fl, _headers(), location_free(full))",
             "compiler_id(cxx), fl, location_free(full))"),
            (NVRTC, "options(arch, source), _headers(), location_free(source))",
             "options(arch, source), location_free(source))")),
           (KEYS,), named=True),
    m("key-cpu-flags", "cache keys", "compiler flags dropped from the CPU key", CPU,
      "compiler_id(cxx), fl, _headers(), location_free(full))",
      "compiler_id(cxx), _headers(), location_free(full))", KEYS),
    m("key-cpu-version", "cache keys", "tilepy version dropped from the CPU key", CPU,
      'key_of("cpu", __version__, compiler_id(cxx)', 'key_of("cpu", compiler_id(cxx)', KEYS),
    m("key-nvrtc-version", "cache keys", "NVRTC version dropped from the NVRTC key", NVRTC,
      "key_of(kind, __version__, tc.nvrtc_version, tc.runtime_version",
      "key_of(kind, __version__, tc.runtime_version", KEYS),
    m("key-nvrtc-tilepy", "cache keys", "tilepy version dropped from the NVRTC key", NVRTC,
      "key_of(kind, __version__, tc.nvrtc_version", "key_of(kind, tc.nvrtc_version", KEYS),
    m("key-nvrtc-options", "cache keys", "NVRTC options dropped from the key", NVRTC,
      "arch,\n                       options(arch, source), _headers()",
      "arch,\n                       _headers()", KEYS),
    # ------------------------------------------------------------------ launch packing
    m("pk-strides-reversed", "launch packing", "non-unit strides packed in reverse order", LAUNCH,
      "for i, st in enumerate(info.strides) if", "for i, st in reversed(list(enumerate(info.strides))) if",
      STRIDES),
    m("pk-shape-reversed", "launch packing", "shapes packed in reverse order", LAUNCH,
      'for s in info.shape]', 'for s in reversed(info.shape)]', STRIDES),
)
