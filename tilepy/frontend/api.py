"""The kernel language's public names: stubs with cuTile's signatures and meaning.

Each stub documents one builtin. Calling a stub outside a kernel is an error; inside a kernel
the tracer binds the call's arguments against the stub's signature and runs the builtin's
implementation registered with `@impl(stub)` (see `builtins/`). A stub with no implementation
yet raises TileUnsupportedFeatureError at the user's line.
"""
from __future__ import annotations

import enum
import typing

from ..errors import TileSyntaxError


def _stub(fn=None, *, host=None):
    """Declare a builtin. `host` is what the name does when called outside a kernel."""
    if fn is None:
        return lambda f: _stub(f, host=host)

    def outside(*args, **kwargs):
        if host is not None:
            return host(*args, **kwargs)
        raise TileSyntaxError(f"tilepy.{fn.__name__}() can only be called inside a @tilepy.kernel "
                              f"or @tilepy.function")
    outside.__name__ = fn.__name__
    outside.__qualname__ = fn.__qualname__
    outside.__doc__ = fn.__doc__
    outside.__wrapped__ = fn
    outside.__tilepy_builtin__ = True
    outside.__signature_source__ = fn
    return outside


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


class _ConstantMeta(type):
    def __getitem__(cls, item):
        return typing.Annotated[item, ConstantAnnotation()]


class Constant(metaclass=_ConstantMeta):
    """`x: tilepy.Constant[int]` makes `x` a compile-time constant of the kernel."""


# ------------------------------------------------------------------------- grid and indexing
@_stub
def bid(axis, /):
    """Index of the current tile block along `axis` (0, 1 or 2): an int32 scalar."""


@_stub
def num_blocks(axis, /):
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
    """A tile from a scalar or a nested tuple of constants."""


# ------------------------------------------------------------------------- shape and dtype
@_stub
def astype(x, dtype, /, *, rounding_mode=None):
    """Convert `x` to `dtype` (numeric value conversion)."""


@_stub
def bitcast(x, /, dtype):
    """Reinterpret the bits of `x` as `dtype` (same bit width)."""


@_stub
def reshape(x, /, shape):
    """Reshape `x` (row-major order); one extent may be -1."""


@_stub
def permute(x, /, axes):
    """Permute the dimensions of `x`."""


@_stub
def transpose(x, /, axis0=None, axis1=None):
    """Swap two axes of `x` (the last two by default)."""


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
    """x @ y + acc, computed in the accumulator's dtype."""


@_stub
def matmul(x, y, /):
    """x @ y in the promoted dtype of the inputs."""


# ---------------------------------------------------------------------------- element-wise
@_stub
def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x + y"""


@_stub
def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x - y"""


@_stub
def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x * y"""


@_stub
def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x / y (always floating point)"""


@_stub
def floordiv(x, y, /):
    """x // y"""


@_stub
def mod(x, y, /):
    """x % y (sign of y, as in Python)"""


@_stub
def pow(x, y, /):
    """x ** y"""


@_stub
def atan2(x1, x2, /):
    """atan2(x1, x2)"""


@_stub
def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Element-wise minimum."""


@_stub
def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Element-wise maximum."""


@_stub
def negative(x, /):
    """-x"""


@_stub
def abs(x, /):
    """|x|"""


@_stub
def bitwise_and(x, y, /):
    """x & y"""


@_stub
def bitwise_or(x, y, /):
    """x | y"""


@_stub
def bitwise_xor(x, y, /):
    """x ^ y"""


@_stub
def bitwise_lshift(x, y, /):
    """x << y"""


@_stub
def bitwise_rshift(x, y, /):
    """x >> y (arithmetic for signed, logical for unsigned dtypes)"""


@_stub
def bitwise_not(x, /):
    """~x"""


@_stub
def equal(x, y, /):
    """x == y"""


@_stub
def not_equal(x, y, /):
    """x != y"""


@_stub
def less(x, y, /):
    """x < y"""


@_stub
def less_equal(x, y, /):
    """x <= y"""


@_stub
def greater(x, y, /):
    """x > y"""


@_stub
def greater_equal(x, y, /):
    """x >= y"""


@_stub
def exp(x, /, *, rounding_mode=None):
    """e ** x"""


@_stub
def exp2(x, /, *, flush_to_zero=False):
    """2 ** x"""


@_stub
def log(x, /):
    """Natural logarithm."""


@_stub
def log2(x, /):
    """Base-2 logarithm."""


@_stub
def sqrt(x, /, *, rounding_mode=None, flush_to_zero=False):
    """Square root."""


@_stub
def rsqrt(x, /, *, flush_to_zero=False):
    """1 / sqrt(x)"""


@_stub
def sin(x, /):
    """Sine."""


@_stub
def cos(x, /):
    """Cosine."""


@_stub
def tan(x, /):
    """Tangent."""


@_stub
def sinh(x, /):
    """Hyperbolic sine."""


@_stub
def cosh(x, /):
    """Hyperbolic cosine."""


@_stub
def tanh(x, /, *, rounding_mode=None):
    """Hyperbolic tangent."""


@_stub
def floor(x, /):
    """Round down to an integral value."""


@_stub
def ceil(x, /):
    """Round up to an integral value."""


@_stub
def isnan(x, /):
    """x != x"""


# ------------------------------------------------------------------------------- atomics
@_stub
def atomic_add(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """Atomically add `update` at element-space `indices`; returns the old values."""


@_stub
def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True,
               memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
    """Atomic compare-and-swap at element-space `indices`; returns the old values."""


# ---------------------------------------------------------------------------- debugging
@_stub
def printf(format, *args):
    """C-style formatted print from the kernel."""


@_stub
def assert_(cond, /, message=None):
    """Fail the launch when any element of `cond` is false."""


@_stub
def static_assert(condition, message=None, /):
    """Compile-time assertion on a constant condition."""


@_stub
def static_eval(expr, /):
    """Evaluate `expr` as plain Python at compile time."""


@_stub(host=iter)
def static_iter(iterable):
    """Unroll a `for` loop over a compile-time iterable."""
