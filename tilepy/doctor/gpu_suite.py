"""`doctor --gpu`: runs benchmarks/gpu.py of tilepy's source checkout (the tutorials and the test
suites it runs on the GPU are not part of the installed package)."""
from __future__ import annotations

import importlib.util
import os
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "benchmarks", "gpu.py")


def run_gpu_suite(report, json_path: str | None, markdown_path: str | None, **options):
    from ..host import driver as gpu_driver
    report.section("GPU validation and speed table (--gpu)")
    if not gpu_driver.current().available():
        report.line("--gpu", "not run: no GPU")
        report.problem("--gpu needs an NVIDIA GPU and its driver; none was found",
                       "run it on a machine with a GPU")         # what was asked was not done
        return
    if not os.path.exists(SCRIPT):
        report.line("--gpu", f"not run: {SCRIPT} not found")
        report.problem("--gpu runs the tutorials and test suites of tilepy's source checkout",
                       "git clone tilepy, then `python -m tilepy doctor --gpu` (or python "
                       "benchmarks/gpu.py) from it")
        return
    spec = importlib.util.spec_from_file_location("tilepy_benchmarks_gpu", SCRIPT)  # as the tests
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module              # dataclasses look their module up
    spec.loader.exec_module(module)
    rc = module.main(report.out, json_path or "gpu-report.json",
                     markdown_path or "gpu-report.md", **options)
    if rc:
        report.problem("some kernels failed on the GPU (see above and the JSON report)",
                       "report them with the JSON file attached")
