"""What a cubin says about one of its kernels: the parameter table the driver lays the launch
arguments out by, the block-size bounds, the static shared memory. Read from the ELF file itself
(no driver, no cuobjdump), so tests and `python -m tilepy doctor` can check what tilepy packs.

A cubin is an ELF64 file. Section `.nv.info.<kernel>` is a list of attributes, each
`u8 format, u8 attribute` then, by format, a u16 value (HVAL, NVAL, BVAL) or a u16 size and that
many bytes (SVAL). EIATTR_KPARAM_INFO (one per parameter): u32 index, u16 ordinal, u16 offset,
u32 with the size in bits 18..31; EIATTR_MAX_THREADS / EIATTR_REQNTID: three u32 (the
`__launch_bounds__` / `reqntid`); EIATTR_CBANK_PARAM_SIZE: the parameter bytes. Section
`.nv.shared.<kernel>` is the kernel's static shared memory (its size, no contents).
The names and numbers are cuobjdump's (`cuobjdump -elf`), checked against it in the tests.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import TileValueError

EIFMT_SVAL = 0x04
EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19


@dataclass(frozen=True)
class Param:
    ordinal: int
    offset: int
    size: int


@dataclass
class KernelInfo:
    name: str
    params: list[Param] = field(default_factory=list)      # by ordinal
    max_threads: tuple[int, int, int] | None = None
    req_threads: tuple[int, int, int] | None = None
    param_bytes: int | None = None
    static_smem: int = 0


def _sections(data: bytes) -> dict[str, bytes]:
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise TileValueError("not a 64-bit ELF file (a cubin)")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    strtab = heads[names][4]
    out = {}
    for name_off, kind, _, _, off, size in heads:
        end = data.index(b"\0", strtab + name_off)
        name = data[strtab + name_off:end].decode()
        out[name] = b"" if kind == 8 else data[off:off + size]      # SHT_NOBITS: no contents
        out.setdefault(f"#size:{name}", size.to_bytes(8, "little"))
    return out


def attributes(info: bytes):
    """(attribute, value bytes) of one .nv.info section."""
    i = 0
    while i + 4 <= len(info):
        fmt, attr = info[i], info[i + 1]
        if fmt == EIFMT_SVAL:
            size = struct.unpack_from("<H", info, i + 2)[0]
            yield attr, info[i + 4:i + 4 + size]
            i += 4 + size
        else:
            yield attr, info[i + 2:i + 4]
            i += 4


def kernel_info(cubin: bytes, name: str) -> KernelInfo:
    """The parameter table and limits of kernel `name` in `cubin`."""
    secs = _sections(cubin)
    info = secs.get(f".nv.info.{name}")
    if info is None:
        raise TileValueError(f"the cubin has no kernel '{name}' (no .nv.info.{name} section)")
    out = KernelInfo(name)
    for attr, v in attributes(info):
        if attr == EIATTR_KPARAM_INFO:
            _, ordinal, offset, word = struct.unpack_from("<IHHI", v)
            out.params.append(Param(ordinal, offset, word >> 18))
        elif attr == EIATTR_MAX_THREADS:
            out.max_threads = struct.unpack_from("<III", v)
        elif attr == EIATTR_REQNTID:
            out.req_threads = struct.unpack_from("<III", v)
        elif attr == EIATTR_CBANK_PARAM_SIZE:
            out.param_bytes = struct.unpack_from("<H", v)[0]
    out.params.sort(key=lambda p: p.ordinal)
    size = secs.get(f"#size:.nv.shared.{name}")
    out.static_smem = int.from_bytes(size, "little") if size else 0
    return out


def kernel_names(cubin: bytes) -> list[str]:
    return sorted(n[len(".nv.info."):] for n in _sections(cubin) if n.startswith(".nv.info."))
