"""Running and compiling the cuTile compatibility cases (test_cutile_suite.py and
test_cutile_features.py): a case is (kernel, grid, args, check)."""
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
