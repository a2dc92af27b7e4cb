"""Helpers shared by the tests: locating expected error positions in this repo's test sources,
recording the host compiler's commands, a kernel's SASS statistics."""
import inspect
import re


def marker_loc(func_or_module_file, marker: str, snippet: str):
    """(line, col) of `snippet` on the source line that carries the comment `# <marker>`."""
    path = func_or_module_file if isinstance(func_or_module_file, str) else \
        inspect.getsourcefile(func_or_module_file)
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                pat = re.escape(snippet)
                if snippet[:1].isalnum() or snippet[:1] == "_":
                    pat = r"\b" + pat
                if snippet[-1:].isalnum() or snippet[-1:] == "_":
                    pat = pat + r"\b"
                return i, re.search(pat, line).start()
    raise AssertionError(f"marker {marker} not found in {path}")


def assert_located(err, marker: str, snippet: str, path: str):
    line, col = marker_loc(path, marker, snippet)
    assert err.loc is not None, f"error has no location: {err}"
    assert (err.loc.file, err.loc.line, err.loc.col) == (path, line, col), \
        f"expected {path}:{line}:{col + 1}, got {err.loc}\n{err}"
    text = str(err)
    assert f"{path}:{line}:{col + 1}" in text
    caret_line = [l for l in text.splitlines() if l.strip().startswith("|") and "^" in l]
    assert caret_line, text
    # the caret starts under the snippet
    src_line = [l for l in text.splitlines() if l.lstrip().startswith(f"{line} |")][0]
    assert caret_line[0].index("^") == src_line.index(" | ") + 3 + col, text


def record_compiler_commands(monkeypatch) -> list:
    """Every command the CPU backend runs through its compiler runner from now on (this test),
    in order, in the returned list; the commands still run."""
    from tilepy.launch import cpu_build
    commands = []
    real = cpu_build.run

    def run(cmd, limit, cwd=None):
        commands.append(cmd)
        return real(cmd, limit, cwd)
    monkeypatch.setattr(cpu_build, "run", run)
    return commands


# SASS statistics (tilepy.tools.sass_stats) once per cubin and process: several tests assert
# different facts about one kernel's SASS (test_sass.py's spill check and its op checks,
# test_hot_loop.py and test_large_tiles.py on attention), and disassembling a cubin (nvdisasm,
# cuobjdump) costs 0.3-1 CPU-s. Each caller gets its own copy.
_SASS: dict = {}


def cubin_stats(data: bytes, log: str = "") -> dict:
    """sass_stats.stats(data, log), computed once per cubin and log in this process."""
    import copy
    import hashlib
    from tilepy.tools import sass_stats
    key = hashlib.sha256(data).hexdigest(), log
    if key not in _SASS:
        _SASS[key] = sass_stats.stats(data, log)
    return copy.deepcopy(_SASS[key])


def by_nvrtc(measured: dict):
    """The value of `measured` ({(major, minor): value}, each the number measured with that
    NVRTC) for the installed NVRTC: its own version's, else the newest measured one older than it
    (the oldest where it is older than all). A SASS threshold that is a fact of the compiler's
    version is stated per version this way, each the number measured with that version."""
    from tilepy.launch.nvrtc import nvrtc_version
    have = nvrtc_version()
    older = [v for v in measured if v <= have]
    return measured[max(older) if older else min(measured)]


def sass_of(kernel, args, arch: str = "sm_80") -> dict:
    """The SASS statistics of `kernel` specialized for `args`, compiled by NVRTC for `arch` (a
    cubin holding that one kernel)."""
    from tilepy.api.compiler import compile_for_args
    from tilepy.launch.nvrtc import compile_cubin
    ck = compile_for_args(kernel, args)
    cb = compile_cubin(ck.compile_source(), arch, ck.name)
    (r,) = cubin_stats(cb.data, cb.log).values()
    return r
