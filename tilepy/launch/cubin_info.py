"""What a cubin says about one of its kernels: the parameter table the driver lays the launch
arguments out by, the block-size bounds, the static shared memory. Read from the ELF file itself
(no driver, no cuobjdump), so tests and `python -m tilepy doctor` can check what tilepy packs.

A cubin is an ELF64 file. Section `.nv.info.<kernel>` is a list of attributes, each
`u8 format, u8 attribute` then, by format, a u16 value (HVAL, NVAL, BVAL) or a u16 size and that
many bytes (SVAL). EIATTR_KPARAM_INFO (one per parameter): u32 index, u16 ordinal, u16 offset,
u32 with the size in bits 18..31; EIATTR_MAX_THREADS / EIATTR_REQNTID: three u32 (the
`__launch_bounds__` / `reqntid`); EIATTR_CBANK_PARAM_SIZE: the parameter bytes. Section
`.nv.shared.<kernel>` is the kernel's static shared memory (its size, no contents); on sm_90 and
newer it starts with 1 KiB reserved by the system, before the kernel's first shared variable.
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
EIATTR_KPARAM_INFO_V2 = 0x45      # tileiras' cubins: u32 index, u16 ordinal, u16 offset, u16 size,
#                                   then the pointee's alignment and address space


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
    static_smem: int = 0            # the kernel's shared section, reserved bytes included
    reserved_smem: int = 0          # what the system reserves at its start (1 KiB on sm_90+)

    @property
    def user_smem(self) -> int:
        """The kernel's own static shared memory (what the 48 KiB limit applies to)."""
        return self.static_smem - self.reserved_smem


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    size: int
    data: bytes               # empty for SHT_NOBITS (.nv.shared.*: a size, no contents)


SHT_NOBITS = 8


def sections(data: bytes) -> dict[str, Section]:
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise TileValueError("not a 64-bit ELF file (a cubin)")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    strtab = heads[names][4]
    out = {}
    for i, (name_off, kind, _, _, off, size) in enumerate(heads):
        name = data[strtab + name_off:data.index(b"\0", strtab + name_off)].decode()
        out[name] = Section(i, name, size, b"" if kind == SHT_NOBITS else data[off:off + size])
    return out


RESERVED_SMEM = 1024


def _reserves_smem(secs: dict[str, Section]) -> bool:
    """Does the cubin put the system's reserved shared memory (symbol `.nv.reservedSmem.*`) at
    the start of each kernel's shared section (sm_90 and newer, seen with NVRTC 13.5: the
    section is then 1024 bytes larger than ptxas's `smem` report)?"""
    symtab, strtab = secs.get(".symtab"), secs.get(".strtab")
    if symtab is None or strtab is None:
        return False
    for k in range(0, len(symtab.data) - 23, 24):
        name_off = struct.unpack_from("<I", symtab.data, k)[0]
        if strtab.data.startswith(b".nv.reservedSmem", name_off):
            return True
    return False


def symbols(data: bytes) -> dict[str, int]:
    """{name: size in bytes} of the cubin's symbols (`.symtab`: Elf64_Sym, 24 bytes each), e.g.
    a kernel's `extern "C" __device__` globals, which the driver finds by name."""
    secs = sections(data)
    symtab, strtab = secs.get(".symtab"), secs.get(".strtab")
    out = {}
    if symtab is None or strtab is None:
        return out
    for k in range(0, len(symtab.data) - 23, 24):
        name_off, _, _, _, _, size = struct.unpack_from("<IBBHQQ", symtab.data, k)
        name = strtab.data[name_off:strtab.data.index(b"\0", name_off)].decode()
        out[name] = size
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
    secs = sections(cubin)
    info = secs.get(f".nv.info.{name}")
    if info is None:
        raise TileValueError(f"the cubin has no kernel '{name}' (no .nv.info.{name} section)")
    out = KernelInfo(name)
    for attr, v in attributes(info.data):
        if attr == EIATTR_KPARAM_INFO:
            _, ordinal, offset, word = struct.unpack_from("<IHHI", v)
            out.params.append(Param(ordinal, offset, word >> 18))
        elif attr == EIATTR_KPARAM_INFO_V2:
            _, ordinal, offset, size = struct.unpack_from("<IHHH", v)
            out.params.append(Param(ordinal, offset, size))
        elif attr == EIATTR_MAX_THREADS:
            out.max_threads = struct.unpack_from("<III", v)
        elif attr == EIATTR_REQNTID:
            out.req_threads = struct.unpack_from("<III", v)
        elif attr == EIATTR_CBANK_PARAM_SIZE:
            out.param_bytes = struct.unpack_from("<H", v)[0]
    out.params.sort(key=lambda p: p.ordinal)
    shared = secs.get(f".nv.shared.{name}")
    if shared is not None:
        out.static_smem = shared.size
        out.reserved_smem = RESERVED_SMEM if _reserves_smem(secs) and shared.size else 0
    return out


def kernel_names(cubin: bytes) -> list[str]:
    return sorted(n[len(".nv.info."):] for n in sections(cubin) if n.startswith(".nv.info."))
