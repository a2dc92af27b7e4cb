"""tilepy's parts import downward only (ARCHITECTURE.md decision 6): the import-linter
contracts in pyproject.toml hold, every import counted (those inside functions too), and
DEVELOPING.md draws the layers in the contract's order."""
import os
import re
import tomllib

import pytest

grimp = pytest.importorskip("grimp", reason="import-linter is not installed (pip install import-linter)")
pytest.importorskip("importlinter", reason="import-linter is not installed (pip install import-linter)")
from importlinter import configuration  # noqa: E402
from importlinter.cli import lint_imports  # noqa: E402
from importlinter.contracts.layers import LayersContract  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYPROJECT = os.path.join(ROOT, "pyproject.toml")


def _contracts() -> list[dict]:
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("tilepy", cache_dir=None)


def test_the_contracts_hold():
    assert lint_imports(config_filename=PYPROJECT, no_cache=True, no_logo=True) == 0


def test_an_upward_import_breaks_the_layers():
    configuration.configure()
    layers = next(c for c in _contracts() if c["type"] == "layers")
    contract = LayersContract(name=layers["name"], session_options={"root_packages": ["tilepy"]},
                              contract_options={k: v for k, v in layers.items()
                                                if k not in ("name", "type")})
    graph = grimp.build_graph("tilepy", cache_dir=None)      # (changed below: its own)
    assert contract.check(graph, verbose=False).kept
    graph.add_import(importer="tilepy.launch.cpu", imported="tilepy.api.compiler",
                     line_number=1, line_contents="from ..api.compiler import compile_for_args")
    assert not contract.check(graph, verbose=False).kept


def test_nothing_imports_the_package_root(graph):
    """`tilepy/__init__.py` is the public face (it loads the layers); what every part needs of
    it (the version) lives in tilepy/version.py, below everything."""
    assert graph.find_modules_that_directly_import("tilepy") == set()


def test_developing_md_draws_the_contract():
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    with open(os.path.join(ROOT, "DEVELOPING.md")) as f:
        text = f.read()
    drawn = re.search(r"```\nlayers \(top imports bottom\):\n(.*?)```", text, re.S)
    assert drawn, "DEVELOPING.md has no 'layers (top imports bottom):' picture"
    rows = [re.split(r"\s+#", line)[0].strip() for line in drawn.group(1).splitlines()]
    assert [r for r in rows if r] == layers
