"""The disk index of traced kernels: (kernel, specialization) -> what the trace produced.

A new process that launches or compiles a kernel it compiled before skips tracing, lowering and
emission: it finds the emitted C++ (and the facts the launch needs) here, and the binary in the
content-addressed cache under the key of that C++, as usual. One entry per *slot*:

    slot key = hash(tilepy's build fingerprint, the kernel function's fingerprint (module, name,
                    line, source file hash, defaults: not the file's path), its options, the
                    specialization)

holding up to MAX_VARIANTS *variants*, each a record whose `deps` are what its trace read from
outside (frontend/identity.py). A variant is used only when every dependency still has its
fingerprint in this process, so an edited helper, global or closure value misses. Entries are
ordinary cache entries (kind "spec": atomic writes, corruption is a miss, LRU eviction,
`python -m tilepy cache list|clear`); TILEPY_CACHE_DIR=off turns the index off with the rest.
"""
from __future__ import annotations

import json

from ..launch import cache

KIND = "spec"
MAX_VARIANTS = 8


def slot_key(kernel, params) -> str | None:
    """The slot of `kernel` specialized as `params`; None when it cannot be fingerprinted
    (a Constant value or option tilepy cannot fingerprint, a function without a source file, a
    dataclass parameter)."""
    if cache.cache_dir() is None:
        return None
    from ..frontend.identity import fingerprint, tilepy_build
    from ..host.params import ConstParam, DataclassParam
    parts = [fingerprint(kernel.func), fingerprint(kernel.options)]
    for p in params:
        if _holds(p, DataclassParam):     # a user's class: its methods are not fingerprinted
            return None
        if isinstance(p, ConstParam):
            f = fingerprint(p.value)
            parts.append(None if f is None else f"{p.name}=const:{f}")
        else:
            parts.append(repr(p))            # dtype, rank, strides, alignment, ... (specialize.py)
    if None in parts:
        return None
    return cache.key_of(KIND, tilepy_build(), *parts)


def _holds(p, kind) -> bool:
    """Whether parameter `p` is or holds (a tuple's item, recursively) a `kind`."""
    return isinstance(p, kind) or any(_holds(q, kind) for q in getattr(p, "items", ()))


def _variants(slot: str) -> list[dict]:
    entry = cache.get(KIND, slot)
    if entry is None:
        return []
    try:
        variants = json.loads(entry.payload)
    except ValueError:
        return []
    return [v for v in variants if isinstance(v, dict) and isinstance(v.get("deps"), list)] \
        if isinstance(variants, list) else []


def find(kernel, slot: str) -> dict | None:
    """The record of a variant of `slot` whose dependencies all hold now, or None. Its "moved"
    maps the files it was traced from to where the kernel and its helpers are now (a notebook
    cell in a new kernel process, a moved module): the backend renames them in its artifact;
    "values": its dependencies' values in this process."""
    from ..frontend.identity import Deps
    for record in _variants(slot):
        values = Deps.resolve(record["deps"], kernel.func)
        if values is None:
            continue
        try:
            moved = Deps.moved_files(record.get("files", []), values, kernel.func)
        except (TypeError, ValueError, IndexError):     # not a record this code wrote
            return None
        return {**record, "moved": moved, "values": values}
    return None


def store(kernel, slot: str, record: dict):
    """Add `record` (with its "deps") to the slot, replacing a variant with the same deps and
    dropping the oldest past MAX_VARIANTS."""
    old = [v for v in _variants(slot) if v["deps"] != record["deps"]]
    variants = (old + [record])[-MAX_VARIANTS:]
    cache.put(KIND, slot, json.dumps(variants).encode(),
              {"kind": KIND, "name": kernel.name, "variants": len(variants)})
