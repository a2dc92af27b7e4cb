"""cuTile's private names that its test files import at collection, for cutile_tests.py's child.

A name with a true meaning on tilepy is given it here, from tilepy's own facts:
`_bytecode.SimpleType` (the bytecode's element-type tags, tilepy/bytecode/types.py's table under
cuTile's names), `_bytecode.float.float_to_bits`/`float_from_bits` (a value's bit pattern in one
of those types: tilepy's rounding, types/convert.py, and storage), `_compiler_options.
CompilerOptions` (cuTile's kernel options as a frozen dataclass, validated by tilepy's option
rules), `_cext.launch` (what `ct.launch` is) and `_cext._benchmark` (tilepy.tune's timed launch),
`_datatype`'s dtype categories (tilepy's promotion table), `_exception.UnsupportedCallError` (a
class tilepy never raises: it has no such refusal).

Any other private name (`cuda.tile._ir.ops.Loop`, `_bytecode.basic.StringTable`, the cache tool
`cutile_cache`, ...) is a *placeholder*: importing it works, so a test file that imports it is
collected, but any use of it (a call, an attribute, isinstance/issubclass, iteration, a
comparison, truth, an instance of a class over it) raises `CuTileInternalsUsed` naming it and the test's
line, and is recorded (a lowercase name is a placeholder module, whose names are placeholders
and whose call is a use; typing's `==` of an annotation, `-> List[Loop]`, is no use);
`_compile.compile_tile` called with cuTile's own arguments (for its IR) is a use too. The
harness counts a test that used one INTERNALS whatever happened next (a test that catches the
error still never passes because of a placeholder). Uses are recorded in
a file named by $CUTILE_INTERNALS_LOG, so a Python process a test starts (test_concurrent_launch
runs its kernels in one) reports its uses to the test too.
"""
from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.machinery
import os
import sys
import traceback
import types

LOG = "CUTILE_INTERNALS_LOG"
# cuTile's private modules, and its cache tool; not `cuda.tile_internal`, which cuTile does not
# ship either (its tests `importorskip` it: they skip, as with a public cuTile)
PRIVATE = ("cuda.tile._", "cuda.tile.compilation._", "cutile_cache")


class CuTileInternalsUsed(Exception):
    """A test used a cuTile internal that tilepy's harness has no meaning for."""


def _where() -> str:
    """The innermost frame outside this file and the test machinery: the test's own line."""
    for frame in reversed(traceback.extract_stack()):
        if frame.filename != __file__ and f"{os.sep}_pytest{os.sep}" not in frame.filename:
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return "?"


def _record(text: str) -> None:
    path = os.environ.get(LOG)
    if path:
        with open(path, "a") as f:
            f.write(text.replace("\n", " ") + "\n")


def uses() -> list[str]:
    """The uses recorded since `clear()` (this process and the ones it started)."""
    path = os.environ.get(LOG)
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def clear() -> None:
    path = os.environ.get(LOG)
    if path:
        open(path, "w").close()


class Internal:
    """A cuTile internal without a meaning here: every use raises CuTileInternalsUsed."""
    __slots__ = ("_name",)

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def _use(self, how):
        name = object.__getattribute__(self, "_name")
        text = (f"{name} ({how}) at {_where()}: a cuTile internal that tilepy's harness has no "
                f"meaning for")
        _record(f"CuTileInternalsUsed: {text}")
        raise CuTileInternalsUsed(text)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)          # a protocol probe (copy, inspect): not a use
        self._use(f"attribute '{attr}'")

    def __repr__(self):
        return f"<cuTile internal {object.__getattribute__(self, '_name')}>"

    __hash__ = object.__hash__                  # may be a key of the test file's tables

    @property
    def __name__(self):
        return object.__getattribute__(self, "_name").rsplit(".", 1)[-1]


def _raiser(how):
    return lambda self, *a, **k: self._use(how)


def _equality(self, other):
    if sys._getframe(1).f_globals.get("__name__") == "typing":
        return NotImplemented       # an annotation (`-> List[Loop]`): typing's check, no use
    self._use("comparison")


for _method, _how in (("__call__", "call"), ("__iter__", "iteration"), ("__len__", "len"),
                      ("__bool__", "truth"), ("__getitem__", "subscript"),
                      ("__contains__", "'in'"), ("__instancecheck__", "isinstance"),
                      ("__subclasscheck__", "issubclass"),
                      ("__setattr__", "attribute assignment"), ("__or__", "'|'"),
                      ("__ror__", "'|'"), *((f"__{op}__", "comparison") for op in
                                            ("lt", "le", "gt", "ge"))):
    setattr(Internal, _method, _raiser(_how))
Internal.__eq__ = Internal.__ne__ = _equality


def _base(self, bases):
    """A test file's class over a placeholder (`class K(_cext.TileDispatcher)`) is defined; making
    an instance of it is the use."""
    name = object.__getattribute__(self, "_name")

    def new(cls, *args, **kwargs):
        Internal(name)._use(f"an instance of {cls.__name__}, a subclass")
    return (type(name.rsplit(".", 1)[-1], (), {"__new__": new}),)


Internal.__mro_entries__ = _base


class _Private(types.ModuleType):
    """A private module of cuTile the harness has nothing of: each name is a placeholder, a
    lowercase one a module of the same kind (`from cuda.tile._ir import ir`; called, it is a
    function: a use)."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []                      # a package: its submodules import too

    def __getattr__(self, attr):
        return _placeholder(self.__name__, attr)

    def __call__(self, *args, **kwargs):
        Internal(self.__name__)._use("call")


def _placeholder(module: str, attr: str):
    if attr.startswith("__") and attr.endswith("__"):
        raise AttributeError(attr)
    name = f"{module}.{attr}"
    if not attr[:1].islower():
        return Internal(name)
    if name not in sys.modules:
        sys.modules[name] = _Private(name)
    return sys.modules[name]


def _fallback(module):
    """`module` (an emulated private module) gives a placeholder for a name it lacks."""
    module.__getattr__ = lambda attr: _placeholder(module.__name__, attr)
    if not hasattr(module, "__path__"):
        module.__path__ = []


def refuse(name: str, how: str):
    """A use of cuTile internal `name` the harness gives no meaning (recorded, raised)."""
    Internal(name)._use(how)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(PRIVATE) and name not in sys.modules:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Private(spec.name)

    def exec_module(self, module):
        pass


# ---- the names with a meaning on tilepy ---------------------------------------------------

def _simple_type():
    """cuTile's SimpleType: the bytecode's element-type tags (the encoded varint), tilepy's."""
    import enum
    from tilepy.bytecode.stream import varint
    from tilepy.bytecode.types import SIMPLE, TOKEN_TAG

    def tag(code):
        buf = bytearray()
        varint(code, buf)
        return bytes(buf)
    names = {"I1": "i1", "I8": "i8", "I16": "i16", "I32": "i32", "I64": "i64", "F16": "f16",
             "BF16": "bf16", "F32": "f32", "TF32": "tf32", "F64": "f64", "F8E4M3FN": "e4m3",
             "F8E5M2": "e5m2", "F8E8M0FNU": "e8m0", "F4E2M1FN": "e2m1", "F8E5M3FNU": "e5m3"}
    members = {ours: tag(SIMPLE[elem]) for ours, elem in names.items()}
    members["Token"] = tag(TOKEN_TAG)
    simple = enum.Enum("SimpleType", members, module="cuda.tile._bytecode")
    return simple, {simple[n]: e for n, e in names.items()}


def _float_module(simple, elem_of):
    """cuda.tile._bytecode.float: a float's bit pattern in a bytecode float type and back.
    A finite value in range is rounded to nearest even by tilepy's conversion (types/convert.py)
    and stored as tilepy stores the type (bytecode/writer.py's constants). As cuTile's helper
    (an encoding of constants, not a cast: no saturation), NaN is the type's NaN and a value
    beyond its range (infinities too) its infinity, or NaN where it has none (e2m1, which has
    neither, saturates), e8m0's smallest stands for zero and below; a negative value in an
    unsigned type, and NaN in e2m1, are ValueErrors."""
    import math
    import numpy as np
    from tilepy.bytecode.writer import dense_bytes
    from tilepy.types import convert
    from tilepy.types.element import NUMPY_DTYPE, element_type
    module = types.ModuleType("cuda.tile._bytecode.float")

    def elem(ty):
        if ty not in elem_of:
            raise ValueError(f"{ty} is not a float type")
        return element_type(elem_of[ty])

    def float_to_bits(val, ty):
        e = elem(ty)
        exponent_only = e.mant_bits == 0          # e8m0: no sign, no zero, no subnormals
        if (not e.signed or exponent_only) and math.copysign(1.0, val) < 0:
            raise ValueError("Negative values cannot be represented in an unsigned float format")
        if not e.has_nan and math.isnan(val):
            raise ValueError("NaN cannot be represented in a finite-only float format")
        if math.isnan(val) or (_beyond(val, e) and e.has_nan):
            special = math.copysign(math.inf if e.has_inf and not math.isnan(val) else math.nan,
                                    val)
            x = np.array([special]).astype(NUMPY_DTYPE[e])
        elif exponent_only and val < e.smallest_subnormal:
            return 0                                # zero and below: the smallest, 2^-127
        else:
            x = convert.to_storage(convert.round_float(np.float64(val), e), e).reshape(1)
        value = types.SimpleNamespace(array=x, elem=e, is_splat=True)
        return int.from_bytes(dense_bytes(value), "little")

    def _beyond(val, e):
        """Does `val` round (to nearest even, unbounded exponent) past e's largest finite?"""
        if math.isinf(val):
            return True
        top = e.max_finite
        ulp = 2.0 ** (e.max_exp - e.mant_bits)
        return abs(val) > top + ulp / 2 or (abs(val) == top + ulp / 2 and int(top / ulp) % 2)

    def float_from_bits(bits, ty):
        e = elem(ty)
        if convert.has_encoded_bits(e):
            return float(convert.decode_bits(np.array([bits]), e)[0])
        if e.name == "tf32":                    # 19 bits: float32's top ones
            return float(np.array([bits << 13], np.uint32).view(np.float32)[0])
        storage = np.array([bits], f"u{e.storage_bytes}")
        return float(storage.view(NUMPY_DTYPE[e])[0])
    module.float_to_bits, module.float_from_bits = float_to_bits, float_from_bits
    module.float_bit_size = lambda ty: elem(ty).bits
    return module


def _compiler_options():
    """cuda.tile._compiler_options: cuTile's kernel options (the fields its tests read), values
    checked by tilepy's option rules (frontend/kernel.py), ByTarget tilepy's."""
    from tilepy.frontend.api import ByTarget
    from tilepy.frontend.kernel import _check_options
    module = types.ModuleType("cuda.tile._compiler_options")

    @dataclasses.dataclass(frozen=True)
    class CompilerOptions:
        num_ctas: object = None
        occupancy: object = None
        opt_level: object = 3
        num_worker_warps: object = None

        def __post_init__(self):
            _check_options({f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                            if getattr(self, f.name) is not None})

        def hints_by_target(self):
            """{target: {field: value}}: a ByTarget's targets, and "default" for every field."""
            out: dict = {}
            for f in dataclasses.fields(self):
                value = getattr(self, f.name)
                if isinstance(value, ByTarget):
                    for target, v in value.values.items():
                        out.setdefault(target, {})[f.name] = v
                    value = f.default if value.default is None else value.default
                out.setdefault("default", {})[f.name] = value
            return out

        def opt_level_for_target(self, target):
            level = self.opt_level
            if isinstance(level, ByTarget):
                level = level.values.get(target, level.default)
            return 3 if level is None else level
    CompilerOptions.__module__ = module.__name__
    module.CompilerOptions = CompilerOptions
    return module


def _datatype():
    """cuda.tile._datatype: tilepy's dtypes, and the dtype classification cuTile's tests read:
    the categories of tilepy's promotion (frontend/promotion.py: bool, integer, arithmetic float;
    a float outside it is restricted: tf32, fp8, fp4), and the dtypes of promotion's table."""
    import enum
    import tilepy
    from tilepy.frontend import promotion
    from tilepy.types import dtype as dtypes
    module = types.ModuleType("cuda.tile._datatype")
    module.__dict__.update({k: v for k, v in vars(dtypes).items() if not k.startswith("__")})

    class NumericDTypeCategory(enum.IntEnum):
        Boolean = 0
        Integral = 1
        Float = 2
        RestrictedFloat = 3

    def numeric_dtype_category(t):
        return NumericDTypeCategory(promotion.CATEGORY.get(t, NumericDTypeCategory.RestrictedFloat))

    class _DTypePromotionImpl:
        _order = [tilepy.bool_, tilepy.uint8, tilepy.uint16, tilepy.uint32, tilepy.uint64,
                  tilepy.int8, tilepy.int16, tilepy.int32, tilepy.int64, tilepy.float16,
                  tilepy.float32, tilepy.float64, tilepy.bfloat16, tilepy.tfloat32,
                  tilepy.float8_e4m3fn, tilepy.float8_e5m2, tilepy.float8_e8m0fnu,
                  tilepy.float4_e2m1fn]
        promote_dtypes = staticmethod(promotion.promote)
    module.NumericDTypeCategory, module.numeric_dtype_category = NumericDTypeCategory, \
        numeric_dtype_category
    module._DTypePromotionImpl = _DTypePromotionImpl
    module.is_float = lambda t: t.is_float
    module.is_integral = lambda t: t.is_int and not t.is_bool
    module.is_boolean = lambda t: t.is_bool
    module.is_signed = lambda t: t.is_float or (t.is_int and not t.is_bool and t.signed)
    module.is_unrestricted_float = lambda t: numeric_dtype_category(t) == NumericDTypeCategory.Float
    module.is_restricted_float = \
        lambda t: numeric_dtype_category(t) == NumericDTypeCategory.RestrictedFloat
    return module


def install() -> None:
    """After cutile_tests' `_internals`: the meanings above, and placeholders for the rest."""
    import tilepy.tune._tune_utils as tune_utils
    simple, elem_of = _simple_type()
    bytecode = sys.modules["cuda.tile._bytecode"]
    bytecode.SimpleType = simple
    float_module = _float_module(simple, elem_of)
    bytecode.float = float_module
    options = _compiler_options()
    cext = sys.modules["cuda.tile._cext"]
    cext.launch = sys.modules["cuda.tile"].launch           # cuTile's ct.launch is _cext.launch
    cext._benchmark = tune_utils._benchmark
    from tilepy.errors import TileError
    # cuTile refuses a call of a host function in device code (eval, a class's constructor)
    # with it; tilepy has no such error: it evaluates such calls on constants while tracing, so
    # a test expecting it finds it not raised
    sys.modules["cuda.tile._exception"].UnsupportedCallError = type(
        "UnsupportedCallError", (TileError,), {"__module__": "cuda.tile._exception"})
    compile_ = sys.modules["cuda.tile._compile"]
    counted = compile_.compile_tile

    def compile_tile(kernel, *args, **kwargs):
        """The harness's (tilepy compiles a specialization); with cuTile's own arguments (the
        Python function, signatures, `return_final_ir`, ...) it is cuTile's compiler: its IR."""
        from tilepy.frontend.kernel import KernelFunction
        if kwargs or not isinstance(kernel, KernelFunction):
            refuse("cuda.tile._compile.compile_tile", "cuTile's compile, for its IR or bytecode")
        return counted(kernel, *args)
    compile_.compile_tile = compile_tile
    datatype = _datatype()
    sys.modules.update({"cuda.tile._bytecode.float": float_module,
                        "cuda.tile._compiler_options": options,
                        "cuda.tile._datatype": datatype})
    for name, module in list(sys.modules.items()):
        if name.startswith(PRIVATE) and getattr(module, "__name__", None) == name and \
                not isinstance(module, _Private):           # the harness's, not tilepy's
            _fallback(module)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
