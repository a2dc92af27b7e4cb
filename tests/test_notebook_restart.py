"""A notebook executed again in a fresh Jupyter kernel with the same cache dir finds every kernel
on disk: no trace, no compile, no new cache entry (issue 17's "Done when";
`python benchmarks/notebook_restart.py` times it)."""
import importlib.util
import os

import cache_seed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location(
        "notebook_restart", os.path.join(ROOT, "benchmarks", "notebook_restart.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_restarted_notebook_compiles_nothing(tmp_path):
    bench = _bench()
    cache_dir = str(tmp_path / "cache")
    cache_seed.seed(cache_dir)          # the notebook's kernel builds its kernels, not the helpers
    first = bench.run_once(cache_dir, str(tmp_path))
    assert first["traced"] and first["new_cache_entries"] >= 6, first   # 2 x (index, CPU, sm_90)
    again = bench.run_once(cache_dir, str(tmp_path))
    assert not again["traced"] and again["new_cache_entries"] == 0, again
