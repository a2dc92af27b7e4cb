"""What a trace depends on, so that a compiled kernel can be reused by a later process.

A trace is determined by tilepy's own code, the kernel's source, its specialization (params)
and every value it read from outside: globals and closure cells of the kernel and of each helper
it inlined (with the helpers' sources and defaults), attributes of modules and classes, Python
builtins. While tracing, `Deps` records each such read as a *dependency*: where the value came
from and its fingerprint. A later process re-reads the same places (`Deps.hold`) and reuses the
compiled kernel only if every fingerprint is the same; any value that cannot be fingerprinted
safely (an arbitrary object, a function tilepy would run as plain Python) makes the trace
non-persistent, so a stale hit is impossible rather than unlikely.

Fingerprints (`fingerprint(value)`, a string or None):
- None, bool, int, float (exact bits), complex, str, bytes; tuples, lists, dicts, sets of those;
- tilepy dtypes and builtins, numpy dtypes and scalars, enum members (class, name, value);
- modules (by name: their attributes are dependencies of their own);
- Python functions: module, qualified name, first line, the hash of the whole source file and
  the defaults (their globals are dependencies when they are inlined); not the file's path: a
  notebook cell's file is named after the kernel process, and a moved module is the same module;
- classes of trusted modules (builtins, math, numpy, tilepy, ...) and enum classes;
- a tilepy kernel: its function and options.
Compile-time calls of trusted builtins (math.ceil, len, ...) are taken to be pure.
"""
from __future__ import annotations

import builtins as py_builtins
import enum
import hashlib
import os
import sys
import types

TRUSTED_MODULES = frozenset(("builtins", "math", "operator", "numpy", "functools", "itertools",
                             "cmath", "enum", "ml_dtypes"))
_SCALARS = (type(None), bool, int, str, bytes, type(Ellipsis))


def _trusted(module: str | None) -> bool:
    root = (module or "").split(".")[0]
    return root in TRUSTED_MODULES or root == "tilepy" or root.startswith("numpy")


# ----------------------------------------------------------------------------- source files
_FILES: dict[str, tuple] = {}


def file_hash(filename: str) -> str | None:
    """sha1 of a source file's text as it is now (what the tracer would parse), memoized by the
    file's size and mtime; linecache's text for sources without a file (None if none)."""
    try:
        st = os.stat(filename)
        stamp = (st.st_size, st.st_mtime_ns)
        hit = _FILES.get(filename)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        with open(filename, "rb") as f:
            digest = hashlib.sha1(f.read()).hexdigest()
        _FILES[filename] = (stamp, digest)
        return digest
    except OSError:
        import linecache
        lines = linecache.getlines(filename)
        return hashlib.sha1("".join(lines).encode()).hexdigest() if lines else None


# ----------------------------------------------------------------------------- fingerprints
def fingerprint(v) -> str | None:
    """A string that is equal for two values exactly when a trace reading them is the same
    (see the module docstring); None when the value cannot be fingerprinted safely."""
    t = type(v)
    if t in _SCALARS:
        return f"{t.__name__}:{v!r}"
    if t is float:
        return f"float:{v.hex()}"
    if t is complex:
        return f"complex:{v.real.hex()},{v.imag.hex()}"
    if t in (tuple, list):
        parts = [fingerprint(x) for x in v]
        return None if None in parts else f"{t.__name__}({','.join(parts)})"
    if t in (set, frozenset):
        parts = [fingerprint(x) for x in v]
        return None if None in parts else f"set({','.join(sorted(parts))})"
    if t is dict:
        parts = [(fingerprint(k), fingerprint(x)) for k, x in v.items()]
        if any(None in p for p in parts):
            return None
        return "dict(" + ",".join(f"{k}:{x}" for k, x in sorted(parts)) + ")"
    if isinstance(v, types.ModuleType):
        return f"module:{v.__name__}"
    if getattr(v, "__tilepy_builtin__", False) is True:
        return f"tilepy:{v.__qualname__}"
    if isinstance(v, types.FunctionType):
        return _function(v)
    if isinstance(v, enum.Enum):
        cls, value = _class(t), fingerprint(v.value)
        return None if cls is None or value is None else f"enum:{cls}.{v.name}={value}"
    if isinstance(v, type):
        return _class(v)
    if isinstance(v, types.BuiltinFunctionType):
        mod = getattr(v, "__module__", None) or getattr(getattr(v, "__self__", None), "__name__", None)
        return f"builtin:{mod}.{v.__qualname__}" if _trusted(mod) else None
    return _library_value(v)


def _function(fn) -> str | None:
    code = fn.__code__
    src = file_hash(code.co_filename)
    defaults = fingerprint(fn.__defaults__)
    kwdefaults = fingerprint(fn.__kwdefaults__)
    if src is None or defaults is None or kwdefaults is None:
        return None
    return (f"fn:{fn.__module__}:{fn.__qualname__}@{code.co_firstlineno}:"
            f"{src}:{defaults}:{kwdefaults}")


def _class(cls) -> str | None:
    name = f"{cls.__module__}.{cls.__qualname__}"
    if issubclass(cls, enum.Enum) and not _trusted(cls.__module__):
        members = [(m.name, fingerprint(m.value)) for m in cls]
        if any(f is None for _, f in members):
            return None
        return f"enumclass:{name}(" + ",".join(f"{n}={f}" for n, f in members) + ")"
    return f"class:{name}" if _trusted(cls.__module__) else None


def _library_value(v) -> str | None:
    """tilepy dtypes and kernels, numpy dtypes and scalars, torch dtypes."""
    from ..types.dtype import DType
    if isinstance(v, DType):
        return f"dtype:{v.name}"
    from .kernel import KernelFunction
    if isinstance(v, KernelFunction):
        fn, opts = fingerprint(v.func), fingerprint(v.options)
        return None if fn is None or opts is None else f"kernel:{fn}:{opts}"
    if type(v).__name__ == "dtype" and type(v).__module__ == "torch":
        return f"torchdtype:{v}"
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(v, np.dtype):
            return f"npdtype:{v.str}:{v.name}"
        if isinstance(v, np.generic):
            return f"npscalar:{v.dtype.str}:{v.tobytes().hex()}"
    return None


# ----------------------------------------------------------------------------- dependencies
def _resolve_env(fn, name: str):
    """What `name` means inside function `fn`, as the tracer's lookup finds it: a closure cell,
    else a global, else a Python builtin."""
    if isinstance(fn, types.FunctionType) is False:
        fn = fn.func                                   # a Kernel called as a helper
    code = fn.__code__
    if fn.__closure__ and name in code.co_freevars:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:                             # an empty cell: function_env skips it
            pass
    g = fn.__globals__
    if name in g:
        return g[name]
    return getattr(py_builtins, name)


def _resolve_owner(ref):
    import importlib
    if ref[0] == "mod":
        return sys.modules.get(ref[1]) or importlib.import_module(ref[1])
    obj = importlib.import_module(ref[1])               # ("cls", module, qualname)
    for part in ref[2].split("."):
        obj = getattr(obj, part)
    return obj


# ----------------------------------------------------------------------------- in this process
_MISSING = object()


class Reads:
    """What the traces of one kernel read from places a program may rebind while it runs
    (module globals, closure cells, attributes of its own modules and classes), with the value
    read: `fresh()` says whether every place still holds it. A launch checks it before reusing
    compiled code (frontend/kernel.py `changed`), so a changed global recompiles the kernel, as
    a new process would. Python builtins, modules and tilepy's, numpy's and the standard
    library's own attributes are not watched (rebinding them is not a program's business), so
    a typical kernel has nothing to check."""
    __slots__ = ("items", "_seen")

    def __init__(self):
        self.items: list[tuple] = []     # (place, name, value, fingerprint or None)
        self._seen: set = set()

    def env(self, fn, name: str, value):
        fn = fn if isinstance(fn, types.FunctionType) else getattr(fn, "func", None)
        if not isinstance(fn, types.FunctionType) or isinstance(value, types.ModuleType):
            return
        code = fn.__code__
        if fn.__closure__ and name in code.co_freevars:
            self._add(fn.__closure__[code.co_freevars.index(name)], None, value)
        elif name in fn.__globals__:
            self._add(fn.__globals__, name, value)

    def attr(self, owner, name: str, value):
        """Only a value that sits in the module's or a class's own namespace is watched (not
        one a module's `__getattr__` or a descriptor makes afresh on every read)."""
        if isinstance(value, types.ModuleType):
            return
        if isinstance(owner, types.ModuleType) and not _trusted(owner.__name__):
            self._add(owner.__dict__, name, value)
        elif isinstance(owner, type) and not _trusted(owner.__module__):
            home = next((c.__dict__ for c in owner.__mro__ if name in c.__dict__), None)
            if home is not None:
                self._add(home, name, value)

    def _add(self, place, name, value):
        k = (id(place), name)
        if _now(place, name) is value and k not in self._seen:
            self._seen.add(k)
            self.items.append((place, name, value, fingerprint(value)))

    def fresh(self) -> bool:
        """Does every place still hold the value read (the same object, or one with the same
        fingerprint: `N = 64` assigned again)? The common case, module globals holding the
        same objects, is a dict lookup each."""
        for place, name, value, _ in self.items:
            if (place.get(name, _MISSING) if name is not None else _now(place, name)) \
                    is not value:
                return self._refresh()
        return True

    def _refresh(self) -> bool:
        for i, (place, name, value, f) in enumerate(self.items):
            now = _now(place, name)
            if now is not value:
                if f is None or now is _MISSING or fingerprint(now) != f:
                    return False
                self.items[i] = (place, name, now, f)
        return True

    def add_recorded(self, items: list, values: list, root):
        """The reads of a trace found in the disk index: its dependencies (`Deps.items`) and
        their values in this process (`Deps.resolve`)."""
        for (kind, ref, name, _), v in zip(items, values):
            if kind == "env":
                self.env(root if ref == -1 else values[ref], name, v)
            else:
                self.attr(values[ref] if isinstance(ref, int) else _resolve_owner(ref), name, v)


def _now(place, name):
    """What a closure cell (`name` None), a module's globals or a class's namespace holds now."""
    if name is None:
        try:
            return place.cell_contents
        except ValueError:
            return _MISSING
    return place.get(name, _MISSING)


class Deps:
    """The dependencies of one trace (see the module docstring). `items` is JSON-ready: per
    dependency [kind, ref, name, fingerprint]; kind "env" reads `name` in the function `ref`
    (-1: the kernel, i: the value of dependency i), kind "attr" reads attribute `name` of the
    object `ref` (i, ["mod", module] or ["cls", module, qualname])."""

    def __init__(self, root, reads: Reads | None = None):
        self.reads = reads if reads is not None else Reads()   # for this process (Reads)
        self.items: list[list] = []
        self._index: dict[tuple, int] = {}
        self._refs: dict[int, int] = {id(root): -1}
        self._alive = [root]             # keeps the objects whose ids are in _refs alive
        self.why: str | None = None      # why the trace cannot be reused (None: it can)
        self.files: dict[str, int] = {}  # source file -> the ref (as above) of a function in it
        self._file(root, -1)

    def _file(self, value, ref: int):
        f = code_file(value)
        if f is not None:
            self.files.setdefault(f, ref)

    def fail(self, why: str):
        if self.why is None:
            self.why = why

    def env(self, fn, name: str, value):
        """The tracer read `name` from function `fn`'s globals, closure or builtins."""
        self.reads.env(fn, name, value)
        if self.why is None:
            ref = self._refs.get(id(fn))
            if ref is None:
                self.fail(f"'{getattr(fn, '__qualname__', fn)}' was reached through a value")
            else:
                self._add("env", ref, name, value)

    def attr(self, owner, name: str, value):
        """The tracer read attribute `name` of `owner` (attributes of plain values are fixed by
        the value's fingerprint; those of modules, classes and functions are dependencies)."""
        self.reads.attr(owner, name, value)
        if self.why is not None or not isinstance(owner, (types.ModuleType, type,
                                                           types.FunctionType)):
            return
        ref = self._refs.get(id(owner))
        if ref is None:
            if isinstance(owner, types.ModuleType):
                ref = ["mod", owner.__name__]
            elif isinstance(owner, type) and _class(owner) is not None and "<" not in owner.__qualname__:
                ref = ["cls", owner.__module__, owner.__qualname__]
            else:
                return self.fail(f"attribute '{name}' of {owner!r}")
        self._add("attr", ref, name, value)

    def opaque(self, why: str):
        """The trace ran plain Python tilepy cannot see into (static_eval of a function call)."""
        self.fail(why)

    def _add(self, kind: str, ref, name: str, value):
        k = (kind, ref if isinstance(ref, int) else tuple(ref), name)
        if k in self._index:
            return
        f = fingerprint(value)
        if f is None:
            return self.fail(f"'{name}' is a {type(value).__name__}, which tilepy cannot fingerprint")
        i = len(self.items)
        self.items.append([kind, ref, name, f])
        self._index[k] = i
        from .kernel import KernelFunction
        if isinstance(value, (types.FunctionType, types.ModuleType, type, KernelFunction)):
            self._refs.setdefault(id(value), i)
            self._alive.append(value)
            self._file(value, i)
            func = getattr(value, "func", None)
            if isinstance(func, types.FunctionType):       # a Kernel: its function is inlined
                self._refs.setdefault(id(func), i)

    @staticmethod
    def hold(items: list, root) -> bool:
        """Do all recorded dependencies still have their fingerprints in this process?"""
        return Deps.resolve(items, root) is not None

    @staticmethod
    def resolve(items: list, root) -> list | None:
        """The values of the recorded dependencies in this process, or None when one of them
        no longer has its fingerprint."""
        values = []
        for kind, ref, name, f in items:
            try:
                if kind == "env":
                    v = _resolve_env(root if ref == -1 else values[ref], name)
                else:
                    v = getattr(values[ref] if isinstance(ref, int) else _resolve_owner(ref), name)
            except Exception:
                return None
            if fingerprint(v) != f:
                return None
            values.append(v)
        return values

    @staticmethod
    def moved_files(files: list, values: list, root) -> dict[str, str]:
        """{file recorded: where it is now} for the recorded `files` ([file, ref] pairs, as in
        `Deps.files`) that moved: a notebook cell in a new kernel process, a moved module."""
        out = {}
        for old, ref in files:
            now = code_file(root if ref == -1 else values[ref])
            if now is not None and now != old:
                out[old] = now
        return out


def code_file(value) -> str | None:
    """The source file of a function, or of a kernel's function."""
    code = getattr(getattr(value, "func", value), "__code__", None)
    return getattr(code, "co_filename", None)


# ----------------------------------------------------------------------------- tilepy itself
_BUILD: list = []


def tilepy_build() -> str:
    """A fingerprint of tilepy's own code: its version and the size and mtime of every source
    file and runtime header in the package (an edit, a reinstall or an upgrade changes it)."""
    if not _BUILD:
        from ..version import __version__
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha1(__version__.encode())
        todo = [root]
        while todo:
            d = todo.pop()
            with os.scandir(d) as it:
                for e in sorted(it, key=lambda e: e.name):
                    if e.is_dir():
                        if e.name != "__pycache__":
                            todo.append(e.path)
                    elif e.name.endswith((".py", ".h")):
                        st = e.stat()
                        rel = os.path.relpath(e.path, root)    # not where it is installed
                        h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _BUILD.append(h.hexdigest())
    return _BUILD[0]
