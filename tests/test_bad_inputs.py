"""Malformed arguments to every public entry point give a clear Tile*Error: never a crash, a hang
or a raw Python exception. Anything that could crash the process runs in a subprocess with a
timeout."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilepy as ct
import tilepy.interpret as interp
from tilepy.errors import TileError
from tilepy.ir import verify
from tilepy.ir.parser import parse_module

HERE = os.path.dirname(os.path.abspath(__file__))


@ct.kernel
def vadd(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def scale(a, c, s):
    ct.store(c, (ct.bid(0),), ct.load(a, (ct.bid(0),), (16,)) * s)


@ct.kernel
def madd(a, c):
    ct.store(c, (ct.bid(0), 0), ct.load(a, (ct.bid(0), 0), (4, 4)) * 2)


class FakeCudaArray:
    """Claims to live on a GPU (no memory behind it: nothing may dereference it)."""

    def __init__(self, n=16):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (1 << 40, False),
                                         "version": 3, "strides": None}


f32 = np.zeros(16, np.float32)
READ_ONLY = np.zeros(16, np.float32)
READ_ONLY.setflags(write=False)

# (description, args, grid, regex the error message must match)
BAD_LAUNCHES = [
    ("too few args", (f32, f32), (1,), "Kernel expects 4 arguments but 2 were given"),
    ("too many args", (f32, f32, f32, 16, 1), (1,), "Kernel expects 4 arguments but 5 were given"),
    ("args not a tuple", f32, (1,), "tuple|takes"),
    ("a string arg", ("abc", f32, f32, 16), (1,), "not supported|str"),
    ("a dict arg", ({}, f32, f32, 16), (1,), "not supported|dict"),
    ("None arg", (None, f32, f32, 16), (1,), "None|not supported|array"),
    ("complex dtype", (np.zeros(16, np.complex64), f32, f32, 16), (1,), "complex64"),
    ("object dtype", (np.zeros(16, object), f32, f32, 16), (1,), "object"),
    ("structured dtype", (np.zeros(16, "i4,f4"), f32, f32, 16), (1,), "dtype|supported"),
    ("wrong rank", (np.zeros((4, 4), np.float32), f32, f32, 16), (1,), "rank|dim|index|shape"),
    ("0-d array", (np.float32(1.0) * np.ones(()), f32, f32, 16), (1,), "rank|0-d|index|dim|array"),
    ("tile not a power of two", (f32, f32, f32, 12), (1,), "power of two|power-of-two"),
    ("tile of 0", (f32, f32, f32, 0), (1,), "is not positive"),
    ("negative strides", (f32[::-1], f32, f32, 16), (1,), "negative strides"),
    ("unaligned strides", (np.ndarray((7,), np.float32, np.zeros(64, np.uint8), 1, (6,)),
                           f32, f32, 16), (1,), "stride"),
    ("read-only output", (f32, f32, READ_ONLY, 16), (1,), "read-only"),
    ("mixed devices", (f32, FakeCudaArray(), f32, 16), (1,), "different devices|CPU"),
    ("grid too large", (f32, f32, f32, 16), (2**24,), r"\[0, 16777215\]"),
    ("negative grid", (f32, f32, f32, 16), (-1,), "grid extent -1"),
    ("grid of 4 dims", (f32, f32, f32, 16), (1, 1, 1, 1), "0 to 3"),
    ("grid of floats", (f32, f32, f32, 16), (1.0,), "ints"),
    ("grid a string", (f32, f32, f32, 16), "1", "grid"),
    ("grid of bools", (f32, f32, f32, 16), (True,), "ints"),
    ("huge tile", (f32, f32, f32, 2**40), (1,), "too large"),
]


def _launch_only(what: str) -> bool:
    """Problems of the launch (grid, devices, writability), not of the kernel's arguments'
    types: the kernel still has its Tile IR."""
    return "grid" in what or what in ("mixed devices", "read-only output")


BAD_CASES = [pytest.param(entry, *b, id=f"{entry}-{b[0]}") for entry in ("launch", "interpret", "mlir")
             for b in BAD_LAUNCHES if not (entry == "mlir" and _launch_only(b[0]))]


@pytest.mark.parametrize("entry,what,args,grid,match", BAD_CASES)
def test_bad_launch_arguments_raise_tile_errors(entry, what, args, grid, match, no_driver):
    """(The fake CUDA array's pointer must not reach a real driver: no driver, whatever the
    machine.)"""
    with pytest.raises(TileError, match=match):
        if entry == "launch":
            ct.launch(None, grid, vadd, args)
        elif entry == "interpret":
            interp.launch(grid, vadd, args)
        else:
            vadd.mlir(*args) if isinstance(args, tuple) else vadd.mlir(args)


@pytest.mark.parametrize("what,args", [(b[0], b[1]) for b in BAD_LAUNCHES if _launch_only(b[0])])
def test_launch_only_problems_leave_valid_tile_ir(what, args, no_driver):
    """`kernel.mlir` does not launch: for these arguments it gives the kernel's verified IR
    (the fake CUDA array's pointer must not reach a real driver)."""
    text = vadd.mlir(*args)
    verify(parse_module(text))
    assert "store_view_tko" in text and "load_view_tko" in text


@pytest.mark.parametrize("fn", ["mlir", "cuda_source"])
def test_views_of_the_kernel_reject_bad_arguments(fn):
    for args in [(f32,), (f32, f32, f32, 12), ("x", f32, f32, 16), (np.zeros(3, object),) * 3 + (16,)]:
        with pytest.raises(TileError):
            getattr(vadd, fn)(*args)


def test_scalars_must_fit_their_type():
    for bad in (2**40, "3", None, [1], 1 + 2j):
        for run in (lambda: ct.launch(None, (1,), scale, (f32, f32.copy(), bad)),
                    lambda: interp.launch((1,), scale, (f32, f32.copy(), bad))):
            with pytest.raises(TileError):
                run()


def test_not_a_kernel_and_bad_backend():
    with pytest.raises(TileError, match="@tilepy.kernel"):
        ct.launch(None, (1,), lambda: None, ())
    with pytest.raises(TileError, match="@tilepy.kernel"):
        interp.launch((1,), np.add, ())
    with pytest.raises(TileError, match="backend"):
        ct.launch(None, (1,), vadd, (f32, f32, f32, 16), backend="tpu")


def test_an_empty_grid_launches_nothing():
    """A grid extent of 0 is a no-op in tilepy.launch (CUDA would refuse it); the interpreter
    agrees, for Python kernels and for IR modules."""
    out = np.full(16, 7.0, np.float32)
    ct.launch(None, (0,), vadd, (f32, f32, out, 16))
    interp.launch((4, 0), vadd, (f32, f32, out, 16))
    interp.run(M, (0,), [f32, 1])
    assert (out == 7.0).all()


def test_zero_size_arrays_are_handled():
    z = np.zeros(0, np.float32)
    ct.launch(None, (1,), vadd, (z, z, z.copy(), 16))          # every lane masked: a no-op
    with pytest.raises(TileError, match="index space"):
        interp.launch((1,), vadd, (z, z, z.copy(), 16))        # spec: index outside the space
    zz = np.zeros((0, 4), np.float32)
    ct.launch(None, (1,), madd, (zz, zz.copy()))


def test_gpu_arrays_without_a_driver_are_a_clear_error(no_driver):
    a = FakeCudaArray()
    with pytest.raises(TileError):
        ct.launch(None, (1,), vadd, (a, a, a, 16))
    with pytest.raises(TileError, match="CPU"):
        interp.launch((1,), vadd, (a, a, a, 16))


# ---------------------------------------------------------------------------- interpreter.run
M = parse_module("cuda_tile.module @m {\nentry @k(%p: tile<ptr<f32>>, %n: tile<i32>) {\n"
                 "%t, %k2 = load_ptr_tko weak %p : tile<ptr<f32>> -> tile<f32>, token\n"
                 "return\n}\n}\n")
BAD_RUNS = [
    ("not a module", "module", 1, [f32, 1], "Module"),
    ("no such entry", M, 1, [f32, 1], "no entry"),
    ("arg count", M, 1, [f32], "2 parameter"),
    ("args not a list", M, 1, f32, "list or tuple"),
    ("pointer not an array", M, 1, [[1.0, 2.0], 1], "numpy array"),
    ("pointer dtype", M, 1, [np.zeros(4, np.int32), 1], "expected an array of f32"),
    ("negative offset", M, 1, [(f32, -1), 1], "offset"),
    ("scalar out of range", M, 1, [f32, 2**40], "does not fit in i32"),
    ("scalar of wrong kind", M, 1, [f32, 1.5], "expected an int"),
    ("scalar string", M, 1, [f32, "1"], "expected an int"),
    ("zero-size pointee", M, 1, [np.zeros(0, np.float32), 1], "outside every allocation"),
    ("grid too large", M, (1, 2**24), [f32, 1], "grid extent"),
    ("grid type", M, "x", [f32, 1], "grid"),
]


@pytest.mark.parametrize("what,module,grid,args,match", BAD_RUNS, ids=[b[0] for b in BAD_RUNS])
def test_bad_interpreter_arguments(what, module, grid, args, match):
    with pytest.raises(TileError, match=match):
        interp.run(module, grid, args, entry="nope" if what == "no such entry" else None)


def test_an_infinite_loop_is_stopped():
    m = parse_module("cuda_tile.module @m {\nentry @k() {\nloop {\ncontinue\n}\nreturn\n}\n}\n")
    with pytest.raises(TileError, match="no break after 1000 iterations"):
        interp.run(m, 1, [], max_loop_iterations=1000)


# ---------------------------------------------------------------------------- parsing / verify
BAD_TEXT = [
    "", "cuda_tile.module", "cuda_tile.module @m {", "cuda_tile.module @m {\nentry @k( {\n}\n}",
    "cuda_tile.module @m {\nentry @k() {\n%x = addf %y, %y : tile<4xf32>\nreturn\n}\n}",
    "cuda_tile.module @m {\nentry @k() {\n%x = constant <f32: 1.0> : tile<3xf32>\nreturn\n}\n}",
    "cuda_tile.module @m {\nentry @k() {\n%x = constant <i8: 300> : tile<i8>\nreturn\n}\n}",
    "cuda_tile.module @m {\nentry @k() {\n%x = constant <f32: 1.0> : tile<99999999999999999999xf32>"
    "\nreturn\n}\n}",
    "cuda_tile.module @m {\nentry @k() {\n%x = nosuchop\nreturn\n}\n}",
    "\x00\xff garbage \u2603",
    "cuda_tile.module @m {" + "\nentry @k() {" * 50,
    "cuda_tile.module @m {\nentry @k() {\n" + "if %c {\n" * 2000 + "}\n" * 2000 + "return\n}\n}",
]


@pytest.mark.parametrize("text", BAD_TEXT, ids=range(len(BAD_TEXT)))
def test_bad_module_text(text):
    with pytest.raises(TileError):
        verify(parse_module(text))


# ---------------------------------------------------------------------------- crashes
def _subprocess(code: str, timeout=240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=HERE)


HUGE = """
import numpy as np, tilepy as ct, tilepy.interpret as interp
from test_bad_inputs import vadd
a = np.zeros(16, np.float32)
try:
    {call}
except ct.TileError as e:
    print("TILE-ERROR", type(e).__name__, str(e).splitlines()[0])
else:
    print("OK")
"""


TOO_LARGE_FOR_CPP = "TILE-ERROR TileUnsupportedFeatureError a tile of {n} elements .* too large " \
    "for the CUDA C\\+\\+ backend: at most 65536 elements"


@pytest.mark.parametrize("call,expected", [
    ("ct.launch(None, (1,), vadd, (a, a, a.copy(), 1 << 24))", TOO_LARGE_FOR_CPP.format(n=1 << 24)),
    ("interp.launch((1,), vadd, (a, a, a.copy(), 1 << 30))",
     "TILE-ERROR TileValueError load_view_tko: a tile of 1073741824 elements .* too large for "
     "the interpreter"),
    ("vadd.cuda_source(a, a, a, 1 << 26)", TOO_LARGE_FOR_CPP.format(n=1 << 26)),
    ("b = np.arange(1 << 16, dtype=np.float64); c = np.zeros_like(b); "
     "ct.launch(None, (1,), vadd, (b, b, c, 1 << 16)); assert (c == 2 * b).all()", "OK$"),
])
def test_huge_tiles_do_not_crash(call, expected):
    """Tiles past a backend's limit: the located 'too large' error of that backend, never a
    segfault or a hang; the largest tile the C++ backend takes (2^16) runs and is right."""
    proc = _subprocess(HUGE.format(call=call))
    assert proc.returncode == 0, f"crashed (code {proc.returncode}):\n{proc.stderr[-3000:]}"
    assert re.match(expected, proc.stdout.strip()), proc.stdout + proc.stderr


@pytest.mark.parametrize("backend", ["interpret", None])
def test_cutiles_grid_and_argument_count_rules(backend):
    """An empty grid is one block; a grid extent past 2^24 - 1 is a ValueError and a wrong
    number of arguments a TypeError (tilepy's located errors, cuTile's classes and phrases)."""
    a, c = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    ct.launch(None, (), vadd, (a, a, c, 16), backend=backend)
    np.testing.assert_array_equal(c, 2 * a)
    with pytest.raises(ValueError, match=re.escape("Grid[1] exceeds 24-bit limit: max=16777215, "
                                                   "got=16777216.")):
        ct.launch(None, (1, 2**24), vadd, (a, a, c, 16), backend=backend)
    with pytest.raises(TypeError, match="Kernel expects 4 arguments but 1 was given"):
        ct.launch(None, (1,), vadd, (a,), backend=backend)
