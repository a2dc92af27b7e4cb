"""What names are bound to while a kernel is traced.

- `Tile`: an IR value plus its user dtype (signedness lives here, IR types are signless).
- `Array`: a kernel array parameter: base pointer, shape and strides (IR values or static ints)
  and the tensor_view built from them.
- Python objects (ints, floats, tuples, dtypes, functions, modules) stay Python objects: they
  are compile-time constants and fold in Python until they meet a Tile.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..ir import Value
from ..types import DType, TileType
from ..types.dtype import int32


@dataclass(eq=False)
class Tile:
    value: Value
    dtype: DType

    @property
    def type(self) -> TileType:
        return self.value.type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.type.shape

    @property
    def ndim(self) -> int:
        return len(self.value.type.shape)

    def __repr__(self) -> str:
        return f"Tile[{self.dtype.name},{self.shape}]"

    def __bool__(self):
        from ..errors import TileTypeError
        raise TileTypeError("a tile's truth value is only known when the kernel runs; "
                            "use it as an `if`/`while` condition or with ct.where()")


@dataclass(eq=False)
class Array:
    name: str
    dtype: DType
    ndim: int
    base: Value                           # tile<ptr<E>>
    shape: tuple                          # per dim: Value (tile<i32>, i64) or int (static)
    strides: tuple                        # per dim: Value or int (1 when specialized unit stride)
    view: Value | None = None             # tensor_view, built in the kernel prologue
    partitions: dict = field(default_factory=dict)   # (tile shape, dim_map, padding) -> Value
    local: bool = False                   # view made in the body (an ArrayList item chosen at
                                          # run time): its partition views are made there too
    index_dtype: DType = int32            # of its extents and strides (IndexedWithInt64: int64)
    static_strides: tuple = ()            # the strides an annotation declares (None: run time)

    def __repr__(self) -> str:
        return f"Array[{self.dtype.name},{self.ndim}d]"

    def cutile_type(self) -> str:
        """The array's type as cuTile names it, `Array[float32,(?,?):(?,?)]`: its extents and
        strides, `?` where the kernel's type leaves them to run time (tilepy's specialization
        of a unit stride is not part of the type; a declared static one is)."""
        shape = ",".join(str(v) if isinstance(v, int) else "?" for v in self.shape)
        declared = (*self.static_strides, *(None,) * self.ndim)[:self.ndim]
        strides = ",".join("?" if d is None else str(d) for d in declared)
        index = "" if self.index_dtype == int32 else f",index_dtype={self.index_dtype.name}"
        return f"Array[{self.dtype.name},({shape}):({strides}){index}]"

    def index(self, v) -> "Tile | int":
        """An extent or stride of this array as kernel code sees it: a static int stays one, a
        run-time value is a scalar Tile of the array's index dtype."""
        return v if isinstance(v, int) else Tile(v, self.index_dtype)


@dataclass(eq=False)
class TiledView:
    """`array.tiled_view(...)` (builtins/views.py): an array, the tile shape of its loads and
    stores, the padding of the elements outside it, and the element steps between tile origins
    (the tile shape for a plain partition). A compile-time object, like an Array."""
    array: Array
    tile_shape: tuple[int, ...]
    padding_mode: object
    traversal_steps: tuple[int, ...]

    @property
    def dtype(self):
        return self.array.dtype

    def __repr__(self) -> str:
        return f"TiledView[{self.array.dtype.name},{self.tile_shape}]"


@dataclass(eq=False)
class RawArrayMemory:
    """`array.get_raw_memory()` (builtins/pointer.py): the array's elements addressed by offset
    from its base pointer. A compile-time object, like an Array."""
    array: Array

    @property
    def dtype(self):
        return self.array.dtype

    def __repr__(self) -> str:
        return f"RawArrayMemory[{self.array.dtype.name}]"


class ArrayList(tuple):
    """A list (or tuple) of arrays passed as one kernel argument: a tuple of `Array`s of one
    dtype and rank. `len()` and constant indices are plain tuple operations; a runtime index
    selects among the items' pointers, shapes and strides (frontend/array_list.py)."""

    def __repr__(self) -> str:
        return f"ArrayList[{len(self)} x {self[0]!r}]"


def value_type(v) -> str:
    """A value's type as cuTile prints it: a Python number is a 0-d constant tile of the dtype
    it takes (`Tile[int32,()]`), None is None; anything else as `type_name`."""
    if v is None:
        return "None"
    if isinstance(v, (bool, int, float)):
        kind = "bool_" if isinstance(v, bool) else "float32" if isinstance(v, float) else \
            "int32" if -2**31 <= v < 2**31 else "int64"
        return f"Tile[{kind},()]"
    if isinstance(v, Array):
        return v.cutile_type()
    str_of = type(v).__str__
    return str(v) if str_of is not object.__str__ and not isinstance(v, str) else type_name(v)


def python_value(fn, *args):
    """fn(*args) on compile-time values (numbers, enum members, ...), as cuTile folds them: what
    Python refuses is the user's error, at the expression being traced (an ordering of plain
    Enum members: TileTypeError; a zero divisor, `log(0)`, `exp(1000)`: TileValueError)."""
    from ..errors import TileTypeError, TileValueError
    try:
        return fn(*args)
    except TypeError as e:
        raise TileTypeError(str(e)) from None
    except Exception as e:
        raise TileValueError(f"{type(e).__name__}: {e}") from None


def type_name(v) -> str:
    """How a value's type is named in error messages."""
    if isinstance(v, (Tile, Array, ArrayList, TiledView, RawArrayMemory)):
        return repr(v)
    if isinstance(v, bool):
        return "bool constant"
    if isinstance(v, int):
        return "int constant"
    if isinstance(v, float):
        return "float constant"
    return type(v).__name__


def constant_type(v) -> str:
    """A compile-time value as cuTile types it when its value is part of its type (a dtype, a
    string: `DType float16`, `str 'a'`), else its type's name."""
    from ..types import DType
    if isinstance(v, DType):
        return f"DType {v.name}"
    if isinstance(v, str):
        return f"str {v!r}"
    if isinstance(v, enum.Enum):
        return f"<enum constant {type(v).__name__}.{v.name}>"
    return type_name(v)
