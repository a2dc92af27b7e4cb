"""Figures for the tutorials (`from tilepy.tools.plotting import new_figure, save`).

Part of the installed package, so a tutorial runs wherever it is saved: as a script, or as a
notebook copied to any folder. Each tutorial draws its figures with matplotlib (the Agg backend
in a script, inline in a Jupyter kernel) and saves them as PNG files under `figures/` beside the
script (a notebook: its folder), or `$TUTORIAL_FIGURES_DIR`. matplotlib is optional: `pip
install .` does not install it, and without it a tutorial still runs and checks its results;
only the plot is skipped, with a printed note.
"""
from __future__ import annotations

import os
import sys

from ..settings import tutorial_figures_dir


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    if "ipykernel" not in sys.modules:        # a script (or CI): draw off screen
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def figures_dir() -> str:
    """$TUTORIAL_FIGURES_DIR, else `figures/` beside the script being run, else (a notebook, an
    interactive session) under the current folder."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    here = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
    return tutorial_figures_dir() or os.path.join(here, "figures")


def new_figure(what: str, ncols: int = 1, width: float = 6.0, height: float = 4.0):
    """A matplotlib figure with `ncols` axes side by side, or None (and a note saying which plot
    is skipped) when matplotlib is not installed."""
    plt = _pyplot()
    if plt is None:
        print(f"matplotlib is not installed: skipping the plot of {what} "
              f"(pip install matplotlib to see it)")
        return None
    fig, _ = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig


def save(fig, name: str) -> str:
    """Save `fig` as `<figures dir>/<name>` and say where; the path is returned."""
    os.makedirs(figures_dir(), exist_ok=True)
    path = os.path.join(figures_dir(), name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"figure saved: {path}")
    if "ipykernel" not in sys.modules:
        import matplotlib.pyplot as plt
        plt.close(fig)
    return path
