"""Interpreting Python kernels, control flow and the debugging aids (on_op, print_tko, assert)."""
import os
import pathlib

import numpy as np
import pytest
from definitions import load as tutorial
from kernels_util import marker_loc

import tilepy as ct
import tilepy.interpret as interp
from tilepy.errors import TileValueError
from tilepy.ir import OPS
from tilepy.ir.parser import parse_module
from tilepy.ir.samples import VALID
from tilepy.types import NUMPY_DTYPE, PtrType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rng = np.random.default_rng(11)


@ct.kernel
def axpy(x, y, out, a, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i,), (TILE,)) * a + ct.load(y, (i,), (TILE,))  # LINE-AXPY
    ct.store(out, (i,), t)


def test_every_ir_op_is_supported():
    assert set(OPS) <= interp.SUPPORTED_OPS


# samples whose op makes no event of its own: an op the interpreter must have run instead
# (terminators: the op of their region; module-level ops: none, the entry is empty)
RAN_INSTEAD = {"break": "loop", "continue": "constant", "loop": "if", "return": "constant",
               "yield": "if", "entry": None, "global": None, "module": None}


@pytest.mark.parametrize("name", sorted(VALID))
def test_every_spec_sample_runs(name):
    """The IR's one valid sample per op (tilepy.ir.samples) executes, loops bounded: the op
    itself runs (an on_op event), and its tile results have the declared shape and dtype."""
    m = parse_module(VALID[name].text())
    entry = m.entry()
    args = []
    for a in entry.body.block.args:
        e = a.type.elem
        args.append(np.zeros(64, NUMPY_DTYPE[e.pointee]) if isinstance(e, PtrType) else
                    (True if e.name == "i1" else 1 if e.is_int else 1.0))
    events = []
    try:
        interp.run(m, 1, args, max_loop_iterations=20, on_op=events.append)
    except TileValueError as err:        # the samples' loops never break
        assert name in ("loop", "continue") and "no break" in str(err)
    ran = {e.op.name for e in events}
    if name in RAN_INSTEAD:
        assert RAN_INSTEAD[name] is None and not events or RAN_INSTEAD[name] in ran, ran
        return
    assert name in ran, f"{name} never ran (ran: {sorted(ran)})"
    ev = next(e for e in events if e.op.name == name)
    for value, out in zip(ev.op.results, ev.outputs):
        t = value.type
        if isinstance(out, np.ndarray) and hasattr(t, "shape") and not isinstance(
                getattr(t, "elem", None), PtrType):
            assert out.shape == tuple(t.shape), (name, out.shape, t)
            if t.elem in NUMPY_DTYPE and t.elem.name != "tf32":
                assert out.dtype.itemsize == NUMPY_DTYPE[t.elem].itemsize, (name, out.dtype, t)


def test_tutorials_match_the_cpu_backend():
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    ref, got = np.zeros_like(a), np.zeros_like(a)
    va = tutorial("01_vector_add").vector_add
    ct.launch(None, (4,), va, (a, b, ref, 256))
    interp.launch((4,), va, (a, b, got, 256))
    assert np.array_equal(got, ref)
    x = rng.standard_normal((37, 100)).astype(np.float16)
    ref, got = np.zeros_like(x), np.zeros_like(x)
    sm = tutorial("02_softmax").softmax
    ct.launch(None, (37,), sm, (x, ref, 128))
    interp.launch((37,), sm, (x, got, 128))
    assert np.abs(got.astype(np.float32) - ref.astype(np.float32)).max() <= 2e-3
    A = rng.standard_normal((70, 50)).astype(np.float16)
    B = rng.standard_normal((50, 40)).astype(np.float16)
    C = np.zeros((70, 40), np.float32)
    interp.launch((3, 2), tutorial("03_matmul").matmul, (A, B, C, 32, 32, 16))
    exact = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(C - exact).max() <= 1e-5 * np.abs(exact).max()


@ct.kernel
def racy_sum(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.store(out, (0,), ct.sum(t).reshape((1,)))  # RACE


def test_a_race_between_tile_blocks_names_the_argument_and_the_store():
    x = np.ones(64, np.float32)
    with pytest.raises(TileValueError, match=r"data race.* byte 0 of argument \d+ \(out") as e:
        interp.launch((4,), racy_sum, (x, np.zeros(1, np.float32), 16))
    assert (e.value.loc.line, e.value.loc.col) == marker_loc(__file__, "RACE", "ct.store")


def test_launch_backend_and_environment_switch(monkeypatch):
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    seen = []
    ct.launch(None, (1,), axpy, (x, x, out, 2.0, 128), backend="interpret")
    assert np.array_equal(out, x * 2 + x)
    import tilepy.interpret.kernel as K
    real = K.run_compiled
    monkeypatch.setattr(K, "run_compiled", lambda *a, **k: (seen.append(1), real(*a, **k)))
    monkeypatch.setenv("TILEPY_INTERPRET", "1")
    out[:] = 0
    ct.launch(None, (1,), axpy, (x, x, out, 3.0, 128))
    assert seen and np.array_equal(out, x * np.float32(3) + x)


def test_on_op_sees_values_at_the_users_line():
    x = np.arange(8, dtype=np.float32)
    events = []
    interp.launch((1,), axpy, (x, x, np.zeros_like(x), 2.0, 8), on_op=events.append)
    muls = [e for e in events if e.op.name == "mulf"]
    assert len(muls) == 1
    src = pathlib.Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(src, 1) if t.rstrip().endswith("LINE-AXPY"))
    assert muls[0].loc.line == line and muls[0].loc.file == __file__
    assert np.array_equal(muls[0].outputs[0], x * 2) and muls[0].block == (0, 0, 0)
    assert "mulf" in str(muls[0]) and f":{line}:" in str(muls[0])


def test_print_ops_and_print_tko_write_to_stdout(capsys):
    interp.launch((1,), axpy, (np.ones(4, np.float32), np.ones(4, np.float32),
                               np.zeros(4, np.float32), 2.0, 4), on_op=interp.print_ops)
    assert "[block (0, 0, 0)]" in capsys.readouterr().out
    m = parse_module('cuda_tile.module @m {\nentry @k(%n: tile<i32>) {\n'
                     '%t = iota : tile<4xi32>\n%c = constant <f32: 0.5> : tile<f32>\n'
                     '%x, %y, %z = get_tile_block_id : tile<i32>\n'
                     '%r = print_tko "block %d: %3d | %.2f | %u %%\\n", %x, %t, %c, %n : '
                     'tile<i32>, tile<4xi32>, tile<f32>, tile<i32> -> token\nreturn\n}\n}\n')
    interp.run(m, 2, [-1])
    assert capsys.readouterr().out == ("block 0: [  0,   1,   2,   3] | 0.50 | 4294967295 %\n"
                                       "block 1: [  0,   1,   2,   3] | 0.50 | 4294967295 %\n")


def test_assert_prints_every_failing_element_and_fails_the_launch(capfd):
    m = parse_module('cuda_tile.module @m {\nentry @k() {\n%t = iota : tile<4xi32>\n'
                     '%two = constant <i32: 2> : tile<4xi32>\n'
                     '%c = cmpi less_than %t, %two, signed : tile<4xi32> -> tile<4xi1>\n'
                     'assert %c, "small indices only" : tile<4xi1>\nreturn\n}\n}\n')
    with pytest.raises(interp.KernelAssertionError, match=r"4 assertion failure\(s\); the first: "
                                                          r"small indices only \(tile element 2, "
                                                          r"tile block \(0, 0, 0\)\)"):
        interp.run(m, 2, [])
    err = capfd.readouterr().err
    assert "small indices only (tile element 3, block (1, 0, 0))" in err


LOOP = """cuda_tile.module @m {
entry @k(%p: tile<ptr<i32>>) {
%zero = constant <i32: 0> : tile<i32>
%one = constant <i32: 1> : tile<i32>
%ten = constant <i32: 10> : tile<i32>
%r, %s = loop iter_values(%i = %zero, %acc = %zero) : tile<i32>, tile<i32> -> tile<i32>, tile<i32> {
  %done = cmpi greater_than_or_equal %i, %ten, signed : tile<i32> -> tile<i1>
  if %done {
    break %i, %acc : tile<i32>, tile<i32>
  }
  %odd = andi %i, %one : tile<i32>
  %isodd = cmpi equal %odd, %one, signed : tile<i32> -> tile<i1>
  %next = addi %i, %one : tile<i32>
  if %isodd {
    continue %next, %acc : tile<i32>, tile<i32>
  }
  %acc2 = addi %acc, %i : tile<i32>
  continue %next, %acc2 : tile<i32>, tile<i32>
}
%three = constant <i32: 3> : tile<i32>
%f = for %j in (%zero to %ten, step %three) : tile<i32> iter_values(%a = %s) -> (tile<i32>) {
  %b = addi %a, %j : tile<i32>
  continue %b : tile<i32>
}
%k = store_ptr_tko weak %p, %f : tile<ptr<i32>>, tile<i32> -> token
return
}
}
"""


def test_loops_break_and_continue_from_nested_ifs():
    out = np.zeros(1, np.int32)
    interp.run(parse_module(LOOP), 1, [out])
    assert out[0] == (0 + 2 + 4 + 6 + 8) + (0 + 3 + 6 + 9)


def test_reductions_and_scans_match_numpy():
    @ct.kernel
    def red(x, s, m, TILE: ct.Constant[int]):
        t = ct.load(x, (0, 0), (TILE, TILE))
        ct.store(s, (0,), ct.sum(t, axis=1))
        ct.store(m, (0,), ct.max(t, axis=0))
    x = rng.integers(-50, 50, (8, 8)).astype(np.int32)
    s, m = np.zeros(8, np.int32), np.zeros(8, np.int32)
    interp.launch((1,), red, (x, s, m, 8))
    assert np.array_equal(s, x.sum(axis=1)) and np.array_equal(m, x.max(axis=0))
    scan = parse_module(
        "cuda_tile.module @m {\nentry @k(%p: tile<ptr<i32>>) {\n%t = iota : tile<8xi32>\n"
        "%r = scan %t dim=0 reverse=true identities=[0 : i32] : tile<8xi32> -> tile<8xi32>\n"
        "(%x: tile<i32>, %a: tile<i32>) {\n%y = addi %x, %a : tile<i32>\nyield %y : tile<i32>\n}\n"
        "%p1 = reshape %p : tile<ptr<i32>> -> tile<1xptr<i32>>\n"
        "%ps = broadcast %p1 : tile<1xptr<i32>> -> tile<8xptr<i32>>\n"
        "%o = offset %ps, %t : tile<8xptr<i32>>, tile<8xi32> -> tile<8xptr<i32>>\n"
        "%k = store_ptr_tko weak %o, %r : tile<8xptr<i32>>, tile<8xi32> -> token\nreturn\n}\n}\n")
    out = np.zeros(8, np.int32)
    interp.run(scan, 1, [out])
    assert out.tolist() == np.cumsum(np.arange(8)[::-1])[::-1].tolist()


def _cutile_cases():
    from test_cutile_suite import CASES
    return CASES


@pytest.mark.parametrize("name", sorted(_cutile_cases()))
def test_cutile_suite_in_the_interpreter(name):
    """The cuTile compatibility kernels (tests/cutile_kernels) match numpy in the interpreter."""
    kernel, grid, args, check = _cutile_cases()[name]()
    interp.launch(grid, kernel, args)
    check()


def test_an_ir_module_runs_in_the_interpreter_and_on_the_cpu_backend():
    """compiler.compile_module: a module built without Python goes to the CPU backend too."""
    from tilepy.api.compiler import compile_module
    text = ("cuda_tile.module @m {\nentry @k(%p: tile<ptr<f32>>, %s: tile<f32>) {\n"
            "%tv = make_tensor_view %p, shape = [16], strides = [1] : tensor_view<16xf32, strides=[1]>\n"
            "%pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<16xf32, strides=[1]>>\n"
            "%c0 = constant <i32: 0> : tile<i32>\n"
            "%t, %k = load_view_tko weak %pv[%c0] : partition_view<tile=(16), tensor_view<16xf32, "
            "strides=[1]>>, tile<i32> -> tile<16xf32>, token\n"
            "%s1 = reshape %s : tile<f32> -> tile<1xf32>\n"
            "%sb = broadcast %s1 : tile<1xf32> -> tile<16xf32>\n%r = fma %t, %sb, %t : tile<16xf32>\n"
            "%k2 = store_view_tko weak %r, %pv[%c0] token = %k : tile<16xf32>, partition_view<tile=(16), "
            "tensor_view<16xf32, strides=[1]>>, tile<i32> -> token\nreturn\n}\n}\n")
    a = rng.standard_normal(16).astype(np.float32)
    ref, got = a.copy(), a.copy()
    interp.run(parse_module(text), 1, [ref, 0.5])
    compile_module(parse_module(text)).run_cpu(1, [got, 0.5])
    assert np.array_equal(ref, got) and np.array_equal(ref, (a * np.float32(1.5)).astype(np.float32))
