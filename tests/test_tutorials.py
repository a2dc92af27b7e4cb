"""The tutorials run as a newcomer runs them (`python tutorials/NN_name.py`), each checking its
own results against numpy (or torch); here we check that they ran to the end, printed what they
checked, drew their figures, and open as notebooks (EXPECT: what each prints and draws, also as a
notebook in tests/test_tutorials_jupyter.py)."""
import glob
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIAL_DIR = os.path.join(ROOT, "tutorials")
TUTORIALS = sorted(glob.glob(os.path.join(TUTORIAL_DIR, "[0-9]*.py")))


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


HAS_MPL = _has("matplotlib")
HAS_TORCH = _has("torch")

# What each tutorial must print (its own checks passed), and the figures it must draw. Lines
# that depend on an optional package say what is printed without it.
EXPECT = {
    "01_vector_add.py": (["vector_add: 10000 elements in 40 tile blocks: matches numpy",
                          "cuda_tile.module", "vector_add at every size: matches numpy"],
                         ["01_vector_add_time.png"]),
    "02_softmax.py": (["softmax float32: 123x1000 matches numpy",
                       "softmax float16: 123x1000 matches numpy", "cuda_tile.module"],
                      ["02_softmax_error.png"]),
    "03_matmul.py": (["matmul float16 -> float32: 200x130 @ 130x150 matches numpy",
                      "mmaf", "matmul float16 -> float32 at every K: matches numpy"],
                     ["03_matmul_error.png"]),
    "04_layernorm.py": (["layernorm float32: 64x1000 (TILE_N=256) matches numpy",
                         "layernorm float16: 64x1000 (TILE_N=256) matches numpy"],
                        ["04_layernorm.png"]),
    "05_attention.py": (["attention: 4 heads, S=200, D=64, float16: matches numpy"],
                        ["05_attention.png"]),
    "06_torch_interop.py": ((["tilepy_tutorial::gelu(Tensor x) -> Tensor",
                              "gelu torch.float32: (320, 512) matches torch",
                              "gelu torch.float16: (320, 512) matches torch",
                              "gelu torch.bfloat16: (320, 512) matches torch",
                              "gelu on a transposed view (no copy): matches torch",
                              "gelu backward (autograd through the op): matches torch",
                              "opcheck tilepy_tutorial::gelu: test_schema, test_autograd_registration, "
                              "test_faketensor, test_aot_dispatch_dynamic passed",
                              "opcheck tilepy_tutorial::gelu_backward: test_schema",
                              "gradcheck of gelu in float64: passed",
                              "dynamo's graph: <built-in function matmul>, tilepy_tutorial.gelu.default, "
                              "<built-in function add>",
                              "torch.compile(fullgraph=True) of a block with the op: forward and "
                              "gradient match torch",
                              "gelu and its derivative over [-6, 6]: match torch"], ["06_torch_gelu.png"])
                            if HAS_TORCH else (["torch is not installed: skipping this tutorial"], [])),
    "07_inspect_code.py": (["the Tile IR has the block id, two tile loads, mulf, addf and the store",
                            "+  entry @axpy(%alpha: tile<f32>, %x: tile<ptr<f32>>, %x_shape_0: "
                            "tile<i32>, %x_stride_0", 'extern "C"', "bytes of sm_90 cubin",
                            ".entry tp_kernel_axpy", "inspect: ", " registers, 0 spill bytes, ",
                            "Tile IR bytecode:", "axpy: matches numpy"], []),
    "08_debugging.py": (["TileTypeError: store(): the tile's dtype float32 cannot be implicitly "
                         "cast to the array's dtype float16",
                         "TileSyntaxError: try/except is not supported in tile kernels",
                         "each error names the problem and points at the marked line",
                         "row 1: norm 11.2250", "row_norms: matches numpy",
                         "TileLaunchError: 1 tile assertion(s) failed in kernel 'checked_sqrt'",
                         "row_norms in faithful mode: matches numpy",
                         "row_norms in the interpreter: matches numpy", "data race",
                         "atomic_total, interpreted and compiled: matches numpy",
                         "the hook saw every running maximum"],
                        ["08_interpreter_running_max.png"]),
}


def run_tutorial(path, figures, *pre):
    env = {**os.environ, "TUTORIAL_FIGURES_DIR": str(figures)}
    cmd = [sys.executable, *pre] if pre else [sys.executable, path]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_every_tutorial_has_expectations():
    assert sorted(EXPECT) == [os.path.basename(p) for p in TUTORIALS]


# README's first command runs tutorial 1 as a script; every tutorial runs as a notebook, the same
# cells, in test_tutorials_jupyter.py, in the faithful mode (a second run of each in the fast mode
# would repeat tests/test_fake_driver.py, which runs every tutorial kernel in it against numpy).
SCRIPTS = TUTORIALS[:1]


@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_tutorial_runs_and_checks(path, tmp_path):
    out = run_tutorial(path, tmp_path)
    lines, figures = EXPECT[os.path.basename(path)]
    for line in lines:
        assert line in out, f"{line!r} not printed:\n{out[-3000:]}"
    drawn = sorted(os.listdir(tmp_path)) if os.path.isdir(tmp_path) else []
    if not HAS_MPL:
        assert drawn == [] and ("matplotlib is not installed" in out or not figures)
        return
    assert drawn == sorted(figures)
    for name in figures:
        with open(tmp_path / name, "rb") as f:
            data = f.read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_tutorial_without_matplotlib(tmp_path):
    """README's first command installs tilepy without extras: the tutorial must still run and
    check its result, skipping only the plot."""
    path = TUTORIALS[0]
    code = ("import runpy, sys; sys.modules['matplotlib'] = None; "
            f"sys.path.insert(0, {TUTORIAL_DIR!r}); runpy.run_path({path!r}, run_name='__main__')")
    out = run_tutorial(path, tmp_path, "-c", code)
    assert "vector_add at every size: matches numpy" in out
    assert "matplotlib is not installed: skipping the plot of launch time against vector size" in out
    assert not os.path.exists(tmp_path) or os.listdir(tmp_path) == []


@pytest.mark.parametrize("path", TUTORIALS, ids=[os.path.basename(p) for p in TUTORIALS])
def test_tutorial_opens_as_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    with open(path) as f:
        text = f.read()
    nb = jupytext.reads(text, fmt="py:percent")
    kinds = [c.cell_type for c in nb.cells]
    assert kinds[0] == "markdown" and nb.cells[0].source.startswith("# Tutorial")
    assert kinds.count("markdown") >= 2 and kinds.count("code") >= 2
    for cell in nb.cells:
        if cell.cell_type == "code":
            compile(cell.source, path, "exec")        # each code cell is valid Python alone
        else:
            assert not cell.source.lstrip().startswith(("import ", "def ", "@"))
    # and back: the notebook is the same script (jupytext adds version lines to the header)
    body = text.split("# ---\n", 2)[2]
    assert jupytext.writes(nb, fmt="py:percent").split("# ---\n", 2)[2] == body
