"""Finding and parsing the source of a kernel function, with locations in the user's file.

Works for functions defined in files, in Jupyter/IPython cells (their source is registered in
`linecache` under a synthetic file name) and in `python -c`-less scripts. Functions built with
`exec`/`compile` from a string have no retrievable source: that is a clear TileSyntaxError.
"""
from __future__ import annotations

import ast
import copy
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

from ..errors import Loc, TileSyntaxError


@dataclass
class ParsedFunction:
    func: object
    tree: ast.FunctionDef
    file: str
    first_line: int          # line number of the `def` (or first decorator) in `file`
    col_offset: int          # indentation removed by dedent
    lines: list[str]         # the file's lines (1-based via index - 1)

    def loc(self, node: ast.AST) -> Loc:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        end_line = getattr(node, "end_lineno", None)
        end_line = end_line + self.first_line - 1 if end_line is not None else None
        col = getattr(node, "col_offset", 0) + self.col_offset
        end_col = getattr(node, "end_col_offset", None)
        end_col = end_col + self.col_offset if end_col is not None else None
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return Loc(self.file, line, col, end_line, end_col, src, self.tree.name)


_CACHE: dict[object, ParsedFunction] = {}


def parse_function(func) -> ParsedFunction:
    """Parse `func`'s source into a FunctionDef whose nodes map back to the user's file."""
    code = getattr(func, "__code__", None)
    # Code objects compare equal across files (co_filename is not compared): key on the file too.
    key = (code, code.co_filename) if code is not None else func
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    name = getattr(func, "__qualname__", repr(func))
    if code is None:
        raise TileSyntaxError(f"{name} is not a Python function; kernels must be plain functions")
    parsed = _from_file_ast(func, code)
    if parsed is not None:
        _CACHE[key] = parsed
        return parsed
    file = code.co_filename
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        raise TileSyntaxError(
            f"cannot find the source code of '{name}' (defined in {file!r}). tilepy compiles the "
            f"function's source text, so kernels must be defined in a file, a Jupyter/IPython "
            f"cell or a module, not built with exec() or compile() from a string.") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    if dedented and len(text) - len(dedented) == 0:
        indent = 0
    try:
        module = ast.parse(dedented)
    except SyntaxError as e:
        line = (e.lineno or 1) + first - 1
        raise TileSyntaxError(f"cannot parse the kernel source: {e.msg}",
                              Loc(file, line, max(0, (e.offset or 1) - 1))) from None
    fdefs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not fdefs:
        raise TileSyntaxError(f"the source of '{name}' is not a function definition "
                              f"(lambdas cannot be kernels)", Loc(file, first, 0))
    tree = fdefs[0]
    if tree.name != code.co_name:         # the file was edited: its line holds another def
        raise _stale(func, code)
    if isinstance(tree, ast.AsyncFunctionDef):
        raise TileSyntaxError("async functions cannot be kernels", Loc(file, first, 0))
    all_lines = linecache.getlines(file) or lines
    if len(all_lines) < first + len(lines) - 1:
        all_lines = [""] * (first - 1) + list(lines)
    parsed = ParsedFunction(func, tree, file, first, indent, all_lines)
    _CACHE[key] = parsed
    return parsed


# --------------------------------------------------------------------------- the fast way
# inspect.getsourcelines finds a function's end by tokenizing it in pure Python (its regexes
# alone cost ~10 ms to compile in a new process). ast.parse of the whole file is C: the file is
# parsed once, and the function's FunctionDef is found by name and first line; its locations
# are already the file's. Anything unusual (no lines, no unique match) takes the inspect path.
_FILES: dict[str, tuple[list[str], dict, list]] = {}


def _file_defs(file: str):
    """(lines, {(name, first line incl. decorators): [FunctionDef, ...]}, the module's import
    statements) of a source file."""
    linecache.checkcache(file)                 # as inspect does: an edited file is read again
    lines = linecache.getlines(file)
    hit = _FILES.get(file)
    if hit is not None and hit[0] is lines:
        return hit
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    defs: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            defs.setdefault((node.name, first), []).append(node)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    _FILES[file] = (lines, defs, imports)
    return _FILES[file]


def _from_file_ast(func, code) -> ParsedFunction | None:
    """The function's FunctionDef in its file: at its line; if the file was edited since the
    function was defined (no def of its name there), the one def of its name elsewhere that
    compiles to the function's code (moved, unchanged), else a TileSyntaxError."""
    found = _file_defs(code.co_filename)
    if found is None:
        return None
    lines, defs, imports = found
    nodes = defs.get((code.co_name, code.co_firstlineno), [])
    if len(nodes) != 1:
        named = [n for (name, _), ns in defs.items() if name == code.co_name for n in ns]
        if not named:
            return None
        nodes = [n for n in named if _same_code(n, code, imports)]
        if len(nodes) != 1:
            raise _stale(func, code)
    if isinstance(nodes[0], ast.AsyncFunctionDef):
        return None
    return ParsedFunction(func, nodes[0], code.co_filename, 1, 0, lines)


def _stale(func, code) -> TileSyntaxError:
    name = getattr(func, "__qualname__", code.co_name)
    return TileSyntaxError(
        f"the source of '{name}' in {code.co_filename} has changed since the function was "
        f"defined (line {code.co_firstlineno} no longer holds it as it was): tilepy compiles the "
        f"function's source text, so reload the module (or restart) to compile the edited "
        f"kernel", Loc(code.co_filename, code.co_firstlineno, 0))


def _same_code(node, code, imports: list) -> bool:
    """Does the FunctionDef `node`, compiled alone, give `code` (the same bytecode, names and
    constants)? Its free variables are made those of an enclosing function, as they were, and
    the module's imports are in its module (the compiler treats imported names apart)."""
    fn = copy.copy(node)
    fn.decorator_list = []
    if code.co_freevars:
        cells = [ast.Assign([ast.Name(v, ast.Store())], ast.Constant(None))
                 for v in code.co_freevars]
        fn = ast.FunctionDef("_tp_outer", ast.arguments([], [], None, [], [], None, []),
                             cells + [fn], [], None)
    mod = ast.fix_missing_locations(ast.Module(imports + [fn], []))
    try:
        top = compile(mod, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return False
    made = _code_named(top, code.co_name)
    return made is not None and _shape(made) == _shape(code)


def _code_named(code, name: str):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name:
                return c
            inner = _code_named(c, name)
            if inner is not None:
                return inner
    return None


def _shape(code) -> tuple:
    """What a function's code does, without where it is (line numbers)."""
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars,
            tuple(_shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts))
