"""C++ identifiers for names that come from the user's code (kernel, argument and local names).

A Python name is not always a usable C++ identifier: it may be a C++ keyword (`double`, `int`,
`new`), a reserved identifier (`_Foo`, `__x`: any name with a leading underscore or a double
underscore belongs to the implementation, and the headers define macros of that form), a name
the emitted code itself spells (`int32_t`, `threadIdx`, `tp`), or a runtime macro (`TP_NT`).
`safe(name)` says whether the name can be emitted as it is; `kernel_symbol` is the kernel's
`extern "C"` symbol (the launch paths look the kernel up by the symbol the artifact records);
the emitter's `fresh` names locals. This module is light: the launch path imports it on a cache
hit.
"""
from __future__ import annotations

import re

KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern
false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public register reinterpret_cast requires return short signed
sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())

# Names the emitted code and the runtime headers spell without a namespace, and macros of the
# C and CUDA headers they include.
EMITTED = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize tp dim3 main std int8_t int16_t int32_t int64_t
uint8_t uint16_t uint32_t uint64_t size_t uintptr_t intptr_t ptrdiff_t assert printf memcpy NULL
INFINITY NAN HUGE_VAL errno stdin stdout stderr EOF CHAR_BIT INT_MAX INT_MIN UINT_MAX FLT_MAX
DBL_MAX M_PI M_E SIGINT
""".split())

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def safe(name: str) -> bool:
    """Can `name` be a C++ identifier of the emitted code as it is?"""
    return (bool(_IDENT.match(name)) and "__" not in name and not name.endswith("_")
            and name not in KEYWORDS and name not in EMITTED
            and not name.startswith(("tp_", "TP_")))


def tidy(name: str) -> str:
    """`name` with every character outside [A-Za-z0-9_] and every run of underscores made one
    underscore, and no underscore at either end (may be empty)."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", name)).strip("_")


PREFIX = "tp_kernel_"


def kernel_symbol(name: str) -> str:
    """The kernel's C++ symbol, always `tp_kernel_<tidied name>`: a kernel named after a C
    library function (`index`, `exp`, `wait`) neither conflicts with its declaration nor binds
    to it (one kernel per translation unit, so the symbol only has to be private to tilepy)."""
    return PREFIX + (tidy(name) or "k")


def kernel_name(symbol: str) -> str:
    """The name messages show for a kernel's `symbol` (its tidied Python name)."""
    return symbol.removeprefix(PREFIX)
