"""Row softmax: one row-tile per block, ragged rows padded with -inf."""
import tilepy as ct


@ct.kernel
def softmax(x, y, BN: ct.Constant[int]):
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, BN), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (r, 0), (e / ct.sum(e, axis=1, keepdims=True)).astype(y.dtype))
