"""Running and compiling the cuTile compatibility cases of the test_cutile_* files: a case is
(kernel, grid, args, check)."""
import pytest

import tilepy as ct
import tilepy.interpret as interp
from tilepy.api.compiler import compile_for_args
from tilepy.launch.nvrtc import compile_cubin


def registry():
    """A test file's named cases: (the dict, the decorator that adds a function to it)."""
    cases = {}

    def case(fn):
        cases[fn.__name__] = fn
        return fn
    return cases, case


def run_case(case, mode: str):
    """Launch in the interpreter ("interpret") or a CPU mode ("fast", "faithful"), then check."""
    kernel, grid, args, check = case
    if mode == "interpret":
        interp.launch(grid, kernel, args)
    else:
        with ct.cpu_mode(mode):
            ct.launch(None, grid, kernel, args)
    check()


def compile_case(case, arch: str):
    """NVRTC compiles the kernel for `arch`: a cubin that uses registers."""
    kernel, _, args, _ = case
    ck = compile_for_args(kernel, args)
    cubin = compile_cubin(ck.compile_source(), arch, ck.name)
    assert cubin.data[:4] == b"\x7fELF"
    assert cubin.resource_usage().get("registers", 0) > 0, cubin.log
    return cubin


MODES = ("interpret", "fast", "faithful")


def case_tests(cases, runs=None):
    """A file's two tests of its cases, to assign to its test_* names once every case is
    registered: each (name, mode) of `runs` (every case in every mode of MODES by default)
    launched and checked against numpy, and every case compiled by NVRTC for sm_80 and sm_90."""
    runs = runs if runs is not None else [(n, m) for n in cases for m in MODES]

    @pytest.mark.parametrize("name,mode", runs)
    def matches_numpy(name, mode):
        run_case(cases[name](), mode)

    @pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
    @pytest.mark.parametrize("name", list(cases))
    def compiles_with_nvrtc(name, arch):
        compile_case(cases[name](), arch)
    return matches_numpy, compiles_with_nvrtc
