"""Extract the example listings of the Tile IR operations chapter into `<name>.mlir` files.

Each listing in the chapter ends with "See cuda_tile.<name> for the full example listing."; the
listing is the code between that line and the previous listing, section heading or prose line.
Run `python tests/spec_examples/extract.py [path/to/tile-ir-8-operations.txt]` to regenerate.
"""
from __future__ import annotations

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPEC = os.path.join(HERE, "..", "..", "..", "..", "shared", "spec", "tile-ir-8-operations.txt")
SPEC_CANDIDATES = (os.environ.get("TILEPY_SPEC_DIR", ""), "/work/shared/spec")

_MARKER = re.compile(r"^See cuda_tile\.(\w+) for the full example listing\.\s*$")
_HEADING = re.compile(r"^\d+\.\d+\.\d+\. cuda_tile\.(\w+)#?\s*$")
# A listing line: blank, a value/comment/brace/type continuation, or a line starting with an op.
_CODE = re.compile(r"^\s*($|%|//|}|:|->|!|\[|tile<|partition_view<|tensor_view<|(cuda_tile\.)?(\w+)\b)")


def spec_path() -> str | None:
    for d in SPEC_CANDIDATES:
        p = os.path.join(d, "tile-ir-8-operations.txt") if d else ""
        if p and os.path.exists(p):
            return p
    return None


def listings(text: str) -> dict[str, str]:
    """name -> code of each example listing, in chapter order."""
    lines = text.splitlines()
    ops = {m.group(1) for m in map(_HEADING.match, lines) if m} | {"entry", "experimental$func"}
    out: dict[str, str] = {}

    def is_code(line: str) -> bool:
        if line[:1] in (" ", "(") and "•" not in line:      # indented continuation lines
            return True
        m = _CODE.match(line)
        word = m.group(3) if m else None
        return bool(m) and (word is None or word in ops or line.lstrip().startswith("experimental"))

    for i, line in enumerate(lines):
        m = _MARKER.match(line)
        if not m:
            continue
        j = i
        while j > 0 and not _MARKER.match(lines[j - 1]) and is_code(lines[j - 1]):
            j -= 1
        body = "\n".join(lines[j:i]).strip("\n")
        out[m.group(1)] = body + "\n"
    return out


def main(argv):
    path = argv[1] if len(argv) > 1 else spec_path()
    if path is None:
        sys.exit("spec not found; pass the path of tile-ir-8-operations.txt")
    with open(path, encoding="utf-8") as f:
        found = listings(f.read())
    for name, code in found.items():
        with open(os.path.join(HERE, f"{name}.mlir"), "w", encoding="utf-8") as f:
            f.write(code)
    print(f"wrote {len(found)} listings to {HERE}")


if __name__ == "__main__":
    main(sys.argv)
