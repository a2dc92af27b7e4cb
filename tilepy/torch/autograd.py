"""An op's gradient: `backward(*grad_outputs, *saved)` -> one gradient per tensor argument,
registered with `register_autograd` (torch saves what `save` names in `setup_context`)."""
from __future__ import annotations

import torch

from ..errors import TileValueError


def save_plan(opname: str, params: list[str], save) -> list[tuple[str, int | None]]:
    """Per name in `save`: ("in", parameter index) or ("out", output index, None if the only)."""
    if isinstance(save, str):
        save = (save,)
    plan = []
    for s in save:
        if s in params:
            plan.append(("in", params.index(s)))
        elif s == "out":
            plan.append(("out", None))
        elif isinstance(s, str) and s.startswith("out") and s[3:].isdigit():
            plan.append(("out", int(s[3:])))
        else:
            raise TileValueError(f"op {opname}: save names {s!r}, which is neither a parameter "
                                 f"({', '.join(params)}) nor 'out' / 'out0', 'out1', ...")
    return plan


_TENSOR = object()        # stands for a saved tensor (kept by ctx.save_for_backward)


def _pick(plan_item, inputs, output):
    kind, i = plan_item
    if kind == "in":
        return inputs[i]
    return output if i is None else output[i]


def attach_backward(opdef, opname: str, params: list[str], backward, save):
    if not callable(backward):
        raise TileValueError(f"op {opname}: backward must be a function (got "
                             f"{type(backward).__name__})")
    plan = save_plan(opname, params, save)

    def setup_context(ctx, inputs, output):
        values = [_pick(p, inputs, output) for p in plan]
        is_tensor = [isinstance(v, torch.Tensor) for v in values]
        ctx.save_for_backward(*[v for v, t in zip(values, is_tensor) if t])
        ctx.tp_saved = [_TENSOR if t else v for v, t in zip(values, is_tensor)]
        ctx.tp_tensor_inputs = tuple(isinstance(x, torch.Tensor) for x in inputs)

    def backward_impl(ctx, *grads):
        tensors = iter(ctx.saved_tensors)
        saved = [next(tensors) if v is _TENSOR else v for v in ctx.tp_saved]
        got = backward(*grads, *saved)
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        wanted = ctx.tp_tensor_inputs
        if len(got) != sum(wanted):
            names = [n for n, t in zip(params, wanted) if t]
            raise TileValueError(f"op {opname}: backward returned {len(got)} gradient(s); it "
                                 f"must return one per tensor argument ({', '.join(names)})")
        grads_in = iter(got)
        return tuple(next(grads_in) if t else None for t in wanted)

    opdef.register_autograd(backward_impl, setup_context=setup_context)
