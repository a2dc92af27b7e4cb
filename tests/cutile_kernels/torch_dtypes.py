"""torch dtype objects where cuTile takes a dtype, as in cuTile's VectorAddition sample."""
import torch

import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def vec_add_gather(a, b, c, TILE: ConstInt):
    bid = ct.bid(0)
    indices = bid * TILE + ct.arange(TILE, dtype=torch.int32)
    a_tile = ct.gather(a, indices)
    b_tile = ct.gather(b, indices)
    s = (a_tile + b_tile).astype(torch.float16).astype(torch.float32)
    pos = ct.full((TILE,), True, dtype=torch.bool) & (s > 0)
    ct.scatter(c, indices, ct.where(pos, s, ct.zeros((TILE,), dtype=torch.float32)))
