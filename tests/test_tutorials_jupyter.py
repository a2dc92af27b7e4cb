"""The tutorials as notebook users run them: each is opened as a notebook (jupytext) and executed
in a real Jupyter kernel (nbclient + ipykernel) from the tutorials folder, in the faithful CPU mode
(test_tutorials.py runs the first as a script in the fast mode, as README's first command), one
after another in one kernel, each from an empty namespace (as a user opens the next notebook in
a running kernel; a kernel start with tilepy, numpy and matplotlib is 1.5 CPU-s), and one also
saved somewhere else, in a fresh kernel (what they import comes from the installed package, not
from beside them). They print the same checks as when run as scripts, and draw their figures
(into `figures/` beside a notebook saved elsewhere)."""
import ast
import os
import shutil

import pytest

from notebook_util import Kernel, execute, text_of
from test_tutorials import EXPECT, HAS_MPL, TUTORIAL_DIR, TUTORIALS

PLACES = ("tutorials folder", "copied elsewhere")
HTML = {"07_inspect_code.py": 'class="tp-inspect"'}      # rich output a notebook must show
# Every tutorial runs from its folder; one also runs copied elsewhere (its figures go beside it).
# That the others would too is what test_tutorials_import_nothing_from_beside_them checks: a
# second Jupyter run of each would only repeat the first.
RUNS = [(p, PLACES[0]) for p in TUTORIALS] + [(TUTORIALS[0], PLACES[1])]


@pytest.fixture(scope="module")
def tutorials_kernel():
    """The kernel the tutorials run in from their folder, in the faithful CPU mode."""
    pytest.importorskip("jupytext")
    kernel = Kernel(TUTORIAL_DIR, {"TILEPY_CPU_MODE": "faithful"})
    yield kernel
    kernel.close()


def test_tutorials_import_nothing_from_beside_them():
    beside = {os.path.splitext(n)[0] for n in os.listdir(TUTORIAL_DIR) if n.endswith(".py")}
    for path in TUTORIALS:
        with open(path) as f:
            tree = ast.parse(f.read())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        assert not names & beside and not relative, (path, names & beside)


@pytest.mark.parametrize("path,place", [
    pytest.param(p, w, id=os.path.basename(p) + ("" if w == PLACES[0] else "-elsewhere"),
                 marks=[pytest.mark.budget(150)] if "06_torch" in p else [])  # torch.compile...
    for p, w in RUNS])
def test_tutorial_runs_in_a_jupyter_kernel(path, place, tmp_path, request):
    jupytext = pytest.importorskip("jupytext")
    name = os.path.basename(path)
    nb = jupytext.read(path)
    if place == PLACES[0]:
        kernel = request.getfixturevalue("tutorials_kernel")
        figures = tmp_path
        nb.cells.insert(0, kernel.fresh({"TUTORIAL_FIGURES_DIR": str(figures)}))
        execute(nb, TUTORIAL_DIR, timeout=900, kernel=kernel)
        kernel.charge()
    else:                                       # only the notebook itself: no helper beside it
        cwd = tmp_path / "my notebooks"
        cwd.mkdir()
        shutil.copy(path, cwd / name)
        figures = cwd / "figures"               # the default: beside the notebook
        execute(nb, cwd, {"TUTORIAL_FIGURES_DIR": "", "TILEPY_CPU_MODE": "fast"}, timeout=900)
    out = "\n".join(text_of(c) for c in nb.cells if c.cell_type == "code")
    lines, drawn = EXPECT[name]
    for line in lines:
        assert line in out, f"{line!r} not printed:\n{out[-3000:]}"
    if name in HTML:
        pages = [o["data"].get("text/html", "") for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs if o["output_type"] == "execute_result"]
        assert any(HTML[name] in p for p in pages), "no HTML view was displayed"
    if HAS_MPL:
        assert sorted(os.listdir(figures) if os.path.isdir(figures) else []) == sorted(drawn)
