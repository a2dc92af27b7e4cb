"""The C++ type of a layout (lowering/layouts.py): each encoding mirrors the template of the same
name in include/tilepy/layout.h, whose parameters are the encoding's fields in order, e.g.
MmaAcc(1, 64, 64, 2, 2) -> `tp::MmaAcc<1, 64, 64, 2, 2>`."""
from __future__ import annotations

import dataclasses


def layout_type(layout) -> str:
    args = ", ".join(str(getattr(layout, f.name)) for f in dataclasses.fields(layout))
    return f"tp::{type(layout).__name__}<{args}>"
