"""Element-space memory access: gather, scatter and the atomics, through tiles of pointers.

`indices` is one integer tile (or scalar) per array dimension; they broadcast together (with the
mask and the value) to the shape of the access. The element pointers are the array's base
pointer `offset` by sum(index_d * stride_d). With `check_bounds`, elements whose index is outside
the array (negative or past the extent) are masked off: a gather gives them `padding_value`, a
scatter and an atomic skip them. Accesses are ordered on the memory token like loads and stores.
"""
from __future__ import annotations

from ...errors import TileTypeError
from ...types import dtype as D
from .. import api
from ..promotion import can_cast_implicitly
from ..values import Array, RawArrayMemory, Tile, type_name
from .registry import impl
from .semantics import (as_tile, broadcast, broadcast_shapes, broadcasts_to, constant, convert,
                        emit)


def _array(x, fn: str) -> Array:
    if not isinstance(x, Array):
        raise TileTypeError(f"{fn}() expects an array argument of the kernel (got {type_name(x)})")
    return x


def _indices(ctx, a: Array, indices, fn: str) -> list[Tile]:
    idx = indices if isinstance(indices, tuple) else (indices,)
    if len(idx) != a.ndim:
        raise TileTypeError(f"{fn}(): {len(idx)} index tile(s) given for an array of rank {a.ndim} "
                            f"(one integer tile per dimension)")
    out = []
    for i in idx:
        t = as_tile(ctx, i, D.int32)
        if not (t.dtype.is_int or t.dtype.is_bool):
            raise TileTypeError(f"{fn}(): indices must be integer tiles (got {t})")
        out.append(t)
    return out


def _mask(ctx, mask, fn: str) -> Tile | None:
    if mask is None:
        return None
    m = as_tile(ctx, mask)
    if not m.dtype.is_bool:
        raise TileTypeError(f"{fn}(): mask must be a boolean tile (got {m})")
    return m


def _mask_fits(ctx, m: Tile | None, shape) -> None:
    """cuTile's rule: a mask broadcasts to the elements' shape, it does not widen it."""
    if m is not None and not broadcasts_to(m.shape, shape):
        with ctx.arg("mask"):
            raise TileTypeError(f"Custom mask shape {m.shape} is not broadcastable to the index "
                                f"shape {tuple(shape)}")


def _value(ctx, a: Array, value, fn: str, what: str, exact: bool = False) -> Tile:
    """`value` as a tile of the array's dtype (implicit casts only where they lose nothing;
    none for the update of a bitwise atomic, `exact`)."""
    t = as_tile(ctx, value, a.dtype)
    if t.dtype != a.dtype:
        if exact:
            raise TileTypeError(f"{fn}(): Bitwise atomic read-modify-write operations require the "
                                f"update dtype ({t.dtype}) to exactly match the target dtype "
                                f"({a.dtype}); use .astype({a.dtype})")
        if not can_cast_implicitly(t.dtype, a.dtype):
            raise TileTypeError(f"{fn}(): cannot implicitly cast the {what}'s dtype "
                                f"{t.dtype.name} to the array's dtype {a.dtype.name}; use "
                                f".astype(tilepy.{a.dtype.name})")
        t = convert(ctx, t, a.dtype)
    return t


def _as_index(ctx, a: Array, v, dt) -> Tile:
    """An extent or stride of `a` (IR value or static int) as a scalar of dtype `dt`."""
    if isinstance(v, int):
        return constant(ctx, v, dt)
    return convert(ctx, a.index(v), dt)


def element_pointers(ctx, a: Array, idx: list[Tile], shape, check_bounds: bool, mask: Tile | None):
    """(pointer tile, mask or None) for elements `idx` (broadcast to `shape`) of `a`."""
    wide = a.ndim > 1 or a.index_dtype.bits == 64 or any(t.dtype.bits == 64 for t in idx)
    dt = D.int64 if wide else D.int32
    idx = [broadcast(ctx, convert(ctx, t, dt), shape) for t in idx]
    m = broadcast(ctx, mask, shape) if mask is not None else None
    if check_bounds:
        zero = broadcast(ctx, constant(ctx, 0, dt), shape)
        for t, ext in zip(idx, a.shape):
            e = broadcast(ctx, _as_index(ctx, a, ext, dt), shape)
            ok = emit(ctx, "andi",
                      emit(ctx, "cmpi", t, zero, dtype=D.bool_, comparison_predicate=
                           "greater_than_or_equal", signedness="signed"),
                      emit(ctx, "cmpi", t, e, dtype=D.bool_, comparison_predicate="less_than",
                           signedness="signed"), dtype=D.bool_)
            m = ok if m is None else emit(ctx, "andi", m, ok, dtype=D.bool_)
    off = None
    for t, stride in zip(idx, a.strides):
        term = t if isinstance(stride, int) and stride == 1 else \
            emit(ctx, "muli", t, broadcast(ctx, _as_index(ctx, a, stride, dt), shape), dtype=dt)
        off = term if off is None else emit(ctx, "addi", off, term, dtype=dt)
    if off is None:        # a 0-d array, indexed with (): its one element
        off = broadcast(ctx, constant(ctx, 0, dt), shape)
    return _pointers(ctx, a, off, m, shape), m


def _pointers(ctx, a: Array, off: Tile, m: Tile | None, shape):
    """The pointer tile `a`'s base + `off` (elements; masked-off ones point at the base: never
    an invalid address)."""
    if m is not None:
        off = emit(ctx, "select", m, off, broadcast(ctx, constant(ctx, 0, off.dtype), shape),
                   dtype=off.dtype)
    ptrs = broadcast(ctx, Tile(a.base, a.dtype), shape)     # (the dtype is unused here)
    return ctx.b.value("offset", ptrs.value, off.value)


@impl(api.gather)
def gather(ctx, array, indices, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    a = _array(array, "gather")
    with ctx.arg("indices"):
        idx = _indices(ctx, a, indices, "gather")
    with ctx.arg("mask"):
        m = _mask(ctx, mask, "gather")
    shape = broadcast_shapes(*(t.shape for t in idx))
    _mask_fits(ctx, m, shape)
    ptrs, m = element_pointers(ctx, a, idx, shape, bool(check_bounds), m)
    pad = None
    if m is not None:
        with ctx.arg("padding_value"):
            if isinstance(padding_value, Tile):
                pad = broadcast(ctx, _value(ctx, a, padding_value, "gather", "padding value"), shape)
            else:
                pad = broadcast(ctx, constant(ctx, padding_value, a.dtype), shape)
    op = ctx.b.create("load_ptr_tko", ptrs, m.value if m is not None else None,
                      pad.value if pad is not None else None, ctx.token,
                      memory_ordering_semantics="weak")
    ctx.token = op.results[1]
    return Tile(op.results[0], a.dtype)


@impl(api.scatter)
def scatter(ctx, array, indices, value, *, mask=None, check_bounds=True, latency=None):
    a = _array(array, "scatter")
    with ctx.arg("indices"):
        idx = _indices(ctx, a, indices, "scatter")
    with ctx.arg("mask"):
        m = _mask(ctx, mask, "scatter")
    with ctx.arg("value"):
        v = _value(ctx, a, value, "scatter", "value")
    shape = broadcast_shapes(*(t.shape for t in idx), v.shape)
    _mask_fits(ctx, m, shape)
    ptrs, m = element_pointers(ctx, a, idx, shape, bool(check_bounds), m)
    v = broadcast(ctx, v, shape)
    op = ctx.b.create("store_ptr_tko", ptrs, v.value, m.value if m is not None else None,
                      ctx.token, memory_ordering_semantics="weak")
    ctx.token = op.results[0]
    return None


# ------------------------------------------------------------------------------ atomics
# builtin -> (mode for signed ints, mode for unsigned ints, mode for floats); None: not allowed.
ATOMIC_MODES = {
    api.atomic_add: ("add", "add", "addf"), api.atomic_and: ("and", "and", None),
    api.atomic_or: ("or", "or", None), api.atomic_xor: ("xor", "xor", None),
    api.atomic_max: ("max", "umax", None), api.atomic_min: ("min", "umin", None),
    api.atomic_xchg: ("xchg", "xchg", "xchg"),
}
BITWISE = ("and", "or", "xor")     # their update has the target's dtype exactly (no cast)
# Element types Tile IR atomics take (spec 8.10): 32/64-bit ints; addf also f16 and (dialect
# 13.3, sm_90 on) bf16; xchg/cas f32/f64.
FLOAT_TYPES = {"addf": (D.float16, D.bfloat16, D.float32, D.float64),
               "xchg": (D.float32, D.float64)}


def _atomic_attrs(memory_order, memory_scope, fn):
    """The ordering attributes of an atomic (cuTile's rules and words: `tile_atomic_cas` or
    `tile_atomic_rmw` is the operation)."""
    opcode = "tile_atomic_cas" if fn.startswith("atomic_cas") else "tile_atomic_rmw"
    orders = [o for o in api.MemoryOrder if o != api.MemoryOrder.WEAK]
    if memory_order not in orders:
        raise TileTypeError(f"{fn}(): Invalid memory order for {opcode}. Got {memory_order}, "
                            f"expected one of {', '.join(map(str, orders))}")
    if not isinstance(memory_scope, api.MemoryScope):
        raise TileTypeError(f"{fn}(): Invalid memory scope for {opcode}. Got {memory_scope}, "
                            f"expected one of {', '.join(map(str, api.MemoryScope))}")
    if memory_scope == api.MemoryScope.NONE:
        raise TileTypeError(f"{fn}(): {opcode} with {memory_order.name} memory ordering requires "
                            f"a memory scope (BLOCK, DEVICE or SYS)")
    return {"memory_ordering_semantics": memory_order.value, "memory_scope": memory_scope.value}


def _atomic_access(ctx, fn, array, indices, values, check_bounds, exact=False):
    a = _array(array, fn)
    with ctx.arg("indices"):
        idx = _indices(ctx, a, indices, fn)
    vals = []
    for name, v in values:
        with ctx.arg(name):
            vals.append(_value(ctx, a, v, fn, name, exact))
    shape = broadcast_shapes(*(t.shape for t in idx), *(v.shape for v in vals))
    ptrs, m = element_pointers(ctx, a, idx, shape, bool(check_bounds), None)
    return a, ptrs, m, [broadcast(ctx, v, shape) for v in vals]


def _make_atomic(stub, modes):
    fn = stub.__name__

    def atomic(ctx, array, indices, update, *, check_bounds=True, memory_order, memory_scope):
        attrs = _atomic_attrs(memory_order, memory_scope, fn)
        _rmw_mode(fn, _array(array, fn).dtype, modes)      # the array's dtype first, as cuTile
        a, ptrs, m, (v,) = _atomic_access(ctx, fn, array, indices, [("update", update)],
                                          check_bounds, exact=modes[0] in BITWISE)
        return _rmw(ctx, fn, a.dtype, modes, ptrs, v, m, attrs)
    return atomic


def _rmw_mode(fn, d, modes):
    """The atomic_rmw mode of `modes` for elements of dtype `d` (cuTile's "Unsupported array
    dtype" when it has none)."""
    mode = modes[2] if d.is_float else modes[0] if d.signed else modes[1]
    ok = d in FLOAT_TYPES.get(mode, ()) if d.is_float else (d.is_int and d.bits in (32, 64))
    if mode is None or not ok:
        raise TileTypeError(f"{fn}(): Unsupported array dtype: {d.name} (Tile IR atomics take "
                            f"32- and 64-bit integers{', and floats for add/xchg' if modes[2] else ''})")
    return mode


def _rmw(ctx, fn, d, modes, ptrs, v: Tile, m: Tile | None, attrs) -> Tile:
    """An atomic read-modify-write of `modes` on elements of dtype `d` at `ptrs`."""
    mode = _rmw_mode(fn, d, modes)
    op = ctx.b.create("atomic_rmw_tko", ptrs, v.value, m.value if m is not None else None,
                      ctx.token, mode=mode, **attrs)
    ctx.token = op.results[1]
    return Tile(op.results[0], d)


for _stub, _modes in ATOMIC_MODES.items():
    impl(_stub)(_make_atomic(_stub, _modes))


@impl(api.atomic_cas)
def atomic_cas(ctx, array, indices, expected, desired, *, check_bounds=True, memory_order,
               memory_scope):
    attrs = _atomic_attrs(memory_order, memory_scope, "atomic_cas")
    a, ptrs, m, (e, d) = _atomic_access(ctx, "atomic_cas", array, indices,
                                        [("expected", expected), ("desired", desired)], check_bounds)
    return _cas(ctx, "atomic_cas", a.dtype, ptrs, e, d, m, attrs)


def _cas(ctx, fn, dtype, ptrs, e: Tile, d: Tile, m: Tile | None, attrs) -> Tile:
    if dtype.bits not in (32, 64) or dtype.is_bool:
        raise TileTypeError(f"{fn}() is not supported on {dtype.name} arrays (Tile IR takes 32- "
                            f"and 64-bit ints and floats)")
    op = ctx.b.create("atomic_cas_tko", ptrs, e.value, d.value, m.value if m is not None else None,
                      ctx.token, **attrs)
    ctx.token = op.results[1]
    return Tile(op.results[0], dtype)



# ------------------------------------------------------------------- raw array memory
@impl(api._array_get_raw_memory)
def get_raw_memory(ctx, array):
    return RawArrayMemory(_array(array, "get_raw_memory"))


def _raw(mem, fn: str) -> Array:
    if not isinstance(mem, RawArrayMemory):
        raise TileTypeError(f"{fn}() is a method of array.get_raw_memory() (got {type_name(mem)})")
    return mem.array


def _fit(ctx, t: Tile, shape, fn: str, what: str) -> Tile:
    """`t` broadcast to the offset's shape (never the other way)."""
    if not broadcasts_to(t.shape, shape):
        raise TileTypeError(f"{fn}(): the {what}'s shape {t.shape} is not broadcastable to the "
                            f"offset's shape {tuple(shape)}")
    return broadcast(ctx, t, shape)


def _raw_access(ctx, fn, mem, offset, mask):
    """(array, pointers, mask or None, shape) of `mem` at element offsets `offset`."""
    a = _raw(mem, fn)
    with ctx.arg("offset"):
        off = as_tile(ctx, offset, D.int32)
        if not off.dtype.is_int:
            raise TileTypeError(f"{fn}(): offset must be an integer scalar or tile (got {off})")
    shape = off.shape
    with ctx.arg("mask"):
        m = _mask(ctx, mask, fn)
        m = _fit(ctx, m, shape, fn, "mask") if m is not None else None
    return a, _pointers(ctx, a, off, m, shape), m, shape


@impl(api._raw_load_offset)
def load_offset(ctx, memory, offset, *, mask=None, padding_value=0, latency=None):
    a, ptrs, m, shape = _raw_access(ctx, "load_offset", memory, offset, mask)
    pad = None
    if m is not None:
        with ctx.arg("padding_value"):
            pad = _fit(ctx, _value(ctx, a, padding_value, "load_offset", "padding value"), shape,
                       "load_offset", "padding value")
    op = ctx.b.create("load_ptr_tko", ptrs, m.value if m is not None else None,
                      pad.value if pad is not None else None, ctx.token,
                      memory_ordering_semantics="weak")
    ctx.token = op.results[1]
    return Tile(op.results[0], a.dtype)


@impl(api._raw_store_offset)
def store_offset(ctx, memory, offset, value, *, mask=None, latency=None):
    a, ptrs, m, shape = _raw_access(ctx, "store_offset", memory, offset, mask)
    with ctx.arg("value"):
        v = _fit(ctx, _value(ctx, a, value, "store_offset", "value"), shape, "store_offset",
                 "value")
    op = ctx.b.create("store_ptr_tko", ptrs, v.value, m.value if m is not None else None,
                      ctx.token, memory_ordering_semantics="weak")
    ctx.token = op.results[0]
    return None


def _make_raw_atomic(stub, modes):
    fn = stub.__name__[len("_raw_"):]

    def atomic(ctx, memory, offset, update, *, mask=None, memory_order, memory_scope):
        attrs = _atomic_attrs(memory_order, memory_scope, fn)
        a, ptrs, m, shape = _raw_access(ctx, fn, memory, offset, mask)
        _rmw_mode(fn, a.dtype, modes)
        with ctx.arg("update"):
            v = _fit(ctx, _value(ctx, a, update, fn, "update", modes[0] in BITWISE), shape, fn,
                     "update")
        return _rmw(ctx, fn, a.dtype, modes, ptrs, v, m, attrs)
    return atomic


for _name, _modes in (("add", ATOMIC_MODES[api.atomic_add]), ("and", ATOMIC_MODES[api.atomic_and]),
                      ("or", ATOMIC_MODES[api.atomic_or]), ("xor", ATOMIC_MODES[api.atomic_xor]),
                      ("max", ATOMIC_MODES[api.atomic_max]), ("min", ATOMIC_MODES[api.atomic_min]),
                      ("xchg", ATOMIC_MODES[api.atomic_xchg])):
    _raw_stub = getattr(api, f"_raw_atomic_{_name}_offset")
    impl(_raw_stub)(_make_raw_atomic(_raw_stub, _modes))


@impl(api._raw_atomic_cas_offset)
def atomic_cas_offset(ctx, memory, offset, expected, desired, *, mask=None, memory_order,
                      memory_scope):
    attrs = _atomic_attrs(memory_order, memory_scope, "atomic_cas_offset")
    a, ptrs, m, shape = _raw_access(ctx, "atomic_cas_offset", memory, offset, mask)
    vals = []
    for name, v in (("expected", expected), ("desired", desired)):
        with ctx.arg(name):
            vals.append(_fit(ctx, _value(ctx, a, v, "atomic_cas_offset", name), shape,
                             "atomic_cas_offset", name))
    old = _cas(ctx, "atomic_cas_offset", a.dtype, ptrs, *vals, m, attrs)
    if m is None:
        return old
    return emit(ctx, "select", m, old, vals[0], dtype=a.dtype)   # masked off: `expected`
