"""Reading the textual Tile IR back: `parse_module(text)` -> Module, `parse_type(text)` -> Type.

Ops with a `syntax` string are parsed by walking that format (the same one the printer
follows); the others have a function in `parse_custom.py`. The parser accepts the spec's
spellings (`cuda_tile.` op prefixes, `!cuda_tile.` type prefixes, `view=` in partition views,
`f8E4M3FN`-style element names, `#cuda_tile.` predicates, implicit terminators) and builds ops
without checking them: `verify` reports broken rules with their names and the op's location.
"""
from __future__ import annotations

import re

from ..errors import TileError, TileSyntaxError
from ..types import (ElementType, GatherScatterViewType, PartitionViewType, PtrType,
                     StridedViewType, TensorViewType, TileType, TOKEN, Type, element_type)
from .attrs import (PREDICATE_KINDS, AssumePredicate, DenseValue, OptimizationHints,
                    dense_from_literals)
from .builder import make_op
from .core import Block, Module, Operation, Value
from .opdef import EnumKind, OpDef
from .ops import OPS
from .printer import group_end, syntax_anchor, typed_once
from .scanner import IDENT, INT, NUMBER, STRING, SYMBOL, VALUE, Scanner, unescape

_DIMS = re.compile(r"(\d+|\?)x")
_BOOL = re.compile(r"true|false")
_GROUP = re.compile(r":\d+")
_INTEGER = re.compile(r"-?(0x[0-9A-Fa-f]+|\d+)")


def _default_elem(lit: str) -> str:
    """MLIR's type of a literal printed without one."""
    if lit in ("true", "false"):
        return "i1"
    return "i64" if _INTEGER.fullmatch(lit) else "f64"


# NVIDIA's 13.4 op names for tilepy's (13.1 spec) ones.
NVIDIA_NAMES = {"fpowf": "pow"}


class Parser(Scanner):
    def __init__(self, text: str, file: str = "<mlir>"):
        super().__init__(text, file)
        self.scopes: list[dict[str, Value]] = [{}]

    # ================================================================== types
    def type(self) -> Type:
        self.accept("!cuda_tile.") or self.accept("!")
        start = self.pos
        try:
            if self.accept("tile"):
                return self._tile()
            if self.accept("tensor_view"):
                return self._tensor_view()
            if self.accept("partition_view"):
                return self._partition_view()
            if self.accept("gather_scatter_view"):
                return GatherScatterViewType(**self._view_items("gather_scatter_view"))
            if self.accept("strided_view"):
                return StridedViewType(**self._view_items("strided_view"))
            if self.accept("token"):
                return TOKEN
        except TileError as e:
            if isinstance(e, TileSyntaxError):
                raise
            raise self.error(e.message, start) from None
        raise self.error(f"expected a type, found {self.near()}")

    def _dims(self) -> list[int | None]:
        dims = []
        while m := _DIMS.match(self.text, self.pos):
            dims.append(None if m.group(1) == "?" else int(m.group(1)))
            self.pos = m.end()
        return dims

    def elem(self) -> ElementType:
        self.skip()
        start = self.pos
        name = self.expect_re(IDENT, "an element type")
        try:
            return element_type(name)
        except TileError as e:
            raise self.error(e.message, start) from None

    def _scalar(self):
        self.skip()
        if self.accept("!cuda_tile.ptr") or self.accept("ptr"):
            self.expect("<")
            pointee = self.elem()
            self.expect(">")
            return PtrType(pointee)
        return self.elem()

    def _tile(self) -> TileType:
        self.expect("<")
        self.skip()
        dims = self._dims()
        if None in dims:
            raise self.error("tile shapes are static: '?' is only allowed in tensor_view")
        t = TileType(tuple(dims), self._scalar())
        self.expect(">")
        return t

    def _tensor_view(self) -> TensorViewType:
        self.expect("<")
        self.skip()
        shape = self._dims()
        e = self.elem()
        strides = []
        if self.accept(","):
            self.expect("strides")
            self.expect("=")
            self.expect("[")
            strides = self.comma_list(lambda: None if self.accept("?") else self.integer(), "]")
        self.expect(">")
        return TensorViewType(e, tuple(shape), tuple(strides))

    def _tile_dims(self) -> list[int]:
        """`=(AxB)` after a view's `tile`."""
        self.expect("=")
        self.expect("(")
        self.skip()
        tile = self._dims()
        tile.append(self.integer("a tile extent"))
        self.expect(")")
        return tile

    def _partition_view(self) -> PartitionViewType:
        self.expect("<")
        self.expect("tile")
        tile = self._tile_dims()
        view = dim_map = padding = None
        while self.accept(","):         # the spec: view first; NVIDIA's 13.4: padding_value first
            if self.accept("dim_map"):
                self.expect("=")
                self.expect("[")
                dim_map = tuple(self.comma_list(self.integer, "]"))
            elif self.accept("padding_value"):
                self.expect("=")
                padding = self.expect_re(IDENT, "a padding value")
            else:
                self.accept("view") and self.expect("=")
                view = self.type()
        self.expect(">")
        if view is None:
            raise self.error("partition_view needs a tensor_view")
        return PartitionViewType(tuple(tile), view, dim_map, padding)

    def _view_items(self, kind: str) -> dict:
        """The items of a gather_scatter_view / strided_view, in any order: tile=(..),
        traversal_strides=[..], padding_value = P, sparse_dim=N and the tensor_view."""
        self.expect("<")
        items = {}
        while True:
            if self.accept("tile"):
                items["tile_shape"] = tuple(self._tile_dims())
            elif self.accept("traversal_strides"):
                self.expect("=")
                self.expect("[")
                items["traversal_strides"] = tuple(self.comma_list(self.integer, "]"))
            elif self.accept("padding_value"):
                self.expect("=")
                items["padding_value"] = self.expect_re(IDENT, "a padding value")
            elif self.accept("sparse_dim"):
                self.expect("=")
                items["sparse_dim"] = self.integer("a dimension")
            else:
                items["view"] = self.type()
            if not self.accept(","):
                break
        self.expect(">")
        need = ("tile_shape", "view", "sparse_dim" if kind == "gather_scatter_view" else
                "traversal_strides")
        missing = [n for n in need if n not in items]
        if missing or not isinstance(items["view"], TensorViewType):
            raise self.error(f"{kind} needs {' and '.join(missing or ['a tensor_view'])}")
        return items

    # ================================================================== attributes
    def literal(self) -> str:
        for word in ("true", "false"):
            if self.accept(word):
                return word
        return self.expect_re(NUMBER, "a number")

    def _nested(self):
        if self.accept("["):
            return self.comma_list(self._nested, "]")
        return self.literal()

    def dense(self) -> DenseValue:
        self.accept("dense")
        self.expect("<")
        elem = self.elem()
        self.expect(":")
        self.skip()
        start = self.pos
        nested = self._nested()
        self.expect(">")
        try:
            return dense_from_literals(elem, nested)
        except TileError as e:
            raise self.error(e.message, start) from None

    def identity(self) -> DenseValue:
        self.skip()
        start = self.pos
        lit = self.literal()
        if self.accept(":"):
            elem = self.elem()
        else:                           # NVIDIA elides MLIR's default types: i1, i64, f64
            elem = element_type(_default_elem(lit))
        try:
            return dense_from_literals(elem, lit)
        except TileError as e:
            raise self.error(e.message, start) from None

    def predicate(self) -> AssumePredicate:
        self.accept("#cuda_tile.") or self.accept("#")
        kind = self.expect_re(IDENT, "an assume predicate")
        if kind not in PREDICATE_KINDS:
            raise self.error(f"unknown assume predicate '{kind}' (expected {', '.join(PREDICATE_KINDS)})")
        self.expect("<")
        if kind == "bounded":
            bound = lambda: None if self.accept("?") else self.integer()  # noqa: E731
            lo = bound()
            self.expect(",")
            p = AssumePredicate(kind, lower=lo, upper=bound())
        elif kind == "div_by":
            d = self.integer("a divisor")
            every = along = None
            if self.accept(","):
                self.expect("every")
                every = self.integer()
                self.expect("along")
                along = self.integer()
            p = AssumePredicate(kind, divisor=d, every=every, along=along)
        else:
            self.expect("[")
            p = AssumePredicate(kind, values=tuple(self.comma_list(self.integer, "]")))
        self.expect(">")
        return p

    def hints(self) -> OptimizationHints:
        def value():
            for word, v in (("true", True), ("false", False)):
                if self.accept(word):
                    return v
            s = self.accept_re(STRING)
            return unescape(s[1:-1]) if s is not None else self.integer("a hint value")

        def entry():
            arch = self.expect_re(IDENT, "an architecture name")
            self.expect("=")
            self.expect("{")
            kv = self.comma_list(lambda: (self.expect_re(IDENT, "a hint name"),
                                          self.expect("=") or value()), "}")
            return arch, tuple(kv)
        self.expect("<")
        return OptimizationHints(tuple(self.comma_list(entry, ">")))

    def attr(self, kind):
        if isinstance(kind, EnumKind):
            self.skip()
            start = self.pos
            word = self.expect_re(IDENT, f"a {kind.name}")
            if word not in kind.values:
                raise self.error(f"'{word}' is not a {kind.name} (expected one of "
                                 f"{', '.join(kind.values)})", start)
            return word
        parse = {
            "flag": lambda: True, "int": self.integer, "string": self.string,
            "symbol": lambda: self.expect_re(SYMBOL, "a symbol")[1:],
            "ints": lambda: self.expect("[") or self.comma_list(self.integer, "]"),
            "bool": lambda: self.expect_re(_BOOL, "true or false") == "true",
            "dense": self.dense, "type": self.type, "predicate": self.predicate, "hints": self.hints,
            "identities": lambda: self.expect("[") or self.comma_list(self.identity, "]"),
        }[kind]
        return parse()

    # ================================================================== values
    def use(self) -> Value:
        self.skip()
        start = self.pos
        name = self.expect_re(VALUE, "an SSA value")
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.error(f"use of undefined value {name}", start)

    def define(self, name: str, v: Value, pos: int | None = None):
        if any(name in s for s in self.scopes):
            raise self.error(f"redefinition of {name}", pos)
        v.hint = name[1:].replace("#", "_")      # %x#1 of a group prints as %x_1
        self.scopes[-1][name] = v

    def typed_arg(self, block: Block):
        self.skip()
        start = self.pos
        name = self.expect_re(VALUE, "an argument name")
        self.expect(":")
        self.define(name, block.add_arg(self.type()), start)

    # ================================================================== ops and blocks
    def statement(self, block: Block):
        self.skip()
        start = self.pos
        names = []
        if self.peek_re(VALUE):
            names = [n for group in self.comma_list(self.result_names) for n in group]
            self.expect("=")
        self.skip()
        op_pos = self.pos
        word = self.expect_re(IDENT, "an op name")
        name = word[len("cuda_tile."):] if word.startswith("cuda_tile.") else word
        name = NVIDIA_NAMES.get(name, name)
        opdef = OPS.get(name)
        if opdef is None:
            raise self.error(f"unknown op '{word}'", op_pos)
        loc = self.loc(op_pos)
        from .parse_custom import CUSTOM_PARSERS
        custom = CUSTOM_PARSERS.get(name)
        op = custom(self, opdef, len(names)) if custom else self.generic(opdef, len(names))
        op.loc = loc
        if names and len(names) != len(op.results):
            raise self.error(f"{name} has {len(op.results)} result(s) but {len(names)} name(s) "
                             f"are bound", start)
        for n, r in zip(names, op.results):
            self.define(n, r, start)
        block.append(op)
        return op

    def result_names(self) -> list[str]:
        """`%x`, or NVIDIA's group `%x:3` of three results, used as `%x#0`, `%x#1`, `%x#2`."""
        name = self.expect_re(VALUE, "a result name")
        count = self.accept_re(_GROUP)
        return [f"{name}#{i}" for i in range(int(count[1:]))] if count else [name]

    def block_body(self, block: Block, implicit: str | None = None) -> Block:
        """Statements up to the closing `}` (the `{` is already read)."""
        while not self.accept("}"):
            if self.at_end():
                raise self.error("expected '}' before the end of the input")
            self.statement(block)
        if implicit and not (block.ops and block.ops[-1].opdef.terminator):
            block.append(make_op(implicit, [], check=False))
        return block

    def region_block(self, args=(), implicit: str | None = None) -> Block:
        """`{ ... }` in a new name scope; `args` are (name, type) pairs of the block."""
        block = Block()
        self.scopes.append({})
        for n, t in args:
            self.define(n, block.add_arg(t))
        self.expect("{")
        self.block_body(block, implicit)
        self.scopes.pop()
        return block

    # ================================================================== generic syntax
    def generic(self, opdef: OpDef, nres: int) -> Operation:
        st = {"operands": {}, "attrs": {}, "types": {}}
        toks = opdef.syntax_tokens()
        self._format(opdef, toks, 0, len(toks), st, nres)
        groups = []
        for spec in opdef.operands:
            vals = st["operands"].get(spec.name, [])
            groups.append(vals if spec.variadic else (vals[0] if vals else None))
        result_types = self._result_types(opdef, st, nres)
        return make_op(opdef.name, *groups, result_types=result_types, check=False, **st["attrs"])

    def _result_types(self, opdef, st, nres):
        fixed = sum(1 for r in opdef.results if not r.variadic)
        nvar = max(nres - fixed, 0)
        given = st["types"]
        out, missing = [], False
        for r in opdef.results:
            n = nvar if r.variadic else 1
            ts = given.get(r.name)
            if ts is None:
                missing = True
                out.append(None)
                continue
            out += (ts * n)[:n] if len(ts) == 1 else ts
        if not missing:
            return out
        operand_types = [v.type for s in opdef.operands for v in st["operands"].get(s.name, [])]
        try:
            inferred = opdef.infer(operand_types, st["attrs"])
        except Exception:
            raise self.error(f"cannot infer the result types of {opdef.name}") from None
        return [t if t is not None else inferred[i] for i, t in enumerate(out)]

    def _present(self, opdef, name, st) -> bool | None:
        kind = opdef.member_kind(name)
        if kind == "operand" and name in st["operands"]:
            return bool(st["operands"][name])
        if kind == "attr" and name in st["attrs"]:
            return st["attrs"][name] not in (None, False)
        return None

    def _format(self, opdef, toks, i, end, st, nres):
        while i < end:
            tok, _ = toks[i]
            if tok == "?(" and _flag_group(opdef, toks, i):
                i = self._flags(opdef, toks, i, st)
                continue
            if tok == "?(":
                j = group_end(toks, i)
                body = i + 1
                anchor = syntax_anchor(toks[body:j - 1])
                known = self._present(opdef, anchor, st) if anchor else None
                if known is None:
                    known = self._group_starts(opdef, toks[body:j - 1])
                if not known and self._comma_dropped(toks, body, j):
                    known, body = True, body + 1
                if known:
                    self._format(opdef, toks, body, j - 1, st, nres)
                i = j
                continue
            self._token(opdef, tok, st, nres)
            i += 1

    def _flags(self, opdef, toks, i, st) -> int:
        """A run of optional flag groups (`?( propagate_nan$propagate_nan )? ?( flush_to_zero..`),
        read in any order (NVIDIA prints flush_to_zero first); returns the index after the run."""
        words = {}
        while i < len(toks) and toks[i][0] == "?(" and _flag_group(opdef, toks, i):
            words[toks[i + 1][0]] = toks[i + 2][0][1:]
            i += 4
        while (word := next((w for w in words if self.accept_word(w)), None)) is not None:
            st["attrs"][words.pop(word)] = True
        return i

    def accept_word(self, word: str) -> bool:
        """`word` as a whole word (so `flush_to_zero` is not read out of `flush_to_zero_x`)."""
        self.skip()
        m = IDENT.match(self.text, self.pos)
        if m is None or m.group(0) != word:
            return False
        self.pos = m.end()
        return True

    def _comma_dropped(self, toks, body, end) -> bool:
        """NVIDIA prints `%mask token=%t` where the spec's syntax has `, token = $token`: an
        optional group `, <keyword> ...` whose keyword comes without the comma."""
        if end - body < 3 or toks[body][0] != "," or not IDENT.fullmatch(toks[body + 1][0]):
            return False
        saved = self.pos
        found = self.accept_word(toks[body + 1][0])
        self.pos = saved
        return found

    def _group_starts(self, opdef, toks) -> bool:
        """Whether the text continues with the optional group `toks`: its first two tokens
        match (two, because `?( , $mask )?` and `?( , token = $token )?` both start with `,`)."""
        saved = self.pos
        try:
            if toks and toks[0][0].startswith(("$", "type")):
                toks = toks[:1]         # a value, type or attribute first: one token decides
            for tok, _ in toks[:2]:
                if tok.startswith("$"):
                    name = tok[1:]
                    if opdef.member_kind(name) == "operand":
                        ok = self.peek_re(VALUE) is not None
                    else:
                        kind = opdef.attr_spec(name).kind
                        ok = kind == "flag" or not isinstance(kind, EnumKind) or \
                            self.peek_re(IDENT) in kind.values
                elif tok.startswith("type") or tok in ("?(", ")?"):
                    ok = True
                else:
                    ok = self.accept(tok)
                if not ok:
                    return False
            return True
        finally:
            self.pos = saved

    def _token(self, opdef, tok, st, nres):
        if tok.startswith("$"):
            name = tok[1:]
            if opdef.member_kind(name) == "operand":
                spec = opdef.operand_spec(name)
                if spec.variadic:
                    vals = self.comma_list(self.use) if self.peek_re(VALUE) else []
                else:
                    vals = [self.use()]
                st["operands"][name] = vals
            else:
                st["attrs"][name] = self.attr(opdef.attr_spec(name).kind)
        elif tok.startswith("type"):
            name = tok[tok.index("$") + 1:-1]
            self._types(opdef, name, tok.startswith("type1"), st, nres)
        else:
            self.expect(tok)

    def _types(self, opdef, name, one, st, nres):
        if opdef.member_kind(name) == "result":
            spec = next(r for r in opdef.results if r.name == name)
            fixed = sum(1 for r in opdef.results if not r.variadic)
            n = 1 if one or not spec.variadic else max(nres - fixed, 0)
            st["types"][name] = [self.type()] + [self.expect(",") or self.type() for _ in range(n - 1)]
            return
        vals = st["operands"].get(name, [])
        self.skip()
        start = self.pos
        if one:              # type1: one type for a uniform group, else one each
            vals = typed_once(vals)
        types = [self.type()] + [self.expect(",") or self.type() for _ in range(max(len(vals), 1) - 1)]
        for v, t in zip(vals, types):
            if v.type != t:
                raise self.error(f"{v.hint and '%' + v.hint or 'operand'} has type {v.type}, "
                                 f"but the text says {t}", start)


def _flag_group(opdef, toks, i) -> bool:
    """Whether toks[i:] starts with `?( word $flag )?` for a flag attribute of the op."""
    if i + 3 >= len(toks) or toks[i + 3][0] != ")?" or not toks[i + 2][0].startswith("$"):
        return False
    name = toks[i + 2][0][1:]
    return opdef.member_kind(name) == "attr" and opdef.attr_spec(name).kind == "flag" \
        and IDENT.fullmatch(toks[i + 1][0]) is not None


# ================================================================== entry points
def parse_module(text: str, file: str = "<mlir>") -> Module:
    """Parse a `cuda_tile.module @name { ... }` (or a bare list of module items)."""
    p = Parser(text, file)
    if p.accept_prefixed("module"):
        m = Module(p.expect_re(SYMBOL, "a module name")[1:])
        p.expect("{")
        close = "}"
    else:
        m, close = Module(), None
    top = Block()
    while not (close and p.accept(close)):
        if p.at_end():
            if close:
                raise p.error("expected '}' at the end of the module")
            break
        m.append(p.statement(top))
    for it in m.items:
        it.parent = None
    if not p.at_end():
        raise p.error(f"unexpected text after the module: {p.near()}")
    return m


def parse_type(text: str) -> Type:
    p = Parser(text)
    t = p.type()
    if not p.at_end():
        raise p.error(f"unexpected text after the type: {p.near()}")
    return t


# Names the regexes give to the custom parsers.
__all__ = ["Parser", "parse_module", "parse_type", "INT", "IDENT", "VALUE", "SYMBOL", "STRING"]
