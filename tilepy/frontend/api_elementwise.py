"""Element-wise builtins of the kernel language (stubs with cuTile's signatures).

Operators in kernels map to these (`a + b` is `add(a, b)`); x/y may be tiles or numbers, and
are promoted and broadcast together (see promotion.py).
"""
from __future__ import annotations

from .stubs import stub as _stub

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
def divmod(x, y, /):
    """(x // y, x % y)"""


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
