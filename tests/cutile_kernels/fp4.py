"""fp4 (float4_e2m1fn) and float8_e5m3fnu, in the style of cuTile's NVFP4/MXFP4 code: fp4 lives in
memory two values per byte (uint8 arrays), read with unpack_from_bytes and written with
pack_to_bytes; e5m3 block scales come as uint8 bytes too."""
import tilepy as ct

ConstInt = ct.Constant[int]


@ct.kernel
def quantize_fp4(X, Packed, Back, TM: ConstInt, TN: ConstInt):
    """Packed = X rounded to fp4, two per byte; Back = those fp4 values as float32."""
    i = ct.bid(0)
    x = ct.load(X, (i, 0), shape=(TM, TN))
    q = ct.astype(x, ct.float4_e2m1fn)
    ct.store(Packed, (i, 0), tile=ct.reshape(ct.pack_to_bytes(q), (TM, TN // 2)))
    ct.store(Back, (i, 0), tile=q.astype(ct.float32))


@ct.kernel
def e5m3_bytes(X, Bytes, Back, T: ConstInt):
    """Bytes = X rounded to float8_e5m3fnu (its codes); Back = the codes read back as float32."""
    x = ct.load(X, (0,), shape=(T,))
    b = ct.pack_to_bytes(ct.astype(x, ct.float8_e5m3fnu))
    ct.store(Bytes, (0,), tile=b)
    ct.store(Back, (0,), tile=ct.unpack_from_bytes(b, ct.float8_e5m3fnu).astype(ct.float32))


@ct.kernel
def bytes_roundtrip(X, Bytes, Y, T: ConstInt):
    """Bytes = the bytes of X; Y = Bytes read back as X's dtype."""
    x = ct.load(X, (0,), shape=(T,))
    b = ct.pack_to_bytes(x)
    ct.store(Bytes, (0,), tile=b)
    ct.store(Y, (0,), tile=ct.unpack_from_bytes(b, Y.dtype))


@ct.kernel
def fp4_scaled_matmul(A, SA, B, SB, C, tm: ConstInt, tn: ConstInt, tk: ConstInt,
                      block: ConstInt, e5m3_scales: ct.Constant[bool]):
    """C = (A * SA) @ (B * SB): fp4 operands packed along K for A ([M, K/2] bytes) and along N
    for B ([K, N/2] bytes), one scale per `block` elements of K (e5m3 scales as bytes)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1] * 2, tk)):
        a_bytes = ct.load(A, (i, k), shape=(tm, tk // 2)).reshape((-1,))
        a = ct.unpack_from_bytes(a_bytes, ct.float4_e2m1fn).reshape((tm, tk))
        b_bytes = ct.load(B, (k, j), shape=(tk, tn // 2)).reshape((-1,))
        b = ct.unpack_from_bytes(b_bytes, ct.float4_e2m1fn).reshape((tk, tn))
        sa = ct.load(SA, (i, k), shape=(tm, tk // block))
        sb = ct.load(SB, (k, j), shape=(tk // block, tn))
        if e5m3_scales:
            sa = ct.unpack_from_bytes(sa.reshape((-1,)), ct.float8_e5m3fnu).reshape(
                (tm, tk // block))
            sb = ct.unpack_from_bytes(sb.reshape((-1,)), ct.float8_e5m3fnu).reshape(
                (tk // block, tn))
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, (i, j), tile=acc)
