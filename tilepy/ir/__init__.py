"""Tile IR: values, ops (one table), builder, verifier and the textual printer."""
from .core import Block, BlockArg, Module, Operation, OpResult, Region, Value
from .opdef import DenseValue, OpDef
from .ops import OPS
from .builder import Builder, make_op
from .verifier import verify
from .printer import print_module, print_op
