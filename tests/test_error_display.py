"""How errors read (issue 17): carets by display column, the nearest tilepy name for an unknown
one, launch-time argument errors at the launch call, and tilepy's own bugs (internal errors)
located at the user's line, while tracing and while emitting C++."""
import numpy as np
import pytest

import tilepy as ct
from tilepy.errors import Loc, TileInternalError, display_width
from kernels_util import marker_loc

X = np.zeros(16, np.float32)


@ct.kernel
def wide(a, b):
    数据 = ct.load(a, index=(0,), shape=(3,))  # WIDE
    ct.store(b, (0,), 数据)


def _caret_under(err, line_no: int) -> tuple[str, str]:
    lines = str(err).splitlines()
    i = next(i for i, l in enumerate(lines) if l.lstrip().startswith(f"{line_no} |"))
    return lines[i], lines[i + 1]


def test_the_caret_is_placed_by_display_column():
    with pytest.raises(ct.TileTypeError) as info:
        wide.mlir(X, X)
    line, _ = marker_loc(__file__, "WIDE", "(3,)")
    src, caret = _caret_under(info.value, line)
    text = src.split(" | ", 1)[1]
    # two wide characters before the span: the caret is 2 columns right of the character index
    assert caret.index("^") == src.index(" | ") + 3 + text.index("(3,)") + 2
    assert caret.rstrip().endswith(" ^^^^")
    # and the column in `file:line:col` is the display column too
    assert f"{__file__}:{line}:{text.index('(3,)') + 2 + 1}" in str(info.value)


def test_display_width_counts_columns():
    assert display_width("abc".encode()) == 3
    assert display_width("数据".encode()) == 4
    assert display_width("e\u0301".encode()) == 1            # a combining accent takes none
    loc = Loc("f.py", 1, len("é = ".encode()), 1, len("é = (3,)".encode()), "é = (3,)")
    assert loc.snippet().splitlines()[-1] == "   |     ^^^^"


# ------------------------------------------------------------------ the nearest name
def test_an_unknown_tilepy_name_suggests_the_nearest():
    with pytest.raises(AttributeError, match=r"module 'tilepy' has no attribute 'laod'; "
                                             r"did you mean 'load'\?"):
        ct.laod  # noqa: B018


@ct.kernel
def misspelled(a, b):
    t = ct.laod(a, (0,), (16,))  # LAOD
    ct.store(b, (0,), t)


@ct.kernel
def misspelled_local(a, b):
    tile = ct.load(a, (0,), (16,))
    ct.store(b, (0,), tiel)  # noqa: F821  # TIEL


@ct.kernel
def misspelled_method(a, b):
    t = ct.load(a, (0,), (16,))
    ct.store(b, (0,), t.astyp(ct.float32))  # ASTYP


@pytest.mark.parametrize("kernel, marker, snippet, near", [
    (misspelled, "LAOD", "ct.laod", "load"), (misspelled_local, "TIEL", "tiel", "tile"),
    (misspelled_method, "ASTYP", "t.astyp", "astype")])
def test_unknown_names_in_kernels_suggest_the_nearest(kernel, marker, snippet, near):
    with pytest.raises(ct.TileError, match=f"did you mean '{near}'") as info:
        kernel.mlir(X, X)
    assert (info.value.loc.line, info.value.loc.col) == marker_loc(__file__, marker, snippet)


# ------------------------------------------------------------------ launch arguments
def test_a_bad_launch_argument_is_named_and_located_at_the_launch_call():
    @ct.kernel
    def copy(a, b):
        ct.store(b, (0,), ct.load(a, (0,), (16,)))
    with pytest.raises(ct.TileTypeError, match="argument 'a' of type list is not supported") as info:
        ct.launch(None, (1,), copy, ([1.0, 2.0], X))  # LAUNCH
    line, col = marker_loc(__file__, "LAUNCH", "ct.launch")
    assert (info.value.loc.file, info.value.loc.line, info.value.loc.col) == (__file__, line, col)
    assert "ct.launch(None, (1,), copy, ([1.0, 2.0], X))" in str(info.value)


# ------------------------------------------------------------------ tilepy's own bugs
@ct.kernel
def exp_kernel(a, b):
    t = ct.load(a, (0,), (16,))
    ct.store(b, (0,), ct.exp(t) + 1.0)  # EXP


def _boom(*args, **kwargs):
    raise ZeroDivisionError("a bug")


def test_an_internal_error_while_tracing_carries_the_users_line(monkeypatch):
    from tilepy.frontend import api
    from tilepy.frontend.builtins.registry import IMPLS
    monkeypatch.setitem(IMPLS, api.exp, _boom)
    with pytest.raises(TileInternalError, match="ZeroDivisionError: a bug") as info:
        exp_kernel.mlir(X, X)
    assert (info.value.loc.line, info.value.loc.col) == marker_loc(__file__, "EXP", "ct.exp")


def test_an_internal_error_while_emitting_carries_the_users_line(monkeypatch):
    from tilepy.cuda_c import emitter
    monkeypatch.setitem(emitter.EMIT, "exp", _boom)
    Y = np.zeros(32, np.float32)          # another specialization: not compiled before
    with pytest.raises(TileInternalError, match="emitting C\\+\\+ for 'exp'") as info:
        exp_kernel.cuda_source(Y, Y)
    assert info.value.loc is not None and info.value.loc.line == marker_loc(__file__, "EXP", "ct.exp")[0]
