"""The kernel language's public names: stubs with cuTile's signatures and meaning.

Each stub documents one builtin (see stubs.py for how stubs work); the element-wise ones are in
api_elementwise.py and re-exported here, so `tilepy.<name>` is the whole language.
"""
from __future__ import annotations

import dataclasses
import enum
import re
import typing

from ..errors import TileOptionError
from .stubs import stub


_stub = stub


# ------------------------------------------------------------------------------------ enums
class PaddingMode(enum.Enum):
    """Value of out-of-bounds elements of a partially out-of-bounds loaded tile."""
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class RoundingMode(enum.Enum):
    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


class MemoryOrder(enum.Enum):
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    NONE = None
    BLOCK = "tl_blk"
    DEVICE = "device"
    SYS = "sys"


class ConstantAnnotation:
    """Marks a kernel parameter as a compile-time constant (one specialization per value)."""

    def __repr__(self):
        return "ConstantAnnotation()"


@dataclasses.dataclass(frozen=True)
class ScalarAnnotation:
    """`typing.Annotated` metadata: the dtype of an integer scalar parameter, int32 (what a
    Python int is by default) or int64."""
    dtype: typing.Any

    def __post_init__(self):
        from ..types import dtype as D
        if self.dtype not in (D.int32, D.int64):
            raise ValueError(f"`dtype` must be int32 or int64, got {self.dtype}")


def _dims_tuple(value, field: str):
    if not isinstance(value, tuple):
        raise TypeError(f"`{field}` must be a tuple of integers")
    for i, d in enumerate(value):
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"Element #{i} of `{field}` must be int, got {d}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ArrayAnnotation:
    """`typing.Annotated` metadata of an array parameter (cuTile's): `index_dtype` (int32, or
    int64 for shapes/strides past 2^31), `static_shape_dims` / `static_stride_dims` (dimensions
    whose extent / stride is a compile-time constant; negative counts from the last): the
    kernel is specialized on their values (`x.shape[0]`, `x.strides[1]` are ints in it, for
    `static_assert` and tile shapes; a list's arrays must agree on them; with static strides
    the others are not specialized as unit or by divisibility under 16 bytes), and KernelSignature
    reports them as `shape_constant` / `stride_constant`. With int64 the extents and strides are
    int64 kernel parameters and scalars (`IndexedWithInt64`)."""
    index_dtype: typing.Any = None
    static_shape_dims: tuple = ()
    static_stride_dims: tuple = ()

    def __post_init__(self):
        from ..types import dtype as D
        if self.index_dtype is None:
            object.__setattr__(self, "index_dtype", D.int32)
        if self.index_dtype not in (D.int32, D.int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {self.index_dtype}")
        _dims_tuple(self.static_shape_dims, "static_shape_dims")
        _dims_tuple(self.static_stride_dims, "static_stride_dims")


@dataclasses.dataclass(frozen=True)
class ListAnnotation:
    """`typing.Annotated` metadata of a list-of-arrays parameter: `element` is the elements'
    ArrayAnnotation (or an `Annotated` type holding exactly one)."""
    element: typing.Any

    def __post_init__(self):
        element = self.element
        if typing.get_origin(element) is typing.Annotated:
            found = [m for m in element.__metadata__ if isinstance(m, ArrayAnnotation)]
            if len(found) != 1:
                raise TypeError(f"`element` must contain exactly one ArrayAnnotation, found "
                                f"{len(found)} in {element!r}")
            element = found[0]
            object.__setattr__(self, "element", element)
        if not isinstance(element, ArrayAnnotation):
            raise TypeError(f"`element` must be an ArrayAnnotation, got {type(element).__name__}")


_T = typing.TypeVar("_T")


def _scalar_int64():
    from ..types import dtype as D
    return typing.Annotated[_T, ScalarAnnotation(D.int64)]


ScalarInt64 = _scalar_int64()


def _indexed_with_int64():
    from ..types import dtype as D
    return typing.Annotated[_T, ArrayAnnotation(index_dtype=D.int64)]


# An array parameter whose extents and strides are int64 (arrays past 2^31 - 1 elements in a
# dimension, or strides past it): `array.shape[i]` is an int64 scalar, load/store indices are
# widened to int64; without it such an array is an OverflowError at the launch.
IndexedWithInt64 = _indexed_with_int64()
"""`x: tilepy.ScalarInt64`: an integer parameter passed as int64 (Python ints are int32 by
default, and one past that range is refused)."""


class _ConstantMeta(type):
    def __getitem__(cls, item):
        return typing.Annotated[item, ConstantAnnotation()]


class Constant(metaclass=_ConstantMeta):
    """`x: tilepy.Constant[int]` makes `x` a compile-time constant of the kernel."""


# ------------------------------------------------------------------------- grid and indexing
@_stub
def bid(axis):
    """Index of the current tile block along `axis` (0, 1 or 2): an int32 scalar."""


@_stub
def num_blocks(axis):
    """Number of tile blocks of the grid along `axis`: an int32 scalar."""


@_stub
def num_tiles(array, /, axis, shape, order="C"):
    """Number of tiles of `shape` along `axis` of `array`'s tile space: cdiv(array.shape[..], shape[axis])."""


def _cdiv_host(x, y, /):
    return -((-x) // y)


@_stub(host=_cdiv_host)
def cdiv(x, y, /):
    """Ceiling division of integers (also usable on the host)."""


# ----------------------------------------------------------------------------------- memory
@_stub
def load(array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
         check_bounds=True, latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK,
         memory_scope=MemoryScope.NONE):
    """Load the tile of `shape` at tile-space `index` of `array`; out-of-bounds elements of a
    partial tile take `padding_mode`'s value."""


@_stub
def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE):
    """Store `tile` at tile-space `index` of `array`; out-of-bounds elements are not written."""


@_stub
def Slice(start, length):
    """The elements [start, start + length) of one array dimension, for
    `load_advanced_indexing`/`store_advanced_indexing` (`length`: a power-of-two constant)."""


@_stub
def load_advanced_indexing(array, indices, /, *, padding_mode=PaddingMode.UNDETERMINED,
                           latency=None, allow_tma=None):
    """Load rows picked along one dimension: `indices` has one entry per array dimension, one
    a 1-d integer tile of element indices (the sparse dimension), the others `Slice`s. The tile
    has the index tile's length there and each Slice's length elsewhere; elements outside the
    array take `padding_mode`'s value (Tile IR's gather_scatter_view)."""


@_stub
def store_advanced_indexing(array, indices, tile, /, *, latency=None, allow_tma=None):
    """Store `tile` to the rows picked along one dimension (see load_advanced_indexing);
    elements outside the array are not written."""


@_stub
def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """Load elements at element-space `indices` (one int tile per array dim)."""


@_stub
def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """Store `value` at element-space `indices`."""


# -------------------------------------------------------------------------------- factories
@_stub
def full(shape, fill_value, dtype):
    """A tile of `shape` filled with `fill_value`."""


@_stub
def zeros(shape, dtype):
    """A tile of `shape` filled with 0."""


@_stub
def ones(shape, dtype):
    """A tile of `shape` filled with 1."""


@_stub
def arange(size, /, *, dtype, start=0, step=1):
    """The 1-d tile [start, start + step, ..., start + (size - 1) * step]."""


@_stub
def astile(value, /, *, dtype=None):
    """A tile from a scalar or a nested tuple of scalars (numbers or 0-d tiles, run-time ones
    included): each tuple's length a power of 2, the same shape under every item."""


# ------------------------------------------------------------------------- shape and dtype
@_stub
def astype(x, dtype, /, *, rounding_mode=None):
    """Convert `x` to `dtype` (numeric value conversion)."""


@_stub
def bitcast(x, /, dtype):
    """Reinterpret the bits of `x` as `dtype` (same bit width)."""


@_stub
def pack_to_bytes(x, /):
    """The bytes of `x` (flattened in row-major order) as a 1D uint8 tile of
    `x.size * bits // 8` elements; the total number of bits must be a multiple of 8. Elements
    narrower than a byte (float4_e2m1fn) share a byte, the first in its low bits."""


@_stub
def unpack_from_bytes(x, /, dtype):
    """The inverse of pack_to_bytes: a 1D uint8 tile read as a 1D tile of `dtype`
    (`x.size * 8 // bits` elements; the number of bits must be a multiple of `dtype`'s)."""


@_stub
def reshape(x, /, shape):
    """Reshape `x` (row-major order); one extent may be -1."""


@_stub
def permute(x, /, axes):
    """Permute the dimensions of `x`."""


@_stub
def transpose(x, /, axis0=None, axis1=None):
    """Swap two axes of `x` (of a 2-d tile by default; more dimensions need both axes)."""


@_stub
def broadcast_to(x, /, shape):
    """Broadcast `x` to `shape` (numpy rules)."""


@_stub
def expand_dims(x, /, axis):
    """Insert a dimension of extent 1 at `axis`."""


@_stub
def extract(x, /, index, shape):
    """The sub-tile of `shape` at sub-tile-grid `index`."""


@_stub
def insert(x, /, index, value):
    """`x` with its sub-tile at sub-tile-grid `index` replaced by `value` (the inverse of
    `extract`; a 0-d value is a one-element sub-tile). Returns a new tile."""


@_stub
def cat(tiles, /, axis):
    """Concatenate a pair of tiles along `axis`."""


@_stub
def where(cond, x, y, /):
    """Element-wise select: x where cond, else y."""


# ------------------------------------------------------------------------------ reductions
@_stub
def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Sum over `axis` (all axes when None)."""


@_stub
def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Product over `axis` (all axes when None)."""


@_stub
def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """Maximum over `axis` (all axes when None)."""


@_stub
def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """Minimum over `axis` (all axes when None)."""


@_stub
def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """Index of the maximum over `axis` (int32; ties give the smallest index)."""


@_stub
def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """Index of the minimum over `axis` (int32; ties give the smallest index)."""


@_stub
def reduce(x, /, axis, func, identity, *, keepdims=False):
    """Reduce over `axis` with the associative Python combiner `func`."""


@_stub
def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix sum along `axis`."""


@_stub
def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix product along `axis`."""


@_stub
def scan(x, /, axis, func, identity, *, reverse=False):
    """Inclusive scan along `axis` with the associative Python combiner `func`."""


# ------------------------------------------------------------------------------------ matmul
@_stub
def mma(x, y, /, acc, *, use_fast_acc=False):
    """x @ y + acc, computed in the accumulator's dtype. `use_fast_acc` (fp8 inputs only) permits
    a less precise accumulation; tilepy accumulates as without it."""


@_stub
def mma_scaled(x, x_scale, y, y_scale, /, acc):
    """Block-scaled x @ y + acc (cuTile), float32 acc: one scale per B elements along K
    (x_scale [..., M, K/B], y_scale [..., K/B, N]), B = K / the scales' K extent:
    result[i, j] = acc[i, j] + sum_k x[i, k] * x_scale[i, k // B] * y[k, j] * y_scale[k // B, j].
    fp8 (float8_e4m3fn, float8_e5m2) x and y take float8_e8m0fnu scales with B = 32;
    float4_e2m1fn x and y take float8_e8m0fnu (B = 16, 32), float8_e4m3fn (16) or
    float8_e5m3fnu (16, 32) scales."""


@_stub
def matmul(x, y, /):
    """x @ y in the promoted dtype of the inputs."""


# ------------------------------------------------------------------------------- atomics
# Element-space indices like gather/scatter; every atomic returns the values held before it.
_ACQ_REL, _DEVICE = MemoryOrder.ACQ_REL, MemoryScope.DEVICE


@_stub
def atomic_add(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
               memory_scope=_DEVICE):
    """Atomically add `update` at element-space `indices`."""


@_stub
def atomic_and(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
               memory_scope=_DEVICE):
    """Atomic bitwise and at element-space `indices`."""


@_stub
def atomic_or(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
              memory_scope=_DEVICE):
    """Atomic bitwise or at element-space `indices`."""


@_stub
def atomic_xor(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
               memory_scope=_DEVICE):
    """Atomic bitwise xor at element-space `indices`."""


@_stub
def atomic_max(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
               memory_scope=_DEVICE):
    """Atomic maximum at element-space `indices`."""


@_stub
def atomic_min(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
               memory_scope=_DEVICE):
    """Atomic minimum at element-space `indices`."""


@_stub
def atomic_xchg(array, indices, update, /, *, check_bounds=True, memory_order=_ACQ_REL,
                memory_scope=_DEVICE):
    """Atomic exchange at element-space `indices`."""


@_stub
def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True,
               memory_order=_ACQ_REL, memory_scope=_DEVICE):
    """Atomic compare-and-swap at element-space `indices` (masked-off elements return `expected`)."""


# ---------------------------------------------------------------------------- debugging
@_stub
def printf(format, *args):
    """C-style formatted print from the kernel (`%d`, `%f`, ...; one conversion per argument)."""


@_stub
def print(*args, sep=" ", end="\n"):
    """Python-style print from the kernel (the builtin `print` means the same in kernels)."""


@_stub
def assert_(cond, /, message=None):
    """Fail the launch when any element of `cond` is false."""


# --------------------------------------------------------------- grid dependency control
@_stub
def grid_dependency_control_wait():
    """Wait for the preceding kernel of a programmatic dependent launch to finish (its memory
    is visible afterwards). tilepy launches without programmatic dependent launch, where the
    preceding kernel has always finished: nothing to wait for."""


@_stub
def grid_dependency_control_launch_dependents():
    """Let the dependent kernel of a programmatic dependent launch start. tilepy launches without
    programmatic dependent launch, where nothing starts early."""


# ------------------------------------------------------------------------- compile time
@_stub
def static_assert(condition, message=None, /):
    """Compile-time assertion on a constant condition (TileStaticAssertionError when false)."""


@_stub
def static_eval(expr, /):
    """Evaluate `expr` as plain Python at compile time (tiles show their shape and dtype)."""


@_stub(host=iter)
def static_iter(iterable):
    """Unroll a `for` loop over a compile-time iterable (at most 1000 items)."""


class _StaticExceptionRequest:
    def __init__(self, exc):
        self.exc = exc


@_stub(host=_StaticExceptionRequest)
def static_exception(exc, /):
    """`raise tilepy.static_exception(exc)` fails the compilation with `exc`'s message."""


@_stub
def ensure_constant(value, /):
    """`value` itself; a TileTypeError when it is not a compile-time constant."""


@_stub
def assume_divisible_by(x, divisor):
    """`x`, with the promise that it is divisible by the constant `divisor` (unchecked)."""


@_stub
def _tile_item(x, /):
    """`t.item()`: the single element of a one-element tile, as a 0-d tile."""


# ------------------------------------------------------------------- annotations, options
class ByTarget:
    """A kernel option that depends on the GPU architecture: `ByTarget(sm_90=2, default=1)`."""

    def __init__(self, *, default=None, **value_by_target):
        for target in value_by_target:
            if not re.fullmatch(r"sm_\d+[a-z]?", target):
                raise TileOptionError(f"Invalid GPU architecture name: {target}, expected "
                                      f"sm_<major><minor>")
        self.default = default
        self.values = value_by_target

    def __repr__(self):
        items = [f"{k}={v!r}" for k, v in self.values.items()]
        return f"ByTarget({', '.join(items + [f'default={self.default!r}'])})"

    def __eq__(self, other):
        return isinstance(other, ByTarget) and (self.default, self.values) == (other.default,
                                                                              other.values)

    def __hash__(self):
        return hash((self.default, tuple(sorted(self.values.items()))))


class Array:
    """Annotation for an array parameter (any array-like argument becomes one)."""


class Tile:
    """Annotation for tile values."""


class TiledView:
    """`array.tiled_view(tile_shape, padding_mode=..., traversal_steps=None)` in a kernel (cuTile's
    TiledView): the array seen as a grid of `tile_shape` tiles whose origins are
    `traversal_steps` elements apart (default `tile_shape`: a partition; smaller steps overlap,
    larger ones leave gaps). In a kernel: `tv.dtype`, `tv.tile_shape`, `tv.traversal_steps`,
    `tv.load(index)`, `tv.store(index, tile)`, `tv.num_tiles(axis)` (cdiv(extent, step))."""


@_stub
def _array_tiled_view(array, /, tile_shape, *, padding_mode=PaddingMode.UNDETERMINED,
                      traversal_steps=None):
    """`array.tiled_view(...)`: a TiledView of `array`."""


@_stub
def _array_slice(array, /, axis, start, stop):
    """`array.slice(axis, start, stop)`: the array restricted to [start, stop) along `axis`
    (a view of the same memory; `axis` a constant, negative counts from the last)."""


@_stub
def _tiled_view_load(view, /, index, *, check_bounds=True, latency=None, allow_tma=None):
    """`tv.load(index)`: the tile at tile index `index` (elements outside the array read the
    view's padding)."""


@_stub
def _tiled_view_store(view, /, index, tile, *, check_bounds=True, latency=None, allow_tma=None):
    """`tv.store(index, tile)`: `tile` (broadcast to the tile shape, implicitly cast) written at
    tile index `index` (elements outside the array are not written)."""


@_stub
def _tiled_view_num_tiles(view, /, axis):
    """`tv.num_tiles(axis)`: the number of tiles along `axis` (cdiv(extent, step))."""


def _tv_atomic(name):
    def atomic(view, index, update, /):
        pass
    atomic.__name__ = atomic.__qualname__ = f"_tiled_view_atomic_store_{name}"
    atomic.__doc__ = (f"`tv.atomic_store_{name}(index, update)`: atomic {name} of `update` "
                      f"(broadcast to the tile shape, implicitly cast) into the tile at `index`, "
                      f"element by element (relaxed, device scope).")
    return _stub(atomic)


_tiled_view_atomic_store_add, _tiled_view_atomic_store_max, _tiled_view_atomic_store_min, \
    _tiled_view_atomic_store_and, _tiled_view_atomic_store_or, _tiled_view_atomic_store_xor = \
    (_tv_atomic(n) for n in ("add", "max", "min", "and", "or", "xor"))


@_stub
def _array_get_raw_memory(array, /):
    """`array.get_raw_memory()`: the array's memory addressed by element offset from its base
    pointer (no shape or strides), a RawArrayMemory."""


@_stub
def _raw_load_offset(memory, offset, /, *, mask=None, padding_value=0, latency=None):
    """`mem.load_offset(offset)`: the elements at base + offset (offset: an integer scalar or
    tile; the result has its shape); where `mask` is False, `padding_value`."""


@_stub
def _raw_store_offset(memory, offset, value, /, *, mask=None, latency=None):
    """`mem.store_offset(offset, value)`: `value` (broadcast to the offset's shape) written at
    base + offset, except where `mask` is False."""


@_stub
def _raw_atomic_cas_offset(memory, offset, expected, desired, /, *, mask=None,
                           memory_order=_ACQ_REL, memory_scope=_DEVICE):
    """`mem.atomic_cas_offset(...)`: atomic compare-and-swap at base + offset; the old values."""


def _raw_rmw(name):
    def rmw(memory, offset, update, /, *, mask=None, memory_order=_ACQ_REL,
            memory_scope=_DEVICE):
        pass
    rmw.__name__ = rmw.__qualname__ = f"_raw_atomic_{name}_offset"
    rmw.__doc__ = (f"`mem.atomic_{name}_offset(offset, update)`: atomic {name} at base + offset "
                   f"(except where `mask` is False); the old values.")
    return _stub(rmw)


_raw_atomic_add_offset, _raw_atomic_and_offset, _raw_atomic_or_offset, _raw_atomic_xor_offset, \
    _raw_atomic_max_offset, _raw_atomic_min_offset, _raw_atomic_xchg_offset = \
    (_raw_rmw(n) for n in ("add", "and", "or", "xor", "max", "min", "xchg"))


class Scalar:
    """Annotation for a runtime scalar parameter (Python int -> int32, float -> float32)."""


from .api_elementwise import *  # noqa: E402,F401,F403  (element-wise builtins are part of the API)

__all__ = sorted(
    [n for n, v in dict(globals()).items()
     if getattr(v, "__tilepy_builtin__", False) and not n.startswith("_")]
    + ["PaddingMode", "RoundingMode", "MemoryOrder", "MemoryScope", "Constant",
       "ConstantAnnotation", "ArrayAnnotation", "ListAnnotation", "ByTarget", "Array", "Tile",
       "TiledView", "Scalar", "ScalarInt64", "IndexedWithInt64"])
