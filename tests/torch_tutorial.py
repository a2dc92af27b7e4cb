"""Tutorial 6's kernels and op functions (GELU forward and backward), loaded without running the
tutorial: definitions.load compiles only its functions, so the names its cells define (torch,
tilepy.torch, the tile sizes) are supplied here."""
from definitions import load


def tutorial6():
    import torch

    import tilepy.torch as tpt
    ns = load("06_torch_interop")
    ns.gelu.__globals__.update(torch=torch, tpt=tpt, TM=16, TN=64)
    return ns
