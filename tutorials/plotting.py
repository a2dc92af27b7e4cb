"""Figures for the tutorials.

Each tutorial draws its figures with matplotlib's Agg backend and saves them as PNG files under
`tutorials/figures/` (or `$TUTORIAL_FIGURES_DIR`); opened as a notebook (jupytext), a figure also
shows inline. matplotlib is optional: `pip install .` does not install it, and without it a
tutorial still runs and checks its results; only the plot is skipped, with a printed note.
"""
from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


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
    return os.environ.get("TUTORIAL_FIGURES_DIR") or os.path.join(_HERE, "figures")


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
