"""The C warm launch path (tilepy/launch/warm.py, warm.cpp) against the Python one it shortens.

The Python path is the reference: its signature (dispatch.signature) holds every fact a plan
depends on, and the C key must partition calls the same way -- never coarser (a plan run for
facts it was not made for), and not finer for ordinary arguments (the C path would never serve
them). Randomized arguments: dtypes, offsets (alignment), strides, transposes, 2-D views,
0-size and read-only arrays, torch tensors, scalars and constants; the overlap flags over
random byte ranges (touching, nested, identical, empty); and one kernel launched through a
random sequence of aliasing and non-aliasing calls on both paths, which must compile, file and
compute the same. The per-test seam (`warm_path`, tests/conftest.py) runs the launch tests of
test_launch, test_fake_driver and test_specialization_facts both ways."""
import contextlib
import dataclasses
import random

import numpy as np
import pytest

import tilepy as ct
from tilepy.errors import TileLaunchError, TileUnsupportedFeatureError
from tilepy.host.intake import disjoint_flags
from tilepy.launch import dispatch, warm


@pytest.fixture(scope="module")
def m():
    mod = warm.module()
    if mod is None:
        pytest.skip(f"the C warm launch path is not available here: {warm.why()}")
    return mod


def _families() -> list:
    """Views of a few buffers in families that differ in one fact each: offsets 0-3 elements
    (the base address's alignment), read-only, strides of one shape (step 2, a transpose),
    extents; 1-D, 2-D and 0-size, of every dtype class."""
    out = []
    for dt in (np.float32, np.float64, np.int8, np.int32, np.float16, np.bool_, np.uint64):
        b = np.zeros(112, dt)
        views = [lambda o, s: b[o:o + 16 * s:s],                       # one shape, two strides
                 lambda o, s: b[o:o + 48].reshape(6, 8) if s == 1 else b[o:o + 48].reshape(8, 6).T,
                 lambda o, s: b[o:o + 96].reshape(6, 16)[:, ::s], lambda o, s: b[o:o + 16 * s]]
        for view in views:
            family = []
            for off in range(4):
                for step in (1, 2):
                    family.append(view(off, step))
                    ro = view(off, step).view()
                    ro.flags.writeable = False
                    family.append(ro)
            out.append(family)
        out.append([b[o:o] for o in range(4)] + [b[:0].reshape(0, 4)])      # 0-size
    return out


def _scalars_and_constants():
    return [1, 7, 1.5, -0.0, 0.0, True, np.int64(3), np.float32(2.0), np.uint8(5)], \
        [16, 32, True, False, None, 0.0, -0.0, 2.5, "rows", "cols", ct.float32, ct.float16]


@dataclasses.dataclass(frozen=True)
class _Pair:
    x: object
    n: object


@dataclasses.dataclass(frozen=True)
class _Other:
    x: object
    n: object


def _keys_agree_with_signatures(m, table, layout, values, consts):
    """The C path's key of every (value, constant) call is equal to another's exactly where
    the Python path's signature is."""
    calls = [(v, c) for v in values for c in consts]
    found = [(dispatch.signature(a, layout)[0], m.key(a, table)) for a in calls]
    assert all(key is not None for _, key in found)
    for i in range(len(calls)):
        for j in range(i):
            assert (found[i][1] == found[j][1]) == (found[i][0] == found[j][0]), (calls[i],
                                                                                calls[j])


def test_dataclass_keys_partition_calls_as_the_python_signature(m):
    """Dataclass arguments (calling convention 3), of a value parameter and of a Constant one:
    equal C keys <=> equal Python signatures (the class, each field's facts, nested ones, each
    constant's value); a launch with new field values is served by the C path and computes
    with them."""
    buf = np.zeros(64, np.float32)
    values = [_Pair(buf[:16], 1), _Other(buf[:16], 1), _Pair(buf[1:17], 1), _Pair(buf[:16], 1.5),
              _Pair(buf[:16], (1, 2)), _Pair(_Pair(buf[:16], 1), 2), _Pair(buf[:32:2], 1),
              (_Pair(buf[:16], 1), 1)]
    consts = [_Pair(16, 1), _Pair(16, 2), _Other(16, 1), _Pair(16, (1.0, None)), 16]
    layout = (False, True)
    table = m.Table(layout)
    for cls in (_Pair, _Other):
        assert m.record(cls, dispatch.record_names(cls))
    _keys_agree_with_signatures(m, table, layout, values, consts)

    @ct.kernel
    def scaled(p, out, c: ct.Constant):
        ct.store(out, (0,), ct.load(p.x, (0,), (c.x,)) * p.n + c.n)
    a, out = np.ones(16, np.float32), np.zeros(16, np.float32)
    ct.launch(None, (1,), scaled, (_Pair(a, 1.0), out, _Pair(16, 0.5)))
    before = m.served()
    for k in range(4):
        ct.launch(None, (1,), scaled, (_Pair(a, float(k)), out, _Pair(16, 0.5)))
        np.testing.assert_array_equal(out, k + 0.5)
    assert m.served() - before >= 2


def test_keys_partition_calls_as_the_python_signature(m):
    """Equal C keys <=> equal Python signatures, over random argument tuples and their
    neighbours (one argument replaced by one of its family: another offset, step, writability,
    dtype class, scalar type or constant value)."""
    rng = random.Random(1234)
    families = _families()
    scalars, consts = _scalars_and_constants()
    try:
        import torch
        from tilepy.host.intake import from_torch
        base = torch.zeros(96)
        tensors = [base[k:k + 16] for k in range(4)] + [base[:32:2], torch.zeros(8, 4).T,
                                                         torch.zeros(0), torch.ones(4)._neg_view()]
        from_torch(tensors[0])                  # intake has met torch (as the first launch does)
        warm._sync(m)
        families.append(tensors)
    except ImportError:
        pass
    layout = (False, False, False, True)
    table = m.Table(layout)

    def pick(k, near=None):
        if k == 2:
            return rng.choice(scalars)
        if k == 3:
            return rng.choice(consts)
        return rng.choice(near if near is not None else rng.choice(families))

    calls = []
    for _ in range(150):
        a = tuple(pick(k) for k in range(4))
        k = rng.randrange(4)
        near = next((f for f in families if any(x is a[k] for x in f)), None) if k < 2 else None
        calls += [a, a[:k] + (pick(k, near),) + a[k + 1:]]
    found = [(dispatch.signature(a, layout), m.key(a, table)) for a in calls]
    for (sig, key), args in zip(found, calls):
        assert sig is not None and key is not None, args     # every one has a key on both paths
    for i in range(0, len(calls), 2):           # each call and its neighbour
        same_sig = found[i][0][0] == found[i + 1][0][0]
        assert (found[i][1] == found[i + 1][1]) == same_sig, (calls[i], calls[i + 1])
    for i in range(len(calls)):                 # and all pairs
        for j in range(i):
            same_sig = found[i][0][0] == found[j][0][0]
            assert (found[i][1] == found[j][1]) == same_sig, (calls[i], calls[j])


def test_keys_hold_what_the_python_path_keys_by(m):
    """One fact changed at a time gives another key: dtype, alignment, a stride, an extent,
    writability, a scalar's type, a constant's value (0.0 and -0.0 too)."""
    layout = (False, False, True)
    table = m.Table(layout)
    buf = np.zeros(64, np.float32)
    base = (buf[:16], 1, 16)
    ro = buf[:16].view()
    ro.flags.writeable = False
    changed = [(buf.astype(np.float64)[:16], 1, 16), (buf[1:17], 1, 16), (buf[:32:2], 1, 16),
               (buf[:17], 1, 16), (ro, 1, 16), (buf[:16], 1.0, 16), (buf[:16], np.int32(1), 16),
               (buf[:16], 1, 32), (buf[:16], 1, True), (buf[:16], 1, "16")]
    k0 = m.key(base, table)
    assert m.key((buf[:16], 99, 16), table) == k0          # scalar values and pointers are not keys
    assert m.key((np.zeros(16, np.float32), 1, 16), table) == k0
    keys = [m.key(c, table) for c in changed]
    assert len(set(keys + [k0])) == len(changed) + 1
    fz = m.Table((True,))
    assert m.key((0.0,), fz) != m.key((-0.0,), fz)
    assert m.key((np.zeros(3),), m.Table((False, False))) is None      # another arity: Python's


def test_tuple_keys_partition_calls_as_the_python_signature(m):
    """Tuple arguments (cuTile's aggregates) of a value parameter and of a Constant one: equal
    C keys <=> equal Python signatures (structure, each item's facts, each constant's value);
    a tuple annotation's parameter is the Python path's."""
    buf = np.zeros(64, np.float32)
    values = [(buf[:16], 1), (buf[1:17], 1), (buf[:16], 1.5), ((buf[:16],), 1), (buf[:16], (1,)),
              (buf[:16], (1, 2)), (buf[:32:2], (1, 2)), ((), 1), ((buf[:16], 3), 1),
              (buf[:16], ((1,), 2))]
    consts = [(16,), (32,), (16, 16), ((16,), 8), ("rows", None), (16.0,)]
    layout = (False, True)
    table = m.Table(layout)
    _keys_agree_with_signatures(m, table, layout, values, consts)
    assert m.key(((1, 2), (16,)), m.Table((2, True))) is None      # a tuple annotation

    @ct.kernel
    def scaled(pair, out, coeffs):
        t = ct.load(pair[0], (0,), (16,)) + ct.load(pair[1], (0,), (16,))
        ct.store(out, (0,), t * coeffs[0] + coeffs[1][0])
    a, b, out = np.ones(16, np.float32), np.ones(16, np.float32), np.zeros(16, np.float32)
    ct.launch(None, (1,), scaled, ((a, b), out, (1.0, (0.0,))))
    before = m.served()
    for k in range(4):
        ct.launch(None, (1,), scaled, ((a, b), out, (float(k), (0.5,))))
        np.testing.assert_array_equal(out, 2 * k + 0.5)
    assert m.served() - before >= 3


def test_unknown_arguments_are_the_python_paths(m):
    """Lists, subclasses, objects, numpy scalars as constants, huge ints: no key (MISS)."""
    class Sub(np.ndarray):
        pass
    a = np.zeros(4, np.float32)
    t = m.Table((False, True))
    for args in [([a], 1), (a.view(Sub), 1), (object(), 1), (a, np.int32(1)), (a, 2**70),
                 (a, [1])]:
        assert m.key(args, t) is None, args


def test_overlap_flags_match_intake(m):
    rng = random.Random(99)
    for _ in range(2000):
        n = rng.randrange(0, 9)
        ranges = [(rng.randrange(0, 64) * 4, rng.choice((0, 4, 8, 16, 64, 128))) for _ in range(n)]
        if n > 1 and rng.random() < 0.3:
            ranges[1] = ranges[0]                                 # identical ranges
        assert m.disjoint(ranges) == disjoint_flags(ranges), ranges


@ct.kernel
def axpy(x, y, a, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)) * a + ct.load(y, (i,), (TILE,)))


def _run(calls, kernel):
    """Launch `kernel` on each call; per call what it compiled and filed, and the output."""
    out = []
    for pick, a in calls:
        x, y = pick()
        ct.launch(None, (x.shape[0] // 16,), kernel, (x, y, a, 16))
        out.append((len(kernel.cache), list(kernel.keys), y.copy()))
    return out


def test_both_paths_make_the_same_plans_over_random_calls(m):
    """One random sequence of disjoint, in-place and overlapping calls: the C path
    and the Python path compile the same specializations, at the same calls, and compute the
    same values; the C path serves the calls the Python one serves from a plan."""
    rng = random.Random(7)

    def picks():
        buf = np.arange(160, dtype=np.float32)
        other = np.ones(64, np.float32)
        return [lambda: (buf[:64], other), lambda: (buf[:64], buf[:64]),        # in place
                lambda: (buf[:64], buf[32:96]), lambda: (buf[16:80], buf[80:144]),
                lambda: (other, buf[:64])]
    order = [(rng.randrange(5), rng.choice((1.0, 2.0, 0.5))) for _ in range(40)]

    def sequence():
        p = picks()
        return [(p[i], a) for i, a in order]
    with warm.python_only():
        py = _run(sequence(), axpy.replace_hints())
    before = m.served()
    c = _run(sequence(), axpy.replace_hints())
    served = m.served() - before
    assert [(n, keys) for n, keys, _ in c] == [(n, keys) for n, keys, _ in py]
    for (_, _, yc), (_, _, yp) in zip(c, py):
        np.testing.assert_array_equal(yc, yp)
    assert served >= 10                        # the C path served the repeated calls


def test_a_scalar_the_plan_cannot_hold_is_the_python_paths_error(m):
    """Out of range for the int32 parameter: the C path leaves it to the Python one, which
    raises the same located error as without the C path."""
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    k = axpy.replace_hints()
    for _ in range(3):
        ct.launch(None, (1,), k, (x, y, 2.0, 16))

    def err():
        with pytest.raises(TileUnsupportedFeatureError) as e:
            ct.launch(None, (1,), k, (x, y, 2.0, 2**40))
        return e.value
    got = [err()]
    with warm.python_only():
        got.append(err())
    assert str(got[0]) == str(got[1])


@ct.kernel
def checked(x):
    t = ct.load(x, (0,), (16,))
    ct.assert_(ct.sum(t) < 100.0, "sum too large")
    ct.store(x, (0,), t)


def test_launch_errors_are_the_same_on_both_paths(m, capfd):
    """A failed tile assertion found after the C path's launch: the same TileLaunchError, at
    the same user line, as the Python path's."""
    ok, bad = np.zeros(16, np.float32), np.full(16, 50.0, np.float32)
    k = checked.replace_hints()
    for _ in range(3):
        ct.launch(None, (1,), k, (ok,))
    errors = []
    for only in (False, True):
        before = m.served()
        with warm.python_only() if only else contextlib.nullcontext():
            with pytest.raises(TileLaunchError) as e:
                ct.launch(None, (1,), k, (bad,))      # SAME-LINE
        assert (m.served() > before) == (not only)
        errors.append(e.value)
    capfd.readouterr()
    assert type(errors[0]) is type(errors[1]) and str(errors[0]) == str(errors[1])
    assert errors[0].loc is not None and errors[0].loc == errors[1].loc
    assert "SAME-LINE" in (errors[0].loc.source_line or "")


def test_python_only_is_the_seam(m):
    """Inside warm.python_only() no launch is served by the C path; after it, they are again."""
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    k = axpy.replace_hints()
    ct.launch(None, (1,), k, (x, y, 1.0, 16))
    ct.launch(None, (1,), k, (x, y, 1.0, 16))          # the Python path files it for the C one
    before = m.served()
    with warm.python_only():
        assert warm.launch is None and warm.module() is None
        for _ in range(3):
            ct.launch(None, (1,), k, (x, y, 1.0, 16))
    assert m.served() == before
    ct.launch(None, (1,), k, (x, y, 1.0, 16))
    assert m.served() == before + 1
    np.testing.assert_array_equal(y, np.full(16, 6.0, np.float32))


def test_without_a_compiler_the_python_path_serves(monkeypatch):
    """No host compiler to build the extension: warm launches run on the Python path and
    `warm.why()` (the doctor's line) says why."""
    from tilepy.errors import TileCompileError
    from tilepy.launch import cpu
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    k = axpy.replace_hints()
    ct.launch(None, (1,), k, (x, y, 1.0, 16))          # compiled while the compiler is there

    def no_compiler():
        raise TileCompileError("no host C++ compiler found (a test's)")
    monkeypatch.setattr(warm, "_state", {})           # as in a new process
    monkeypatch.setattr(warm, "launch", None)
    monkeypatch.setattr(cpu, "host_compiler", no_compiler)
    for _ in range(3):
        ct.launch(None, (1,), k, (x, y, 1.0, 16))
    assert warm.launch is None and "no host C++ compiler found" in warm.why()
    np.testing.assert_array_equal(y, np.full(16, 4.0, np.float32))


# ----------------------------------------------------------------------------- torch reader
@pytest.fixture
def torch_m(m):
    """The module with torch met and the torch reader (warm_torch.cpp) in use."""
    torch = pytest.importorskip("torch")
    from tilepy.host.intake import from_torch
    from_torch(torch.zeros(1))
    warm._sync(m)
    if not warm._state.get("torch_reader"):
        pytest.skip(f"the torch reader is not available here: {warm.torch_why()}")
    return m, torch


@contextlib.contextmanager
def _attribute_reads(m):
    """The C path reading torch tensors through their attributes (the reader set aside)."""
    m.torch_reader(0, 0, 0, 0, ())
    try:
        yield
    finally:
        warm._state["types"] = None
        warm._sync(m)


def test_the_torch_reader_keys_as_the_attribute_reads(torch_m):
    """Per tensor, the reader's key words are the attribute reads' (dtype, device, negation
    bit, alignment, shape, strides), over views, dtypes, 0-size and 0-d tensors."""
    m, torch = torch_m
    base = torch.arange(96, dtype=torch.float32)
    tensors = [base, base[1:17], base[3:35:2], base[:48].reshape(6, 8).T, base[:0],
               torch.zeros((), dtype=torch.int64), base.to(torch.float16)[::3],
               base.to(torch.bfloat16), base.to(torch.bool), base.to(torch.uint8)[5:],
               base._neg_view(), base.reshape(4, 3, 8)[:, 1:, ::4], base.expand(2, 96)]
    table = m.Table((False, False))
    calls = [(a, b) for a in tensors for b in tensors[:4]]
    read = [m.key(c, table) for c in calls]
    with _attribute_reads(m):
        assert m.probe_torch(base) is None
        attrs = [m.key(c, table) for c in calls]
    assert read == attrs and None not in read
    assert len(set(read)) == len(calls)
    for t in tensors:
        ptr, shape, strides, _, kind, index, neg = m.probe_torch(t)
        assert (ptr, shape, strides, kind, index, neg) == (t.data_ptr(), tuple(t.shape),
                                                           t.stride(), 1, -1, int(t.is_neg()))


def test_the_torch_reader_declines_what_it_does_not_read(torch_m):
    """Sparse, meta and subclass tensors, and any tensor while a __torch_function__ mode is
    active (the attribute reads would go through it): the reader says nothing, and the key is
    the attribute reads' or none."""
    m, torch = torch_m
    from torch.overrides import TorchFunctionMode
    t = torch.zeros(8)
    table = m.Table((False,))
    assert m.probe_torch(torch.zeros(2, 2).to_sparse()) is None
    assert m.probe_torch(torch.zeros(4, device="meta")) is None
    assert m.key((torch.zeros(4, device="meta"),), table) is None        # intake explains
    assert m.key((torch.nn.Parameter(t),), table) is None
    class PassThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    key = m.key((t,), table)
    with PassThrough():
        assert m.probe_torch(t) is None
        assert m.key((t,), table) == key


@ct.kernel
def scale_into(x, y, a):
    ct.store(y, (0,), ct.load(x, (0,), (16,)) * a + ct.load(y, (0,), (16,)))


def test_a_tensor_changed_in_place_between_calls(torch_m):
    """The same tensor objects, changed between warm calls (another storage, strides, an
    alias of the output, a dtype): every call computes what the Python path computes, and
    makes the same plans."""
    m, torch = torch_m

    def sequence():
        x, y = torch.arange(16, dtype=torch.float32), torch.zeros(16)
        src = torch.arange(64, dtype=torch.float32)
        changes = [lambda: None, lambda: x.set_(src[8:24].clone()),
                   lambda: x.set_(src.untyped_storage(), 1, (16,), (2,)),      # a stride
                   lambda: x.set_(y),                                           # y itself
                   lambda: setattr(x, "data", torch.ones(16, dtype=torch.float64))]   # a dtype
        out = []
        k = scale_into.replace_hints()
        for change in changes:
            change()
            for _ in range(3):
                try:
                    ct.launch(None, (1,), k, (x, y, 2.0))
                    out.append((y.clone(), len(k.cache)))
                except ct.TileError as e:
                    out.append((str(e), len(k.cache)))
        return out
    with warm.python_only():
        py = sequence()
    before = m.served()
    c = sequence()
    assert m.served() - before >= 4                # (the third call of each change)
    for (vc, nc), (vp, np_) in zip(c, py):
        assert nc == np_
        assert vc == vp if isinstance(vp, str) else torch.equal(vc, vp)


def test_without_torch_headers_tensors_are_read_through_attributes(m, monkeypatch, tmp_path):
    """A torch without its C++ headers (or a failed build): the C path serves torch launches
    through the tensors' attributes, and `warm.torch_why()` says why."""
    torch = pytest.importorskip("torch")
    import types
    with pytest.raises(ImportError, match="ships no"):
        warm._torch_reader(types.SimpleNamespace(__file__=str(tmp_path / "__init__.py"),
                                                 __version__="0.0"))

    def no_headers(torch):
        raise ImportError("torch 0.0 ships no include/c10/core/TensorImpl.h (a test's)")
    state = {k: v for k, v in warm._state.items() if k not in ("torch_reader", "types")}
    monkeypatch.setattr(warm, "_state", state)
    monkeypatch.setattr(warm, "_torch_reader", no_headers)
    x, y = torch.ones(16), torch.zeros(16)
    k = scale_into.replace_hints()
    ct.launch(None, (1,), k, (x, y, 1.0))
    before = m.served()
    for _ in range(3):
        ct.launch(None, (1,), k, (x, y, 1.0))
    assert m.served() == before + 2 and "ships no" in warm.torch_why()
    assert m.probe_torch(x) is None
    assert torch.equal(y, torch.full((16,), 4.0))
    monkeypatch.undo()
    warm._state["types"] = None
    warm._sync(m)                                   # the reader again, for the next tests


# ----------------------------------------------------------------------------- GPU plans
@ct.kernel
def shift_by(x, n):
    ct.store(x, (0,), ct.load(x, (0,), (16,)) + n)


def _fake_gpu_calls(torch, drv, world, k):
    """A sequence of warm GPU launches on the fake driver (torch tensors seen as CUDA ones)
    across streams, torch's current stream changing, grids, the caller's context, a scalar
    out of range and a failing launch; per launch what the driver was asked (every call, in
    order), the stream and grid launched on, and the result or the error."""
    from fake_driver import FakeCUDAError, TorchStream
    x = torch.zeros(64, dtype=torch.int32)
    s1, s2 = TorchStream(0x5100), TorchStream(0x5200)
    out = []

    def record(fn):
        drv.calls.clear()
        try:
            fn()
            got = x.tolist()
        except ct.TileError as e:
            got = f"{type(e).__name__}: {e}"
        out.append((list(drv.calls), drv.launches[-1].stream, drv.launches[-1].grid, got,
                    drv.current_device()))
    steps = [(s1, (1,), 5)] * 3 + [(s2, (1,), 1)] * 2 + [(None, (1,), 2)] * 2 + \
        [(s1, (2,), 1)] * 2 + [(s1, (1,), 2**40)]
    for stream, grid, n in steps:
        record(lambda: ct.launch(stream, grid, k, (x, n)))
    world["stream"] = 0x5300                          # torch made another stream current
    record(lambda: ct.launch(None, (1,), k, (x, 1)))
    drv.set_context(0x1000)                           # the caller's context is the device's
    record(lambda: ct.launch(s1, (1,), k, (x, 1)))
    drv.set_context(0x1001)                           # ... device 1's: put back after
    record(lambda: ct.launch(s1, (1,), k, (x, 1)))
    drv.set_context(0)
    s1.cuda_stream = 0x5400                           # the same stream object, another handle
    record(lambda: ct.launch(s1, (1,), k, (x, 1)))

    def broken(*args):
        drv.log("launch", "broken")
        raise FakeCUDAError("CUDA_ERROR_LAUNCH_FAILED: a test's")
    real, drv.core.launch = drv.core.launch, broken
    try:
        record(lambda: ct.launch(s1, (1,), k, (x, 1)))
    finally:
        drv.core.launch = real
    return out


def test_gpu_plans_run_here_as_on_the_python_path(m, monkeypatch):
    """GPU plans run by the C path (stream, config, context, cuda.core's launch) ask the
    driver for exactly what the Python path asks, in the same order, launch on the same
    streams and grids, compute the same and raise the same errors."""
    torch = pytest.importorskip("torch")
    from fake_driver import FakeDriver, torch_on_the_fake_gpu
    runs = []
    for only in (True, False):
        with monkeypatch.context() as mp:
            drv = FakeDriver().install(mp)
            world = torch_on_the_fake_gpu(mp, torch)
            before = m.served()
            with warm.python_only() if only else contextlib.nullcontext():
                runs.append(_fake_gpu_calls(torch, drv, world, shift_by.replace_hints()))
            served = m.served() - before
    assert served >= 6
    assert len(runs[0]) == len(runs[1])
    for c, py in zip(runs[1], runs[0]):
        assert c[1:] == py[1:]
        assert c[0] == py[0]
    assert "does not fit" in runs[1][9][3] and "a test's" in runs[1][-1][3]
    assert ("device.set_current", 0) in runs[1][12][0] and runs[1][12][4] == 1   # (put back)
    assert runs[1][12][1] == 0x5100 and runs[1][13][1] == 0x5400     # (s1's handle changed)


def _warm_gpu_plan(monkeypatch):
    """A kernel launched twice on the fake GPU with a torch tensor and a stream (handle
    0x5100), so that its plan is the C path's: (torch, the driver, the kernel, the tensor, the
    stream)."""
    torch = pytest.importorskip("torch")
    from fake_driver import FakeDriver, TorchStream, torch_on_the_fake_gpu
    drv = FakeDriver().install(monkeypatch)
    torch_on_the_fake_gpu(monkeypatch, torch)
    k = shift_by.replace_hints()
    x, s = torch.zeros(64, dtype=torch.int32), TorchStream(0x5100)
    for _ in range(2):
        ct.launch(s, (1,), k, (x, 1))
    return torch, drv, k, x, s


def test_a_warm_gpu_launch_follows_each_calls_stream_context_and_driver(m, monkeypatch):
    """What a C-served GPU launch checks per call, not once: the handle of the stream object
    it is given (it may change), the caller's context (made the device's for the launch, put
    back after), the driver in place (`host.driver.current`: its `_active` list, or a
    replacement of `current` itself)."""
    from fake_driver import FakeDriver
    from tilepy.host import driver as gpu_driver
    torch, drv, k, x, s = _warm_gpu_plan(monkeypatch)
    served = m.served()
    assert m.launch(k, (x, 1), (1,), s) is None and drv.launches[-1].stream == 0x5100
    s.cuda_stream = 0x5200
    assert m.launch(k, (x, 1), (1,), s) is None and drv.launches[-1].stream == 0x5200
    for caller in (0x1001, 0x1000, 0):          # device 1's context, device 0's, none
        drv.set_context(caller)
        drv.calls.clear()
        assert m.launch(k, (x, 1), (1,), s) is None
        assert drv.current_context() == caller          # the caller's, put back
        made = ("device.set_current", 0) in drv.calls
        assert made == (caller != 0x1000), drv.calls    # (the fake launch ran in device 0's)
    assert m.served() == served + 5 and x[:16].tolist() == [7] * 16
    y, big = torch.zeros(64, dtype=torch.int32), 1 << 20     # another pointer, another scalar
    for a, n in ((y, big), (x, big), (x, 3), (x, 3)):
        assert m.launch(k, (a, n), (1,), s) is None
        assert drv.launches[-1].args[::2] == (a.data_ptr(), n)
    assert y[:16].tolist() == [big] * 16 and x[:16].tolist() == [7 + big + 6] * 16
    served += 4
    other = FakeDriver()
    with monkeypatch.context() as mp:
        mp.setattr(gpu_driver, "current", lambda: other)      # `current` itself replaced
        assert m.launch(k, (x, 1), (1,), s) is warm.MISS
    with gpu_driver.use(other):                               # another driver in `_active`
        assert m.launch(k, (x, 1), (1,), s) is warm.MISS
    assert m.launch(k, (x, 1), (1,), s) is None and m.served() == served + 6


def test_a_gpu_plan_is_for_its_driver_and_compiler(m, monkeypatch):
    """The C path leaves a GPU plan to the Python path when another driver is in place, or
    when TILEPY_GPU_COMPILER names another compiler than the one that made the plan."""
    from fake_driver import FakeDriver
    _, drv, k, x, s = _warm_gpu_plan(monkeypatch)
    assert m.launch(k, (x, 1), (1,), s) is None and drv.launches[-1].stream == 0x5100
    monkeypatch.setenv("TILEPY_GPU_COMPILER", "tileiras")
    assert m.launch(k, (x, 1), (1,), s) is warm.MISS
    monkeypatch.delenv("TILEPY_GPU_COMPILER")
    with monkeypatch.context() as mp:
        FakeDriver().install(mp)
        assert m.launch(k, (x, 1), (1,), s) is warm.MISS
    assert m.launch(k, (x, 1), (1,), s) is None
    assert x[:16].tolist() == [4] * 16
