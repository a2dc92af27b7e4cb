"""Syntax highlighting of Tile IR, CUDA C++ and PTX as HTML, for notebook views.

One table per language: (token class, regex), tried in order at each position, longest rule
first where they overlap; text no rule matches is copied escaped. The classes are CSS classes
(`tp-com`, `tp-str`, ...) that `CSS` colors, light and dark themes alike.
"""
from __future__ import annotations

import html
import re

_CPP_KEYWORDS = ("auto break case const constexpr continue do else extern for if inline "
                 "return static struct template typename unsigned using void while __global__ "
                 "__device__ __shared__ __launch_bounds__ __restrict__ __align__ int float "
                 "double bool char short long").split()

RULES: dict[str, list[tuple[str, str]]] = {
    "mlir": [("com", r"//[^\n]*"), ("str", r'"(?:[^"\\\n]|\\.)*"'),
             ("var", r"%[\w.#]+"), ("sym", r"@[\w.]+"), ("typ", r"\btile<[^>\n]*>|\b[if]\d+\b"),
             ("kw", r"\b(?:cuda_tile\.)?[a-z_]+(?=[ (])"), ("num", r"\b\d+(?:\.\d+)?\b")],
    "cpp": [("com", r"//[^\n]*|/\*.*?\*/"), ("pre", r"^[ \t]*#[^\n]*"),
            ("str", r'"(?:[^"\\\n]|\\.)*"'), ("kw", r"\b(?:" + "|".join(_CPP_KEYWORDS) + r")\b"),
            ("sym", r"\btp::\w+(?:::\w+)*"), ("num", r"\b\d+(?:\.\d+)?[fuUlL]*\b")],
    "ptx": [("com", r"//[^\n]*"), ("pre", r"^[ \t]*\.\w+"), ("var", r"%\w+"),
            ("kw", r"^[ \t]*(?:@!?%\w+[ \t]+)?[a-z][\w.]*"), ("num", r"\b0[xX][0-9a-fA-F]+\b|\b\d+\b")],
}
_COMPILED = {lang: re.compile("|".join(f"(?P<{cls}_{i}>{rx})" for i, (cls, rx) in enumerate(rules)),
                              re.M | re.S)
             for lang, rules in RULES.items()}

CSS = """
.tp-inspect{display:flex;flex-wrap:wrap;gap:8px;font-size:12px}
.tp-inspect .tp-pane{flex:1 1 380px;min-width:320px;border:1px solid #8884;border-radius:4px}
.tp-inspect .tp-pane h4{margin:0;padding:4px 8px;background:#8882;font-family:sans-serif}
.tp-inspect pre{margin:0;padding:6px 8px;max-height:480px;overflow:auto;line-height:1.3}
.tp-inspect table{margin:6px 8px;border-collapse:collapse}
.tp-inspect td,.tp-inspect th{padding:1px 8px;text-align:left}
.tp-com{color:#6a737d;font-style:italic}.tp-str{color:#22863a}.tp-kw{color:#d73a49}
.tp-var{color:#6f42c1}.tp-sym{color:#005cc5}.tp-typ{color:#e36209}.tp-num{color:#098658}
.tp-pre{color:#b31d28}
"""


def to_html(text: str, lang: str) -> str:
    """`text` as HTML with a <span class="tp-..."> around each token of language `lang`."""
    rx = _COMPILED[lang]
    out, pos = [], 0
    for m in rx.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        cls = m.lastgroup.split("_")[0]
        out.append(f'<span class="tp-{cls}">{html.escape(m.group())}</span>')
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)
