"""The C++ type of a layout (lowering/layouts.py): each encoding mirrors the template of the same
name in include/tilepy/layout.h, whose parameters are the encoding's fields in order, e.g.
MmaAcc(1, 64, 64, 2, 2) -> `tp::MmaAcc<1, 64, 64, 2, 2>`; trailing fields at their defaults are
left to the template's defaults (MmaAcc's wg 0)."""
from __future__ import annotations

import dataclasses


def layout_type(layout) -> str:
    fields = list(dataclasses.fields(layout))
    while fields and fields[-1].default is not dataclasses.MISSING and \
            getattr(layout, fields[-1].name) == fields[-1].default:
        fields.pop()
    args = ", ".join(str(getattr(layout, f.name)) for f in fields)
    return f"tp::{type(layout).__name__}<{args}>"
