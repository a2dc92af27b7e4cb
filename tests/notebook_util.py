"""Running code in real Jupyter kernels (nbclient + ipykernel), as a notebook user runs it."""
import os

import pytest

import cpu_account

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def execute(nb, cwd, env: dict | None = None, timeout: int = 600, allow_errors: bool = False,
            kernel=None):
    """Execute notebook `nb` (nbformat) in a fresh python3 kernel started in folder `cwd`, with
    the environment plus `env`; tilepy is importable from this checkout. Returns `nb`, outputs
    filled in. `kernel`: run it in that running kernel instead (`Kernel`; `cwd` and `env` are
    then the kernel's)."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     allow_errors=allow_errors, km=kernel and kernel.km,
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute(env=_kernel_env(env), cwd=str(cwd))
    if kernel is not None:               # (the kernel is not this client's: it keeps running)
        client.kc.stop_channels()
    return nb


def _kernel_env(env: dict | None) -> dict:
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(env or {})}


class Kernel:
    """A python3 Jupyter kernel started in folder `cwd` with the environment plus `env` (as
    `execute` starts one), kept running for several notebooks, as a notebook user runs one
    notebook after another in one kernel: each starts with an empty namespace (`%reset -f`),
    in `cwd`, with `os.environ` updated by its own `env` (`execute(..., kernel=k)` with `fresh`'s
    cell first, then `charge()`: the test's time in the kernel). `close()` shuts it down."""

    def __init__(self, cwd, env: dict | None = None):
        nbclient = pytest.importorskip("nbclient")
        pytest.importorskip("ipykernel")
        self.cwd = str(cwd)
        self._client = nbclient.NotebookClient(notebook(), kernel_name="python3")
        self.km = self._client.create_kernel_manager()
        self._client.start_new_kernel(env=_kernel_env(env), cwd=self.cwd)
        self._charged = 0.0

    def fresh(self, env: dict | None = None):
        """The cell that starts a notebook in this kernel: names of the previous notebooks
        gone, `cwd` the working folder, `env` set, the previous figures closed."""
        nbformat = pytest.importorskip("nbformat")
        return nbformat.v4.new_code_cell(
            "%reset -f\n"
            "def _fresh_notebook():\n"
            "    import os, sys\n"
            f"    os.chdir({self.cwd!r})\n"
            f"    os.environ.update({dict(env or {})!r})\n"
            "    if 'matplotlib.pyplot' in sys.modules:\n"
            "        sys.modules['matplotlib.pyplot'].close('all')\n"
            "_fresh_notebook()\n"
            "del _fresh_notebook")

    def charge(self):
        """Charge the kernel's CPU time since the last charge (its own and its waited-for
        children's: the compilers it ran) to the running test (cpu_account.py)."""
        nb = notebook("import resource as r\n"
                      "print(sum(getattr(r.getrusage(w), f) for w in (r.RUSAGE_SELF, "
                      "r.RUSAGE_CHILDREN) for f in ('ru_utime', 'ru_stime')))\n"
                      "del r")
        execute(nb, self.cwd, kernel=self)
        seconds = float(text_of(nb.cells[0]))
        cpu_account.add(seconds - self._charged)
        self._charged = seconds

    def close(self):
        self._client._cleanup_kernel()           # its whole time is counted once it ended
        cpu_account.add(-self._charged)


def notebook(*cells: str):
    """A notebook of these code cells."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def text_of(cell) -> str:
    """Everything a code cell printed: streams, results and error tracebacks (ANSI colors removed)."""
    import re
    out, stream = [], None
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream" and o.get("name") == stream:
            out[-1] += o["text"]            # one print can reach the notebook in two messages
        elif o["output_type"] == "stream":
            out.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            out.append(o["data"].get("text/plain", ""))
        elif o["output_type"] == "error":
            out.append("\n".join(o["traceback"]))
        stream = o.get("name") if o["output_type"] == "stream" else None
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out))
