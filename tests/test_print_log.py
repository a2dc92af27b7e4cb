"""Print ops on the CUDA C++ backend (launch/print_log.py): every print op of every block is one
binary record in the kernel's print log, written by the same runtime code on the GPU and on the
CPU (runtime.h: print_record), and formatted after the launch by the host with the interpreter's
formatter. Here the GPU path runs on the fake driver (tests/fake_driver.py): NVRTC's cubin
defines the log, the CPU build of the same source writes the records, GpuPlan reads them
through the driver seam. The outputs are compared with the CPU backend's and the interpreter's."""
import dataclasses
import struct

import numpy as np
import pytest

import tilepy as ct
from fake_driver import FakeDriver, cuda_array
from guarded import MODES, launch
from tilepy.api.compiler import compile_for_args
from tilepy.launch import print_log
from tilepy.launch.cubin_info import symbols
from tilepy.launch.nvrtc import compile_cubin


@ct.kernel
def rows(x):
    b = ct.bid(0)
    t = ct.load(x, (b, 0), (1, 32))
    ct.printf("block %d: %d | sum %d\n", b, t, ct.sum(t))


@ct.kernel
def kinds(h, g, l, u):
    a = ct.load(h, (0,), (4,))
    b = ct.load(g, (0,), (4,)).astype(ct.bfloat16)
    c = ct.load(l, (0,), (4,))
    d = ct.load(u, (0,), (4,))
    ct.printf("h=%.3f g=%g m=%d l=%d u=%u x=%x\n", a, b, a > 1.0, c, d, d)
    ct.print("scalars", ct.bid(0), ct.sum(a.astype(ct.float32)), sep="|")


def _rows_args():
    return (np.arange(64 * 32, dtype=np.int32).reshape(64, 32) % 97,)


def _kinds_args():
    return (np.array([0.5, 1.25, -3.0, 1e4], np.float16),
            np.array([1.5, -0.1, 3e38, 7], np.float32),
            np.array([-2**40, 2**40, -1, 0], np.int64),
            np.array([0, 1, 2**32 - 1, 2**31], np.uint32))


def _on_gpu(args):
    return tuple(cuda_array(a, "dlpack") for a in args)


def _out(capfd, kernel, grid, args, where):
    capfd.readouterr()
    if where == "gpu":
        with FakeDriver():
            ct.launch(None, grid, kernel, _on_gpu(args))
    else:
        launch(grid, kernel, args, where)
    return capfd.readouterr()


@pytest.mark.parametrize("kernel,args,grid", [(rows, _rows_args(), (64,)),
                                              (kinds, _kinds_args(), (3,))], ids=["rows", "kinds"])
def test_the_gpu_prints_what_the_cpu_and_the_interpreter_print(capfd, monkeypatch, kernel, args,
                                                               grid):
    """Each print op comes out whole (one line per op per block, even with 4 CPU workers racing),
    and the GPU path's text is the CPU backend's and the interpreter's, line for line."""
    monkeypatch.setenv("TILEPY_CPU_WORKERS", "4")
    outs = {w: _out(capfd, kernel, grid, args, w).out for w in MODES + ("gpu",)}
    lines = {w: sorted(o.splitlines()) for w, o in outs.items()}
    assert lines["gpu"] == lines["fast"] == lines["faithful"] == lines["interpret"]
    if kernel is rows:
        x = args[0]
        assert lines["gpu"] == sorted(
            f"block {b}: [[{', '.join(map(str, x[b]))}]] | sum {x[b].sum()}" for b in range(64))
    else:
        assert "h=[0.500, 1.250, -3.000, 10000.000] g=[1.5, -0.100098, 3.00406e+38, 7] " \
               "m=[0, 1, 0, 1] l=[-1099511627776, 1099511627776, -1, 0] " \
               "u=[0, 1, 4294967295, 2147483648] x=[0, 1, ffffffff, 80000000]" in lines["gpu"]


def test_records_of_one_block_keep_their_order_on_the_gpu(capfd):
    out = _out(capfd, kinds, (1,), _kinds_args(), "gpu").out.splitlines()
    assert [line[:2] for line in out] == ["h=", "sc"]


@pytest.mark.parametrize("where", ["fast", "faithful", "gpu"])
def test_a_full_log_drops_whole_records_and_says_how_many(capfd, monkeypatch, where):
    """64 records of 24 + 8 + 128 + 8 bytes (head; block id, the 1x32 tile and its sum, each
    padded to 8) in a log of 1000 bytes: 5 fit; the other 59 are counted, none is cut; the next
    launch is whole."""
    monkeypatch.setattr(print_log, "CAPACITY", 1000)
    got = _out(capfd, rows, (64,), _rows_args(), where)
    lines = got.out.splitlines()
    assert len(lines) == 5
    x = _rows_args()[0]
    whole = {f"block {b}: [[{', '.join(map(str, x[b]))}]] | sum {x[b].sum()}" for b in range(64)}
    assert set(lines) <= whole
    assert ("kernel 'rows' printed more than its print log holds (1000 bytes): 59 print "
            "record(s) of this launch were dropped after the 5 shown") in got.err
    monkeypatch.setattr(print_log, "CAPACITY", print_log.LOG_BYTES)
    again = _out(capfd, rows, (64,), _rows_args(), where)
    assert sorted(again.out.splitlines()) == sorted(whole) and "dropped" not in again.err


def test_the_log_is_a_global_of_the_cubin_sized_as_the_host_reads_it():
    """NVRTC's cubin defines `tp_print_log` (header + TP_PRINT_LOG_BYTES, zero-filled: no file
    size) and `tp_print_ops` with C names, as cuLibraryGetGlobal looks them up; the kernel
    calls no device printf (`vprintf`, which a kernel with assertions does call)."""
    for (kernel, args), arch in [((rows, _rows_args()), "sm_80"), ((rows, _rows_args()), "sm_90"),
                                 ((kinds, _kinds_args()), "sm_90")]:
        ck = compile_for_args(kernel, args)
        cubin = compile_cubin(ck.compile_source(), arch, ck.name)
        syms = symbols(cubin.data)
        assert syms[print_log.LOG] == print_log.HEADER + print_log.LOG_BYTES
        assert syms[print_log.OPS] > 0 and len(cubin.data) < 1 << 20
        assert "vprintf" not in syms


def test_a_corrupt_record_is_reported_not_misread():
    ops = print_log.PrintOps('[["v=%d\\n", [["i32", []]]]]')
    good = struct.pack("<6I", 32, 0, 0, 0, 0, 0) + struct.pack("<iI", 7, 0)
    bad = struct.pack("<6I", 40, 0, 1, 0, 0, 0) + bytes(16)
    text, n = ops.format(good + bad + good)
    assert n == 1 and text == "v=7\n[tilepy: print log record at byte 32 is corrupt; the rest is " \
                              "not shown]\n"


@pytest.mark.parametrize("arch", ["cpu", "sm_90"])
def test_ahead_of_time_compiled_kernels_print_through_their_log(capfd, arch):
    """A saved kernel carries its print-op table inside its code (the cubin or the library)."""
    x = _rows_args()[0][:4]
    want = sorted(f"block {b}: [[{', '.join(map(str, x[b]))}]] | sum {x[b].sum()}" for b in range(4))
    capfd.readouterr()
    if arch == "cpu":
        rows.compile(x, arch=arch).launch(None, (4,), (x,))
    else:
        with FakeDriver():                  # (it runs the cubins NVRTC made while installed)
            rows.compile(x, arch=arch).launch(None, (4,), (cuda_array(x),))
    assert sorted(capfd.readouterr().out.splitlines()) == want


@ct.kernel
def hex_floats(x):
    t = ct.load(x, (0,), (2,))
    ct.printf("%a %A %.1a %+012.2a|%-9a|%#.0a\n", t, 1.5, 1.96875, -0.1, 0.0, 8.0)


@pytest.mark.parametrize("where", ["interpret", "fast"])
def test_hex_float_conversions_print_as_c_printf_does(capfd, where):
    """%a / %A (C99's hex floats, which Python's % lacks): glibc's text, the shortest digits or
    a precision's, rounded to nearest even (1.96875 = 0x1.f8p+0 to one digit: 0x2.0p+0)."""
    out = _out(capfd, hex_floats, (1,), (np.array([8.0, -0.375], np.float32),), where).out
    assert out == "[0x1p+3, -0x1.8p-2] 0X1.8P+0 0x2.0p+0 -0x001.9ap-4|0x0p+0   |0x1.p+3\n"


@ct.kernel
def tuples(x):
    t = ct.load(x, (0,), (2,))
    msg = f"it's {ct.bid(0)}"
    ct.print(x.shape, (t,), f"shape = {x.shape}")
    ct.print((msg, ct.bid(0)), f"nested: {((x.shape, '%d'), 0)}")
    print(f"A({t})" + f"B({ct.bid(0) + 3})")
    w = 6
    ct.print(f"[{ct.bid(0):{w}}]")


@pytest.mark.parametrize("where", ["interpret", "fast"])
def test_tuples_print_as_python_shows_them(capfd, where):
    """A tuple prints as Python's str of it, its runtime values by value (an array's shape,
    a tile), strings quoted as repr quotes them; f-strings concatenate; a format spec may be a
    constant the f-string computes (cuTile refuses that)."""
    out = _out(capfd, tuples, (1,), (np.array([8.0, -0.375], np.float32),), where).out
    assert out.splitlines() == [
        "(2,) ([8.000000, -0.375000],) shape = (2,)",
        "(\"it's 0\", 0) nested: (((2,), '%d'), 0)",
        "A([8.000000, -0.375000])B(3)", "[     0]"]


@dataclasses.dataclass(frozen=True)
class Plain:
    x: object
    hidden: object = dataclasses.field(repr=False)
    name: object = "p"


@dataclasses.dataclass(frozen=True)
class Shown:
    x: object

    def __str__(self):
        return f"S<{self.x}>"

    def __repr__(self):
        return f"R<{self.x + 1}>"


@dataclasses.dataclass(frozen=True, repr=False)
class Hidden:
    x: object

    def __format__(self, spec):
        return "never"


@ct.kernel
def records(x):
    t = ct.load(x, (0,), (2,))
    p = Plain(t, t, "hi")
    print(p, (p,))
    ct.print(Shown(t), (Shown(t),), f"[{Shown(t)}|{Shown(t)!r}]", str(Shown(t)) + repr(Shown(t)))
    print(Hidden(t), (Hidden(t), Plain((t, 2), 0)))


@pytest.mark.parametrize("where", ["interpret", "fast"])
def test_dataclass_objects_print_as_python_shows_them(capfd, where):
    """A dataclass object prints as cuTile (and Python) shows it: the generated repr with its
    tiles by value (fields with repr=False left out, strings quoted), a class's own __str__ and
    __repr__ traced (str for print() and f-strings, repr inside tuples and for !r), and a class
    with repr=False and no __repr__ as `<Name object>` (its __format__ not used by print)."""
    out = _out(capfd, records, (1,), (np.array([3, -4], np.int32),), where).out
    assert out.splitlines() == [
        "Plain(x=[3, -4], name='hi') (Plain(x=[3, -4], name='hi'),)",
        "S<[3, -4]> (R<[4, -3]>,) [S<[3, -4]>|R<[4, -3]>] S<[3, -4]>R<[4, -3]>",
        "<Hidden object> (<Hidden object>, Plain(x=([3, -4], 2), name='p'))"]


def test_a_dataclass_with_its_own_format_is_refused_in_an_f_string():
    @ct.kernel
    def formatted(x):
        s = f"{Hidden(ct.load(x, (0,), (2,)))}"
        ct.print(s)

    with pytest.raises(ct.TileTypeError, match=r"Formatting dataclass values with custom "
                       r"__format__\(\) is not supported[\s\S]*s = f"):
        launch((1,), formatted, (np.zeros(2, np.int32),), "fast")
