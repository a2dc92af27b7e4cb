"""Tile IR: values, ops (one table), builder, verifier, printer and parser."""
from .core import Block, BlockArg, Module, Operation, OpResult, Region, Value
from .attrs import AssumePredicate, DenseValue, OptimizationHints
from .opdef import OpDef
from .ops import OPS
from .builder import Builder, make_op
from .verifier import verify
from .printer import print_module, print_op
from .parser import parse_module, parse_type
