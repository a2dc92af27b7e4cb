"""Run-time values of the interpreter (spec 6.3) and the integer views of signless tiles.

* tile<SxE>        a numpy array of shape S in E's storage dtype (i1 is bool, canonical 0/1;
                   iN is intN holding the two's complement bits; tf32 is float32 holding
                   tf32-representable values; bf16/fp8 are ml_dtypes arrays)
* tile<Sxptr<E>>   a uint64 array of byte addresses into the interpreter's `Memory`
* tensor_view      `TensorView(base address, shape, strides in elements, element type)`
* partition_view   `PartitionView(tensor view, its type)`
* token            `Token()`: tokens only order memory operations, which the interpreter performs
                   in program order, an order every token graph allows.

Integers are signless: an op reads them signed or unsigned through `as_signed`/`as_unsigned`
(for i1, signed reads 0/-1 and unsigned 0/1, spec 8.8.1) and writes results back with `wrap`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TileValueError
from ..types import PartitionViewType, PtrType, TileType
from ..types import element as E


@dataclass(frozen=True)
class TensorView:
    base: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: E.ElementType


@dataclass(frozen=True)
class PartitionView:
    view: TensorView
    type: PartitionViewType

    def index_space(self) -> tuple[int, ...]:
        """N_i = ceildiv(S_dm[i], T_i) per tile dimension i (spec 5.3.3)."""
        dm = self.type.effective_dim_map
        return tuple(-(-self.view.shape[dm[i]] // t) for i, t in enumerate(self.type.tile_shape))


class Token:
    """A memory-ordering token (spec 8.1.3)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "token"


TOKEN = Token()


def storage_dtype(t: TileType) -> np.dtype:
    return np.dtype(np.uint64) if isinstance(t.elem, PtrType) else E.NUMPY_DTYPE[t.elem]


# ------------------------------------------------------------------------------- integers
def _uint_dtype(bits: int) -> np.dtype:
    return np.dtype(f"uint{max(bits, 8)}")


def as_unsigned(a: np.ndarray, elem) -> np.ndarray:
    """The unsigned reading of an integer tile, as uint64."""
    a = np.asarray(a)
    if elem == E.I1:
        return a.astype(np.uint64)
    return a.view(_uint_dtype(elem.bits)).astype(np.uint64)


def as_signed(a: np.ndarray, elem) -> np.ndarray:
    """The signed (two's complement) reading of an integer tile, as int64 (i1 true is -1)."""
    a = np.asarray(a)
    if elem == E.I1:
        return -a.astype(np.int64)
    return a.astype(np.int64)


def wrap(v: np.ndarray, elem) -> np.ndarray:
    """Integers (int64 or uint64, any values) reduced modulo 2^N into elem's storage."""
    v = np.asarray(v)
    u = v.astype(np.uint64) if v.dtype != np.uint64 else v
    if elem == E.I1:
        return (u & np.uint64(1)).astype(bool)
    if elem.bits == 64:
        return u.view(np.int64).copy()
    mask = np.uint64((1 << elem.bits) - 1)
    return (u & mask).astype(_uint_dtype(elem.bits)).view(E.NUMPY_DTYPE[elem])


def int_range(elem, signed: bool) -> tuple[int, int]:
    if elem == E.I1:
        return (-1, 0) if signed else (0, 1)
    if signed:
        return -(1 << (elem.bits - 1)), (1 << (elem.bits - 1)) - 1
    return 0, (1 << elem.bits) - 1


def scalar_value(v, elem, what: str) -> np.ndarray:
    """A 0-d tile of `elem` from a Python or numpy scalar argument (ints wrap like C casts do
    not: a value outside both the signed and the unsigned range is an error)."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if elem == E.I1:
        if not isinstance(v, (bool, np.bool_, int, np.integer)) or int(v) not in (0, 1):
            raise TileValueError(f"{what}: expected a bool for an i1 parameter (got {v!r})")
        return np.array(bool(v))
    if elem.is_int:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TileValueError(f"{what}: expected an int for an {elem} parameter (got {v!r})")
        lo = -(1 << (elem.bits - 1))
        hi = (1 << elem.bits) - 1
        if not lo <= int(v) <= hi:
            raise TileValueError(f"{what}: {int(v)} does not fit in {elem}")
        return wrap(np.array(int(v) % (1 << 64), dtype=np.uint64), elem)
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
        raise TileValueError(f"{what}: expected a number for an {elem} parameter (got {v!r})")
    from .floats import encode, round_f64
    return encode(round_f64(np.array(float(v)), elem), elem)


def expand_scales(x_scale, y_scale, k: int):
    """mmaf_scaled's block scales repeated to the operand shapes (K = `k`): x_scale along K (its
    last axis), y_scale along K (its second to last); a block is K / the scales' K extent."""
    block = k // np.shape(x_scale)[-1]
    return np.repeat(x_scale, block, axis=-1), np.repeat(y_scale, block, axis=-2)
