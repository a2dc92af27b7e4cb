"""The element types NVIDIA's tileiras compiles for each GPU architecture: fp8 from sm_90 (sm_89
has fp8 instructions, but tileiras does not take them there), e8m0 and fp4 e2m1 from sm_100,
e5m3 from sm_107 (Rubin). What a bytecode *version* lacks is the writer's check (types.py
`SIMPLE_SINCE`); this one is the target's, made before bytecode or a cubin is made for it."""
from __future__ import annotations

from ..errors import TileUnsupportedFeatureError
from ..types import ElementType
from ..types.dtype import default_signed

MIN_SM = {"e4m3": 90, "e5m2": 90, "e8m0": 100, "e2m1": 100, "e5m3": 107}


def _elements(t):
    """The element types inside a type: a tile's (a pointer's pointee), a view's."""
    while t is not None and not isinstance(t, ElementType):
        t = getattr(t, "elem", None) or getattr(t, "pointee", None) or getattr(t, "view", None)
    return t


def check_target(module, arch: str, sm: int) -> None:
    """Refuse, at the op's line, the first value of `module` whose element type tileiras does not
    compile for `arch` (sm_`sm`)."""
    for op in module.walk():
        values = [*op.operands, *op.results,
                  *(a for r in op.regions for b in r.blocks for a in b.args)]
        for v in values:
            elem = _elements(v.type)
            need = MIN_SM.get(getattr(elem, "name", None))
            if need is not None and sm < need:
                name = default_signed(elem).name
                raise TileUnsupportedFeatureError(
                    f"{name} is not supported on {arch}: tileiras compiles {name} for "
                    f"sm_{need} and later", loc=op.loc)
