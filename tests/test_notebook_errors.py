"""Errors as a notebook user reads them: in a real Jupyter kernel, a location in a cell reads as
IPython's own (`Cell In[2], line 4`, the line and a caret), and the traceback shows the user's
frames only (no tilepy frame at its end)."""
import re

from notebook_util import execute, notebook, text_of

DEFINE = """\
import numpy as np
import tilepy as ct

@ct.kernel
def k(a, b):
    t = ct.load(a, index=(0,), shape=(3,))
    ct.store(b, (0,), t)
"""
LAUNCH = """\
x = np.zeros(16, np.float32)
k.mlir(x, x)
"""
BAD_ARG = """\
y = np.zeros(16, np.float32)
ct.launch(None, (1,),
          k, ([1.0, 2.0], y))
"""
UNKNOWN = "ct.laod"


def test_errors_in_a_jupyter_kernel_read_like_ipython(tmp_path):
    nb = execute(notebook(DEFINE, LAUNCH, BAD_ARG, UNKNOWN), tmp_path,
                 {"TILEPY_CACHE_DIR": str(tmp_path / "cache")}, allow_errors=True)
    shape, arg, unknown = (text_of(c) for c in nb.cells[1:])
    # the kernel's line, in the cell that defined it (executed first: In[1])
    assert "TileTypeError: Invalid argument \"shape\" of load(): Dimension #0 of shape (3,) is " \
        "not a power of two (load() shape (3,) is not a valid tile shape" in shape, shape
    assert "--> Cell In[1], line 6" in shape, shape
    src = "     t = ct.load(a, index=(0,), shape=(3,))"
    lines = shape.splitlines()
    at = next(i for i, l in enumerate(lines) if l.endswith(src[1:]) and l.lstrip().startswith("6 |"))
    caret = lines[at + 1]
    assert caret.index("^") == lines[at].index("(3,)") and caret.rstrip().endswith(" ^^^^"), shape
    # the traceback: the user's call, and no tilepy frame anywhere
    assert "Cell In[2], line 2" in shape and "k.mlir(x, x)" in shape
    assert not re.search(r"tilepy[/\\]", shape), shape
    # a bad launch argument names it and points at the launch call
    assert "argument 'a' of type list is not supported" in arg, arg
    assert "--> Cell In[3], line 2" in arg and not re.search(r"tilepy[/\\]", arg), arg
    # an unknown name suggests the nearest one
    assert "module 'tilepy' has no attribute 'laod'; did you mean 'load'?" in unknown, unknown
    assert not re.search(r"tilepy[/\\]", unknown), unknown
