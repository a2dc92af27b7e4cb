"""Running code in real Jupyter kernels (nbclient + ipykernel), as a notebook user runs it."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def execute(nb, cwd, env: dict | None = None, timeout: int = 600, allow_errors: bool = False):
    """Execute notebook `nb` (nbformat) in a fresh python3 kernel started in folder `cwd`, with
    the environment plus `env`; tilepy is importable from this checkout. Returns `nb`, outputs
    filled in."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    kernel_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     allow_errors=allow_errors,
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute(env=kernel_env, cwd=str(cwd))
    return nb


def notebook(*cells: str):
    """A notebook of these code cells."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def text_of(cell) -> str:
    """Everything a code cell printed: streams, results and error tracebacks (ANSI colors removed)."""
    import re
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            out.append(o["data"].get("text/plain", ""))
        elif o["output_type"] == "error":
            out.append("\n".join(o["traceback"]))
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out))
