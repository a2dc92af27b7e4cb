"""Row softmax: one (1, BLOCK) row tile per block, computed in f32."""
import tilepy as ct


@ct.kernel
def softmax(x, y, BLOCK: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    out = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=out.astype(y.dtype))
