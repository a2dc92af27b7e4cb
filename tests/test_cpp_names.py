"""Names from the user's code that are not usable C++ identifiers as they are (keywords,
reserved identifiers such as `_Foo` and `__x`, names the emitted code spells such as `int32_t`,
runtime macros such as `TP_NT`) are renamed in the emitted C++ (cuda_c/names.py): the kernels
below build and run on the CPU backend in both modes and compile with NVRTC, and the GPU path
finds the renamed symbol. Every kernel's symbol is prefixed (`tp_kernel_`), so kernels named
after C library functions (`index`, `wait` bound to libc's; `exp` conflicted with <cmath>'s
declaration, on NVRTC too) run their own code."""
import numpy as np
import pytest

import tilepy as ct
from guarded import MODES, run_everywhere
from tilepy.api.compiler import compile_for_args
from tilepy.cuda_c.names import kernel_symbol, safe
from tilepy.launch.cubin_info import kernel_info
from tilepy.launch.nvrtc import compile_cubin


@ct.kernel
def double(int, new, _Foo, __x):
    auto = ct.bid(0)
    int32_t = ct.load(int, index=(auto,), shape=(4,))
    TP_NT = ct.load(new, index=(auto,), shape=(4,))
    # the locals of the kernels named _Reserved and __dunder__ below, here too: this kernel runs
    # in both CPU modes, those in the fast mode only
    threadIdx = auto
    register = ct.load(int, index=(threadIdx,), shape=(4,))
    class_ = register + 1
    this = -class_
    printf = this + class_
    x_ = printf * 2
    tp = x_ + TP_NT
    _Tmp = int32_t * 2 + tp
    __y = _Tmp - 1
    ct.store(_Foo, index=(auto,), tile=__y)
    ct.store(__x, index=(auto,), tile=_Tmp)


@ct.kernel
def _Reserved(register, x_):
    threadIdx = ct.bid(0)
    class_ = ct.load(register, index=(threadIdx,), shape=(4,))
    ct.store(x_, index=(threadIdx,), tile=class_ + 1)


@ct.kernel
def __dunder__(this, tp):
    printf = ct.load(this, index=(ct.bid(0),), shape=(4,))
    ct.store(tp, index=(ct.bid(0),), tile=-printf)


@ct.kernel
def index(a, b):
    t = ct.load(a, index=(ct.bid(0),), shape=(4,))
    ct.store(b, index=(ct.bid(0),), tile=t + 1)


@ct.kernel
def exp(a, b):
    t = ct.load(a, index=(ct.bid(0),), shape=(4,))
    ct.store(b, index=(ct.bid(0),), tile=ct.exp(t * 0))


@ct.kernel
def wait(a, b):
    t = ct.load(a, index=(ct.bid(0),), shape=(4,))
    ct.store(b, index=(ct.bid(0),), tile=t * 3)


def _cases():
    a, b = np.arange(8, dtype=np.float32), np.arange(8, dtype=np.float32)[::-1].copy()
    z = np.zeros(8, np.float32)
    yield double, (a, b, z, z.copy()), lambda o: (o[2], 2 * a + b - 1, o[3], 2 * a + b)
    yield _Reserved, (a, z), lambda o: (o[1], a + 1)
    yield __dunder__, (a, z), lambda o: (o[1], -a)
    yield index, (a, z), lambda o: (o[1], a + 1)
    yield exp, (a, z), lambda o: (o[1], np.ones(8, np.float32))
    yield wait, (a, z), lambda o: (o[1], 3 * a)


CASES = list(_cases())
IDS = [k.name for k, _, _ in CASES]
# The mode matters to names only through the body: faithful mode compiles the same C++ with
# TP_FAITHFUL. The kernels named after a reserved identifier or a libc function (the symbol,
# the only place their name is spelled in C++ besides a comment, is `tp_kernel_<name>` in both
# modes) run in the interpreter and the fast mode; `double`, which holds every renamed
# parameter and local (theirs too), and gather_from run in both modes.
FAST_ONLY = {"_Reserved", "__dunder__", "index", "exp", "wait"}


def test_kernel_symbols():
    names = ("double", "_Reserved", "__dunder__", "vadd", "tp_x", "exp")
    assert [kernel_symbol(n) for n in names] == [
        "tp_kernel_double", "tp_kernel_Reserved", "tp_kernel_dunder", "tp_kernel_vadd",
        "tp_kernel_tp_x", "tp_kernel_exp"]
    assert not any(safe(n) for n in ("int", "_Foo", "__x", "a__b", "x_", "int32_t", "TP_NT",
                                      "threadIdx", "é"))


@pytest.mark.parametrize("kernel,args,check", CASES, ids=IDS)
def test_cpu_backend_both_modes(kernel, args, check):
    modes = ("interpret", "fast") if kernel.name in FAST_ONLY else MODES
    for mode, out in run_everywhere((2,), kernel, args, modes).items():
        for got, want in zip(*[iter(check(out))] * 2):
            np.testing.assert_array_equal(got, want, err_msg=mode)


@pytest.mark.parametrize("kernel,args,check", CASES, ids=IDS)
def test_nvrtc_compiles_and_names_the_symbol(kernel, args, check):
    ck = compile_for_args(kernel, args)
    cubin = compile_cubin(ck.compile_source(), "sm_90", ck.name)
    info = kernel_info(cubin.data, kernel_symbol(kernel.name))
    assert len(info.params) == len(ck.emitted.params)


def test_the_gpu_path_finds_the_renamed_symbol():
    from fake_driver import FakeDriver, cuda_array
    a, b = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    outs = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with FakeDriver() as drv:
        ct.launch(None, (2,), double, tuple(cuda_array(x) for x in (a, b) + outs))
    assert [launch.kernel for launch in drv.launches] == ["tp_kernel_double"]
    np.testing.assert_array_equal(outs[0], 2 * a + b - 1)


@ct.kernel
def gather_from(int, _Idx, out__):
    i = ct.load(_Idx, (0,), (8,))
    ct.store(out__, (0,), ct.gather(int, i, check_bounds=False))


def test_renamed_arrays_keep_their_extents():
    """The CPU's address check finds an array's extents by its C++ name (`<name>_shape_<d>`):
    a renamed array's extents are renamed with it, so a valid gather from it passes."""
    a, idx, out = np.arange(16, dtype=np.float32), np.arange(8, dtype=np.int32)[::-1].copy(), \
        np.zeros(8, np.float32)
    for mode, got in run_everywhere((1,), gather_from, (a, idx, out)).items():
        np.testing.assert_array_equal(got[2], a[idx], err_msg=mode)
