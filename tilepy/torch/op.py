"""`op`: a function that launches tilepy kernels, declared as a torch custom op; `launch`: the
launch to use inside it (a real launch, or in the fake implementation a checked non-launch)."""
from __future__ import annotations

import contextvars
import functools
import inspect
import re

import torch

from ..api.launcher import launch as _launch
from ..errors import TileValueError
from .autograd import attach_backward
from .fake import check_launch

_FAKE = contextvars.ContextVar("tilepy_torch_fake", default=False)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")


def op(name: str, fn=None, /, *, mutates_args=(), fake=None, backward=None, save=(),
       device_types=None):
    """Declare `fn` (which allocates its outputs and launches tilepy kernels with
    `tilepy.torch.launch`) as the torch custom op `name` ("namespace::op_name"); returns torch's
    `CustomOpDef`, called like `fn`. As a decorator: `@op("mylib::gelu")`.

    - The schema comes from `fn`'s type annotations (torch.library.custom_op's rules: Tensor,
      int, float, bool, str, their lists and Optionals; a return annotation is required).
    - `mutates_args`: names of the tensor arguments `fn` writes into (torch requires them to be
      declared; `torch.library.opcheck` catches one that is not). Default: none.
    - `fake`: the output-shape function, called with the op's arguments as tensors without data;
      returns outputs of the right shape, dtype and device (`torch.empty(...)`, `x.new_empty`).
      Default: `fn` itself, with `launch` not launching (it checks the launch against the kernel
      and traces the kernel's specialization when shapes are static). Give `fake` when `fn`
      needs data to size its outputs.
    - `backward`: the gradient, a function of (one gradient per output, then the values named
      in `save`) returning one gradient (or None) per tensor argument, in order. Make it of
      other `op`s, so `torch.compile` traces the backward too.
    - `save`: names of `fn`'s parameters, and "out" (the output; "out0", "out1", ... for one of
      several), that `backward` needs.
    - `device_types`: restrict `fn` to these torch device types (default: all; CPU tensors run
      on tilepy's CPU backend, CUDA tensors on their GPU).
    """
    if fn is None:
        return lambda f: op(name, f, mutates_args=mutates_args, fake=fake, backward=backward,
                            save=save, device_types=device_types)
    if not isinstance(name, str) or not _NAME.match(name):
        raise TileValueError(f"op name {name!r} must be 'namespace::name' (identifiers), e.g. "
                             f"'mylib::gelu'")
    if not callable(fn):
        raise TileValueError(f"op {name}: expected a function to declare (got "
                             f"{type(fn).__name__})")
    if save and backward is None:
        raise TileValueError(f"op {name}: save={tuple(save)!r} is given without backward=")
    opdef = torch.library.custom_op(name, fn, mutates_args=mutates_args,
                                    device_types=device_types)
    opdef.register_fake(fake if fake is not None else _body_as_fake(fn))
    if backward is not None:
        attach_backward(opdef, name, list(inspect.signature(fn).parameters), backward, save)
    return opdef


def _body_as_fake(fn):
    """The op's body run on fake tensors: allocations are fake, `launch` launches nothing."""
    @functools.wraps(fn)
    def fake_impl(*args, **kwargs):
        token = _FAKE.set(True)
        try:
            return fn(*args, **kwargs)
        finally:
            _FAKE.reset(token)
    return fake_impl


def launch(stream, grid, kernel, args):
    """`tilepy.launch(stream, grid, kernel, args)` inside a `tilepy.torch.op`; in the op's fake
    implementation it checks the launch and specializes the kernel instead of running it."""
    if _FAKE.get():
        return check_launch(grid, kernel, args)
    return _launch(stream, grid, kernel, args)
