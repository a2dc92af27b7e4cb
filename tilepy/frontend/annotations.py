"""What each kernel parameter's annotation says, as a tree (cuTile's rule for tuple parameters).

A leaf holds the markers of one value: `Constant`, a ScalarAnnotation (`ScalarInt64`), an
ArrayAnnotation (`IndexedWithInt64`) or a ListAnnotation. `tuple[A, B]` is a tuple of two
annotations (the argument must be a tuple of that length), `tuple[A, ...]` one annotation for
every item, and a leaf given for a tuple applies to every item, recursively (`Constant[tuple]`
makes every value of the tuple a constant). `Constant[...]` around a tuple annotation marks
each of its leaves. Built once per kernel (frontend/kernel.py); specialize.py walks it beside
the argument.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass

from ..errors import TileArgumentTypeError
from .api import ArrayAnnotation, ConstantAnnotation, ListAnnotation, ScalarAnnotation


@dataclass(frozen=True)
class Leaf:
    constant: bool = False
    scalar: ScalarAnnotation | None = None
    array: ArrayAnnotation | None = None
    list: ListAnnotation | None = None

    def check(self, what: str):
        """cuTile's rule: one marker per value (TypeError naming the first two given)."""
        given = [name for name, on in (("Constant annotation", self.constant),
                                       ("ScalarAnnotation/ScalarInt64", self.scalar),
                                       ("ArrayAnnotation/IndexedWithInt64", self.array),
                                       ("ListAnnotation", self.list)) if on]
        if len(given) > 1:
            raise TileArgumentTypeError(f"Invalid {what}: {given[0]} cannot be combined with "
                                        f"{given[1]}")

    @property
    def array_annotation(self):
        """The ArrayAnnotation of an array (or of a list's arrays), None when not annotated."""
        return self.array if self.array is not None else \
            self.list.element if self.list is not None else None

    @property
    def index_dtype(self):
        """The index dtype of an array (or of a list's arrays), None when not annotated."""
        ann = self.array_annotation
        return None if ann is None else ann.index_dtype


@dataclass(frozen=True)
class EachItem:
    """`tuple[A, ...]`: one annotation for every item of a tuple of any length."""
    each: object


@dataclass(frozen=True)
class Items:
    """`tuple[A, B, ...]`: one annotation per item; the tuple has exactly that length."""
    items: tuple


PLAIN = Leaf()


def annotation_node(annotation, outer_constant: bool = False):
    """The tree of one parameter's annotation (`inspect.Parameter.empty`: a plain leaf)."""
    if isinstance(annotation, str):            # a postponed annotation that did not resolve
        return Leaf(constant=outer_constant or "Constant" in annotation)
    if getattr(annotation, "__name__", None) == "Constant" and \
            getattr(annotation, "__module__", "").startswith("tilepy"):
        return Leaf(constant=True)              # bare `ct.Constant`
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        constant = outer_constant or any(isinstance(m, ConstantAnnotation) for m in meta)
        if typing.get_origin(inner) is tuple:
            return _tuple_node(inner, constant)
        return Leaf(constant, _first(meta, ScalarAnnotation), _first(meta, ArrayAnnotation),
                    _first(meta, ListAnnotation))
    if typing.get_origin(annotation) is tuple:
        return _tuple_node(annotation, outer_constant)
    return Leaf(constant=outer_constant)


def _tuple_node(annotation, constant: bool):
    args = typing.get_args(annotation)
    if len(args) == 2 and args[1] is Ellipsis:
        return EachItem(annotation_node(args[0], constant))
    return Items(tuple(annotation_node(a, constant) for a in args))


def _first(meta, cls):
    return next((m for m in meta if isinstance(m, cls)), None)


def parameter_nodes(func, signature) -> dict:
    """name -> annotation tree, for every parameter of `func`."""
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:
        hints = dict(getattr(func, "__annotations__", {}))
    return {name: annotation_node(hints.get(name, p.annotation))
            for name, p in signature.parameters.items()}
