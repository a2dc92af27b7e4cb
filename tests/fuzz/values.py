"""Random element values with the special cases that find bugs: signed zeros, Inf, NaN,
subnormals, the largest finite values, halfway points, integer extremes."""
from __future__ import annotations

import numpy as np

from tilepy.interpret import floats as F
from tilepy.types import NUMPY_DTYPE


def _float_specials(elem) -> np.ndarray:
    fmt = F.FORMATS[elem]
    tiny = np.ldexp(1.0, fmt.emin - fmt.p + 1)        # smallest subnormal
    normal = np.ldexp(1.0, fmt.emin)
    ulp1 = np.ldexp(1.0, 1 - fmt.p)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, fmt.max, -fmt.max, tiny, -tiny, normal,
            normal - tiny, 1.0 + ulp1, 1.0 + ulp1 / 2, 1.0 + 1.5 * ulp1, 65504.0, 100.0, -7.5,
            np.inf, -np.inf, np.nan]
    for p in (3, 4, 8, 11, 24):          # just off the halfway points of narrower formats
        for tail in (2.0 ** -(p + 12), -2.0 ** -(p + 12), 2.0 ** -(p + 30), -2.0 ** -(p + 30)):
            vals.append(1.0 + 2.0 ** -p + tail)
    return np.array(vals)


def random_floats(elem, shape, rng) -> np.ndarray:
    """Storage values: mostly moderate normals, with specials mixed in."""
    n = int(np.prod(shape, dtype=np.int64))
    scale = np.exp2(rng.integers(-6, 7, n))
    x = rng.standard_normal(n) * scale
    if rng.random() < 0.3:
        x = np.round(x * 4) / 4              # small dyadic values: exact sums, ties
    specials = _float_specials(elem)
    pick = rng.random(n) < rng.choice([0.0, 0.05, 0.2])
    x[pick] = rng.choice(specials, pick.sum())
    return F.encode(F.round_f64(x, elem), elem).reshape(shape)


def random_ints(elem, shape, rng) -> np.ndarray:
    dt = NUMPY_DTYPE[elem]
    if elem.name == "i1":
        if rng.random() < 0.3:     # i1 in memory is a byte: any nonzero byte reads as true
            nz = rng.integers(0, 256, shape, dtype=np.uint8) * (rng.random(shape) < 0.5)
            return nz.astype(np.uint8).view(bool)
        return (rng.random(shape) < 0.5)
    info = np.iinfo(dt)
    n = int(np.prod(shape, dtype=np.int64))
    mode = rng.integers(0, 3)
    if mode == 0:
        x = rng.integers(-20, 21, n)
    elif mode == 1:
        x = rng.integers(info.min, info.max, n, endpoint=True, dtype=np.int64)
    else:
        x = rng.integers(-1000, 1001, n)
    specials = [0, 1, -1, 2, info.min, info.max, info.min + 1, info.max - 1, 7, -8]
    for k in range(12, dt.itemsize * 8 - 1):   # just off float halfway points (itof rounding)
        for p in (8, 11, 24):
            if k > p:
                specials += [(1 << k) + (1 << (k - p)) + 1, (1 << k) + (1 << (k - p)) - 1]
    specials = np.array(specials, dtype=np.int64)
    pick = rng.random(n) < 0.15
    x[pick] = rng.choice(specials, pick.sum())
    return x.astype(np.int64).astype(dt).reshape(shape)


def random_values(elem, shape, rng) -> np.ndarray:
    return random_floats(elem, shape, rng) if elem.is_float else random_ints(elem, shape, rng)
