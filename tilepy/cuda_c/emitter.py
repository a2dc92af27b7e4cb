"""Tile IR -> CUDA C++: one emitted line per op, calling templates of tilepy/runtime.h.

The emitter is a table from op name to a small function; element-wise ops are a second table
from op name to the runtime functor that computes one element. Everything about *how* a tile op
runs lives in the runtime header; this file only spells the calls. Emission state (names, the
writer, shared-memory size, constant tables) travels in an explicit `EmitContext`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TileUnsupportedFeatureError, at, internal_errors
from ..ir import Operation, Value
from ..ir.ops import fold_identities
from ..lowering.assign_layouts import LayoutPlan, commutative
from ..lowering.layouts import Cyclic, MmaAcc, broadcast_in_registers, rows_path
from ..lowering.memfacts import contiguous_along
from ..lowering.sink_broadcast import column_iota
from ..types import (CPP_TYPE, E2M1, E4M3, E5M2, E5M3, E8M0, F16, NUMPY_DTYPE, BF16, I1,
                     PartitionViewType, PtrType, TensorViewType, TileType)
from ..types.convert import encode_bits, has_encoded_bits
from .layout_types import layout_type
from .names import safe, tidy
from .writer import Writer

RUNTIME_INCLUDE = '#include "tilepy/runtime.h"'



@dataclass
class EmitContext:
    w: Writer = field(default_factory=Writer)
    names: dict[int, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    pviews: dict[int, PartitionViewType] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    smem_bytes: int = 0
    barriers: set[int] = field(default_factory=set)      # memory ops with a barrier before
    used_values: set[int] = field(default_factory=set)
    counter: int = 0
    plan: LayoutPlan = field(default_factory=lambda: LayoutPlan(128))
    staged: dict[int, tuple[str, int]] = field(default_factory=dict)   # mma operands in smem
    wg_staged: set[int] = field(default_factory=set)   # those in wgmma's layout (tp::WgOp)
    wg_lo: dict = field(default_factory=dict)   # (id(operand), role B) -> its descriptors' low word (C++)
    tma_maps: list = field(default_factory=list)   # (TmaBox, elem): the tensor-map parameters
    tma_stores: dict = field(default_factory=dict)   # id(store) -> StagedStore: staged epilogues (sm_90a)
    wg_deferred: set[int] = field(default_factory=set)   # wgmma ops leaving their group in flight
    wg_in_flight: set[int] = field(default_factory=set)  # their accumulators: reads are checked
    pipelines: dict = field(default_factory=dict)         # id(for op) -> lowering Pipeline
    skip: set[int] = field(default_factory=set)           # ops a pipeline emits elsewhere
    buffers: list[tuple[str, str, int]] = field(default_factory=list)   # (C type, name, bytes)
    buffer_bytes: int = 0
    smem_user: tuple = (0, "", None)   # (bytes, what, loc) of the largest shared-memory user
    op: Operation | None = None        # the op being emitted
    params: list[tuple[str, str]] = field(default_factory=list)
    prints: list = field(default_factory=list)    # print-op table (emit_ops.emit_print)
    undetermined: int = 0              # loads with undetermined padding so far (poison.h sites)
    poison_checks: bool = False        # the kernel has one: its stores check for poison

    def fresh(self, hint: str | None) -> str:
        base = hint or ""
        if not safe(base):      # a keyword, reserved (`_Foo`, `__x`) or emitted name (names.py)
            base = f"v{self.counter}" + (f"_{tidy(base)}" if tidy(base) else "")
            self.counter += 1
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        return name

    def nested(self) -> "EmitContext":
        """A context for C++ emitted out of line (a lambda: a combiner, a pipeline's fetch) that
        sees this one's names and facts; its own lines and names stay its own."""
        return EmitContext(names=dict(self.names), used=set(self.used), tables=self.tables,
                           counter=self.counter, plan=self.plan, used_values=self.used_values,
                           undetermined=self.undetermined)

    def define(self, v: Value, name: str | None = None) -> str:
        n = name or self.fresh(v.hint)
        self.names[id(v)] = n
        return n

    def alias(self, v: Value, other: Value):
        self.names[id(v)] = self.names[id(other)]

    def __call__(self, v: Value) -> str:
        if id(v) in self.wg_in_flight:   # an accumulator an MMA may still write (emit_wgmma.py)
            return f"tp::wgmma_read({self.names[id(v)]})"
        return self.names[id(v)]

    def need_smem(self, nbytes: int):
        """Scratch shared memory for the op being emitted (the scratch is shared by all ops)."""
        self.smem_bytes = max(self.smem_bytes, nbytes)
        op = self.op
        if op is not None:
            tile = next((v.type for v in op.operands if isinstance(v.type, TileType)), None)
            self._user(nbytes, f"the scratch of '{op.name}'" + (f" on a {tile}" if tile
                                                                  else ""), op.loc)

    def buffer(self, name: str, elem, count: int, what: str = "", loc=None, ctype: str = ""):
        """A shared-memory array of its own (pipeline stages, hoisted mma operands, mbarriers:
        `ctype` their C++ type, else elem's)."""
        nbytes = (count * elem.storage_bytes + 127) // 128 * 128
        self.buffers.append((ctype or CPP_TYPE[elem], name, nbytes))
        self.buffer_bytes += nbytes
        self._user(nbytes, what or f"the {count} x {elem} buffer {name}", loc)

    def _user(self, nbytes: int, what: str, loc):
        if nbytes > self.smem_user[0]:
            self.smem_user = (nbytes, what, loc)

    def lay(self, v: Value) -> str:
        """The C++ layout type of tile value `v` (lowering/assign_layouts.py)."""
        lay = self.plan.layout(v)
        return layout_type(lay or Cyclic(v.type.numel))

    def operand(self, v: Value) -> tuple[str, int]:
        """An mma operand: the shared-memory operand the pipeline staged it in, or the register
        tile; and whether its fragments round to tf32 (an f32 load feeding astype(tf32))."""
        staged = self.staged.get(id(v))
        return staged if staged is not None else (self(v), 0)

    def ty(self, v: Value) -> str:
        """The C++ type of value `v`: its Tile type spells its layout (Cyclic is the default)."""
        t = v.type
        lay = self.plan.layout(v) if isinstance(t, TileType) and t.numel > 1 else None
        if lay is None or isinstance(lay, Cyclic):
            return ctype(t)
        check_size(t)
        return f"tp::Tile<{elem_ctype(t)}, {t.numel}, {layout_type(lay)}>"


# ---------------------------------------------------------------------------- C++ spelling
def _cpp(e) -> str:
    return CPP_TYPE[e]


MAX_TILE_ELEMENTS = 1 << 16     # per tile; its elements live in registers (or on a CPU stack)


def check_size(t: TileType):
    if t.numel > MAX_TILE_ELEMENTS:
        raise TileUnsupportedFeatureError(
            f"a tile of {t.numel} elements ({t}) is too large for the CUDA C++ backend: at "
            f"most {MAX_TILE_ELEMENTS} elements per tile are supported (use smaller tiles)")


def ctype(t) -> str:
    """The C++ type of a value of Tile IR type `t`."""
    if isinstance(t, TileType):
        check_size(t)
        scalar = elem_ctype(t)
        return scalar if t.numel == 1 else f"tp::Tile<{scalar}, {t.numel}>"
    if isinstance(t, TensorViewType):
        return f"tp::View<{_cpp(t.elem)}, {t.rank}>"
    raise TileUnsupportedFeatureError(f"values of type {t} are not supported by the CUDA C++ backend yet")


def elem_ctype(t: TileType) -> str:
    e = t.elem
    # tp::ptr<T> is T*: `const tp::ptr<T> p` is a constant pointer to writable memory
    return f"tp::ptr<{_cpp(e.pointee)}>" if isinstance(e, PtrType) else _cpp(e)


def shape_t(shape) -> str:
    return f"tp::Shape<{', '.join(map(str, shape))}>"


def literal(elem, value) -> str:
    """A C++ expression of element type `elem` with exactly `value`."""
    c = CPP_TYPE[elem]
    if elem == I1:
        return "true" if bool(value) else "false"
    if elem.is_int:
        v = int(value)
        if v == -(1 << (elem.bits - 1)):
            return f"({c})(-{(1 << (elem.bits - 1)) - 1}LL - 1)"
        return f"({c}){v}" + ("LL" if elem.bits == 64 else "")
    f = float(value)
    if np.isnan(f):
        core = "tp::nan_f32()"
    elif np.isinf(f):
        core = "tp::inf_f32()" if f > 0 else "(-tp::inf_f32())"
    elif elem.bits == 64:
        return _shortest(np.float64(f))
    else:
        core = _shortest(np.float32(f)) + "f"
    if elem.bits == 64:
        return f"(double){core}"
    if elem in (E4M3, E5M2, E8M0, E2M1, E5M3):
        # 8-bit floats from their storage bits (values and paddings are stored as the interpreter
        # stores them: NaN and Inf paddings of e4m3 are its NaN, not a saturated conversion)
        return _float_bits(elem, np.asarray(value).astype(NUMPY_DTYPE[elem]))
    if elem in (F16, BF16):
        return f"tp::cvt<{c}>({core})"
    return core


def _float_bits(elem, x) -> str:
    """A float constant from its exact bit pattern (keeps NaN payloads)."""
    nbytes = elem.storage_bytes
    b = int(storage_bits(elem, x))
    return f"tp::from_bits<{CPP_TYPE[elem]}>((uint{8 * nbytes}_t){b}ull)"


def storage_bits(elem, x) -> np.ndarray:
    """The bit patterns of float values held in `elem`'s storage array (e2m1/e5m3 values, kept
    in float32, encoded; the others are their storage)."""
    if has_encoded_bits(elem):
        return encode_bits(x, elem)
    return np.asarray(x).view(f"u{elem.storage_bytes}")


def _shortest(x) -> str:
    """The shortest decimal that reads back as exactly x in x's own precision."""
    s = str(x)
    return s if ("." in s or "e" in s) else s + ".0"


# ---------------------------------------------------------------------------- element-wise
_PRED = {"equal": 0, "not_equal": 1, "less_than": 2, "less_than_or_equal": 3, "greater_than": 4,
         "greater_than_or_equal": 5}


# The runtime functor of an element-wise op is `tp::op::<op name><template arguments>{}`: the
# arguments are the result's C++ type for conversions (the op row's category), then, in the
# row's attribute order, each attribute spelled below; other attributes are no arguments.
_TEMPLATE_ARG = {
    "signedness": lambda op: "true" if op.attrs.get("signedness") == "signed" else "false",
    "propagate_nan": lambda op: "true" if op.attrs.get("propagate_nan") else "false",
    "rounding": lambda op: str({None: 0, "zero": 0, "negative_inf": 1,
                                "positive_inf": 2}[op.attrs.get("rounding")]),
    "comparison_predicate": lambda op: str(_PRED[op.comparison_predicate]),
    "comparison_ordering": lambda op: "true" if op.comparison_ordering == "ordered" else "false",
}
NO_FUNCTOR = {"mulhii", "int_to_ptr", "ptr_to_int", "ptr_to_ptr"}   # not in runtime.h yet


def _functor(op: Operation) -> str:
    n, rt = op.name, op.results[0].type
    if n in NO_FUNCTOR:
        raise TileUnsupportedFeatureError(f"'{n}' is not supported by the CUDA C++ backend yet")
    if n == "ftof" and str(rt.elem) == "tf32":
        return "tp::op::to_tf32{}"
    args = [elem_ctype(rt)] if op.opdef.category == "conversion" else []
    args += [_TEMPLATE_ARG[a.name](op) for a in op.opdef.attrs if a.name in _TEMPLATE_ARG]
    return f"tp::op::{n}<{', '.join(args)}>{{}}" if args else f"tp::op::{n}{{}}"


_DIRECTED = ("zero", "negative_inf", "positive_inf")     # M of directed.h's functors
# Rounding modes with a functor of their own (modifiers.h; into e8m0: fp8.h): (op, mode) -> functor.
_ROUNDED = {("divf", "approx"): "divf_approx", ("divf", "full"): "divf_full",
            ("ftof", "zero"): "to_e8m0<false>", ("ftof", "positive_inf"): "to_e8m0<true>",
            ("sqrt", "approx"): "sqrt_approx", ("tanh", "approx"): "tanh_approx",
            ("tanh", "full"): "tanh", ("exp", "approx"): "exp_approx", ("exp", "full"): "exp"}
# The directed modes (directed.h): <op>_dir<M>, M numbered as the `rounding` attribute above.
_ROUNDED.update({(n, m): f"{n}_dir<{i}>" for n in ("addf", "subf", "mulf", "divf", "fma", "sqrt")
                 for i, m in enumerate(_DIRECTED)})


def _modified(op: Operation, functor: str) -> str:
    """The functor with the op's float modifiers applied: a rounding mode's own functor, then
    flush_to_zero around it."""
    mode = op.attrs.get("rounding_mode")
    rt = op.results[0].type.elem
    if op.name == "ftof" and mode in _DIRECTED + ("nearest_away",) and str(rt) != "e8m0":
        m = (*_DIRECTED, "nearest_away").index(mode)                      # NVIDIA's 13.4
        return f"tp::op::to_tf32_dir<{m}>{{}}" if str(rt) == "tf32" else \
            f"tp::op::ftof_dir<{CPP_TYPE[rt]}, {m}>{{}}"
    if mode not in (None, "nearest_even"):
        name = _ROUNDED.get((op.name, mode))
        if name is None:
            raise TileUnsupportedFeatureError(f"{op.name} with rounding_mode={mode} is not "
                                              f"supported by the CUDA C++ backend yet")
        functor = f"tp::op::{name}{{}}"
    if op.attrs.get("flush_to_zero"):
        functor = f"tp::op::ftz<{functor[:-2]}>{{}}"
    return functor


# tf32 values live in a float: conversions from these round once (to_tf32 of the exact float
# value), conversions to them and to f64 are the float's; f64 -> tf32 would round twice
_TF32_PEERS = {"f32", "f16", "bf16"}


def emit_elementwise(ctx: EmitContext, op: Operation):
    names = {str(getattr(v.type, "elem", "")) for v in [*op.operands, op.result]}
    tf32_cvt = op.name == "ftof" and "tf32" in names and (
        names - {"tf32"} <= _TF32_PEERS or str(op.result.type.elem) == "f64" or
        op.attrs.get("rounding_mode") in _DIRECTED)        # f64 -> f32 -> tf32, one mode
    # tf32 tiles take conversions and select (cuTile's where; their arithmetic is an IR error)
    if op.name in ("ftof", "itof") and op.result.type.elem not in CPP_TYPE or \
            ("tf32" in names and not (tf32_cvt or op.name == "select")) or \
            ({"e4m3", "e5m2"} <= names):
        raise TileUnsupportedFeatureError(f"{op.name} on {' and '.join(sorted(names))} is not "
                                          f"supported by the CUDA C++ backend yet")
    args = ", ".join(ctx(v) for v in op.operands)
    r = op.result
    name = ctx.define(r)
    ctx.w.line(f"const {ctx.ty(r)} {name} = tp::ew({_modified(op, _functor(op))}, {args});",
               op.loc)


# ---------------------------------------------------------------------------- other ops
def emit_constant(ctx, op):
    t, v = op.result.type, op.value
    name = ctx.define(op.result)
    if v.is_splat:
        x = v.array[()]
        lit = _float_bits(t.elem, x) if t.elem.is_float and np.isnan(x) else literal(t.elem, x)
        init = lit if t.numel == 1 else f"tp::splat<{t.numel}, {ctx.lay(op.result)}>({lit})"
    else:
        # Float tables hold bit patterns: exact for every value (NaN payloads, f16/bf16) and a
        # constant initializer (NVRTC rejects dynamic initialization of __device__ variables).
        table = f"tp_const_{len(ctx.tables)}"
        arr = np.asarray(v.array).reshape(-1)
        if t.elem.is_float:
            nbytes = t.elem.storage_bytes
            ct = f"uint{8 * nbytes}_t"
            vals = ", ".join(f"{int(b)}ull" for b in storage_bits(t.elem, arr))
        else:
            ct = CPP_TYPE[t.elem]
            vals = ", ".join(literal(t.elem, x) for x in arr)
        ctx.tables.append(f"__device__ const {ct} {table}[{t.numel}] = {{{vals}}};")
        init = (f"tp::from_bits<{CPP_TYPE[t.elem]}>({table}[0])" if t.numel == 1
                else f"tp::from_table<{CPP_TYPE[t.elem]}, {t.numel}, {ctx.lay(op.result)}>({table})")
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = {init};", op.loc)


def emit_grid(ctx, op):
    src = "blockIdx" if op.name == "get_tile_block_id" else "gridDim"
    for r, axis in zip(op.results, "xyz"):
        if id(r) in ctx.used_values:
            ctx.w.line(f"const int32_t {ctx.define(r)} = (int32_t){src}.{axis};", op.loc)


def emit_iota(ctx, op):
    t = op.result.type
    name = ctx.define(op.result)
    init = (f"({CPP_TYPE[t.elem]})0" if t.numel == 1
            else f"tp::iota<{CPP_TYPE[t.elem]}, {t.numel}, {ctx.lay(op.result)}>()")
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = {init};", op.loc)


def emit_make_tensor_view(ctx, op):
    t = op.result.type
    dyn_shape, dyn_strides = iter(op.dynamicShape), iter(op.dynamicStrides)
    shape = ", ".join(f"(int64_t){ctx(next(dyn_shape))}" if d is None else str(d) for d in t.shape)
    strides = ", ".join(f"(int64_t){ctx(next(dyn_strides))}" if s is None else str(s)
                        for s in t.strides)
    name = ctx.define(op.result)
    ctx.w.line(f"const {ctype(t)} {name}{{{ctx(op.base)}, {{{shape}}}, {{{strides}}}}};", op.loc)


def emit_make_partition_view(ctx, op):
    ctx.alias(op.result, op.tensor_view)
    ctx.pviews[id(op.result)] = op.result.type


_PAD = {None: 0.0, "zero": 0.0, "neg_zero": -0.0, "nan": float("nan"), "pos_inf": float("inf"),
        "neg_inf": float("-inf")}


def _view_args(ctx, op, swap: bool = False):
    """(shape and dim-map template arguments, view, index) of a view access; `swap`: of the
    tile with its last two dimensions transposed (the same memory, read as that tile)."""
    pv: PartitionViewType = op.view.type
    order = list(range(len(pv.tile_shape)))
    if swap:
        order[-2:] = order[-1], order[-2]
    dm = ", ".join(str(pv.effective_dim_map[i]) for i in order)
    idx = ", ".join(f"(int64_t){ctx(op.index[i])}" for i in order)
    return (f"{shape_t([pv.tile_shape[i] for i in order])}, tp::DimMap<{dm}>", ctx(op.view),
            idx)


_ORDER = {"relaxed": 0, "acquire": 1, "release": 2, "acq_rel": 3}
_SCOPE = {"tl_blk": 0, "device": 1, "sys": 2}


def ordering(op) -> tuple[int, int] | None:
    """(order, scope) of a load or store ordered other than weak (ordered.h's numbers: the
    scope device where the op names none), else None."""
    o = op.attrs.get("memory_ordering_semantics")
    return None if o == "weak" else (_ORDER[o], _SCOPE.get(op.attrs.get("memory_scope"), 1))


def pad_value(ctx, load) -> str:
    """The padding of a load_view: its padding value, or for an undetermined one (cuTile's
    default) `tp::undetermined(0, site)`: 0 on a GPU and in the fast CPU mode, a poison in the
    faithful mode, which a store of it reports naming the load (poison.h)."""
    elem = load.tile.type.elem
    padding = load.view.type.padding_value
    if padding is not None:
        return literal(elem, _PAD[padding])
    ctx.undetermined += 1
    return f"tp::undetermined({literal(elem, 0)}, {ctx.undetermined})"


def has_undetermined_load(module) -> bool:
    return any(op.name == "load_view_tko" and op.view.type.padding_value is None
               for op in module.walk())


def emit_load_view(ctx, op):
    targs, view, idx = _view_args(ctx, op)
    t = op.tile.type
    pad = pad_value(ctx, op)
    barrier(ctx, op)
    order = ordering(op)
    if order is not None:        # relaxed / acquire (ordered.h)
        o = f"{order[0]}, {order[1]}"
        fn = f"load_scalar_ordered<{targs}, {o}>" if t.numel == 1 else \
            f"load_ordered<{targs}, {ctx.lay(op.tile)}, {o}>"
    elif t.numel == 1:
        fn = f"load_scalar<{targs}>"
    else:
        fn = f"load<{targs}, {ctx.lay(op.tile)}, {_vec(op.view, t)}>"
    name = ctx.define(op.tile)
    ctx.w.line(f"const {ctx.ty(op.tile)} {name} = tp::{fn}({view}, {{{idx}}}, {pad});", op.loc)


def emit_store_view(ctx, op):
    barrier(ctx, op)
    targs, view, idx = _view_args(ctx, op)
    t = op.tile.type
    order = ordering(op)
    if order is not None:        # relaxed / release (ordered.h)
        o = f"{order[0]}, {order[1]}"
        fn = f"store_scalar_ordered<{targs}, {o}>" if t.numel == 1 else f"store_ordered<{targs}, {o}>"
    else:
        fn = f"store_scalar<{targs}>" if t.numel == 1 else f"store<{targs}, {_vec(op.view, t)}>"
    ctx.w.line(f"tp::{fn}({view}, {{{idx}}}, {ctx(op.tile)});", op.loc)
    if ctx.poison_checks:     # faithful mode: stored poison is an error; elsewhere nothing
        ctx.w.line(f"tp::check_stored<{targs}>({view}, {{{idx}}}, {ctx(op.tile)});", op.loc)


def barrier(ctx, op):
    """A barrier before a memory op that may touch what other threads touched (hazards.py)."""
    if id(op) in ctx.barriers:
        ctx.w.line("__syncthreads();  // other threads' earlier accesses to this memory are done",
                   op.loc)


def _vec(view, t: TileType) -> str:
    """Whether vector accesses along the tile's last dimension are proven aligned."""
    return "true" if t.rank and contiguous_along(view, t.rank - 1) else "false"


def emit_reshape(ctx, op):
    ctx.alias(op.result, op.source)     # row-major linear order is the layout: nothing moves


def emit_broadcast(ctx, op):
    s, t = op.source.type, op.result.type
    name = ctx.define(op.result)
    if t.numel == 1:
        init = ctx(op.source)
    elif s.numel == 1:
        init = f"tp::splat<{t.numel}, {ctx.lay(op.result)}>({ctx(op.source)})"
    elif column_iota(op):       # each slot's own column index (lowering/sink_broadcast.py)
        init = (f"tp::iota_cols<{CPP_TYPE[t.elem]}, {t.numel}, {s.shape[-1]}, "
                f"{ctx.lay(op.result)}>()")
    else:
        if not broadcast_in_registers(ctx.plan.layout(op.source), ctx.plan.layout(op.result),
                                      s.shape, t.shape):
            ctx.need_smem(s.numel * _bytes(s))
        init = (f"tp::broadcast_to<{shape_t(s.shape)}, {shape_t(t.shape)}, {ctx.lay(op.result)}>("
                f"{ctx(op.source)}, tp_smem)")
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = {init};", op.loc)


def emit_permute(ctx, op):
    s, t = op.source.type, op.result.type
    if s.numel == 1:
        ctx.alias(op.result, op.source)
        return
    ctx.need_smem(s.numel * _bytes(s))
    name = ctx.define(op.result)
    perm = ", ".join(map(str, op.permutation))
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::permute<{shape_t(s.shape)}, tp::DimMap<{perm}>, "
               f"{shape_t(t.shape)}, {ctx.lay(op.result)}>({ctx(op.source)}, tp_smem);", op.loc)


def emit_pack(ctx, op):
    """pack/unpack: the source's bytes, through shared memory, read as the result (tp::repack)."""
    s, t = op.source.type, op.result.type
    if s.numel > 1:
        ctx.need_smem(s.numel * _bytes(s))
    name = ctx.define(op.result)
    lay = ctx.lay(op.result) if t.numel > 1 else "tp::Cyclic<1>"
    ctx.w.line(f"const {ctx.ty(op.result)} {name} = tp::repack<{CPP_TYPE[t.elem]}, {t.numel}, "
               f"{lay}>({ctx(op.source)}, tp_smem);", op.loc)


def _bytes(t: TileType) -> int:
    return 8 if isinstance(t.elem, PtrType) else t.elem.storage_bytes


def emit_reduce(ctx, op):
    """A reduce of one tile (emit_ops.py registers `reduce`, with the two-tile case)."""
    src, res = op.operands[0], op.results[0]
    s = src.type
    ident = literal(s.elem, fold_identities(op)[0])
    lam = _lambda(ctx, op.body.block)
    name = ctx.define(res)
    if s.numel == 1:
        init = f"({lam})({ctx(src)}, {ident})"
    else:
        ctx.need_smem(_reduce_smem(ctx, op))
        lr = ctx.lay(res) if res.type.numel > 1 else "tp::Cyclic<1>"
        comm = "true" if commutative(op) else "false"
        init = (f"tp::reduce_to<{shape_t(s.shape)}, {op.dim}, {lr}, {comm}>({ctx(src)}, {ident}, "
                f"tp_smem, {lam})")
    ctx.w.line(f"const {ctx.ty(res)} {name} = {init};", op.loc)


def _reduce_smem(ctx, op) -> int:
    """Scratch bytes of the path tp::reduce_to takes (layout_ops.h)."""
    src, res = op.operands[0], op.results[0]
    s, nbytes = src.type, _bytes(src.type)
    ls, lr = ctx.plan.layout(src), ctx.plan.layout(res)
    if commutative(op):
        if res.type.numel == 1:
            return ctx.plan.nt // 32 * nbytes
        if rows_path(ls, lr, s.shape, op.dim):
            return ls.warps_n * lr.numel * nbytes if isinstance(ls, MmaAcc) and ls.warps_n > 1 else 0
    return fold_scratch(s.numel, [nbytes])


FOLD_SCRATCH = 16384     # runtime.h kFoldScratch


def fold_scratch(numel: int, sizes: list[int]) -> int:
    """Scratch bytes of runtime.h's fold_tiles over tiles of `numel` elements of these sizes:
    one chunk buffer per tile (fold_chunk elements each, 16-byte aligned), about FOLD_SCRATCH
    at most whatever the tiles' size."""
    per = sum(sizes)
    chunk = numel if numel * per <= FOLD_SCRATCH else FOLD_SCRATCH // per
    return sum((chunk * z + 15) // 16 * 16 for z in sizes)


def _lambda(ctx, block) -> str:
    """A region of 0-d ops as a C++ lambda (the combiner of reduce/scan): f(element,
    accumulator); a region of several tiles' elements takes and returns tp::Tup values
    (runtime.h fold_tiles): f(Tup elements, Tup accumulators) -> Tup."""
    inner = ctx.nested()
    names = [inner.define(a, inner.fresh(a.hint or 'a')) for a in block.args]
    types = [elem_ctype(a.type) for a in block.args]
    if len(block.args) == 2:
        params = f"{types[0]} {names[0]}, {types[1]} {names[1]}"
        ret = types[0]
    else:
        tup = f"tp::Tup<{', '.join(types[::2])}>"
        params, ret = f"const {tup}& tp_x, const {tup}& tp_acc", tup
        for i, (t, n) in enumerate(zip(types, names)):
            inner.w.line(f"const {t} {n} = tp::tget<{i // 2}>({'tp_acc' if i % 2 else 'tp_x'});")
    for o in block.ops:
        emit_op(inner, o)
    ctx.counter = inner.counter
    body = " ".join(text for _, text, _ in inner.w.lines)
    return f"[&]({params}) -> {ret} {{ {body} }}"


def emit_yield_in_lambda(ctx, op):
    vals = [ctx(v) for v in op.operands]
    types = ", ".join(elem_ctype(v.type) for v in op.operands)
    ctx.w.line(f"return {vals[0]};" if len(vals) == 1 else
               f"return tp::tup<{types}>({', '.join(vals)});")


# ---------------------------------------------------------------------------- control flow
EMIT = {
    "constant": emit_constant, "get_tile_block_id": emit_grid, "get_num_tile_blocks": emit_grid,
    "iota": emit_iota, "make_tensor_view": emit_make_tensor_view,
    "make_partition_view": emit_make_partition_view, "load_view_tko": emit_load_view,
    "store_view_tko": emit_store_view, "reshape": emit_reshape, "broadcast": emit_broadcast,
    "permute": emit_permute, "pack": emit_pack, "unpack": emit_pack,
}
def emit_op(ctx: EmitContext, op: Operation):
    if id(op) in ctx.skip:
        return
    with at(op.loc), internal_errors(f"emitting C++ for '{op.name}'"):
        outer, ctx.op = ctx.op, op
        fn = EMIT.get(op.name)
        if fn is None and op.opdef.elementwise:
            fn = emit_elementwise
        if fn is None:
            raise TileUnsupportedFeatureError(f"'{op.name}' is not supported by the CUDA C++ "
                                              f"backend yet")
        try:
            fn(ctx, op)
        finally:
            ctx.op = outer
