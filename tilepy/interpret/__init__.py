"""The reference interpreter: an independent execution of a verified Tile IR module with numpy.

    tilepy.interpret.run(module, grid, args, on_op=None)      # any Tile IR module
    tilepy.interpret.launch(grid, kernel, args, on_op=None)   # a @tilepy.kernel, like tilepy.launch
    TILEPY_INTERPRET=1 / tilepy.launch(..., backend="interpret")

It follows spec chapter 6 (a grid of tile blocks, each a single thread of execution with its own
registers, memory ops in an order the tokens allow) and each op's semantics in chapter 8. It never
guesses: an op or modifier it does not execute raises TileUnsupportedFeatureError naming it, and
undefined behavior raises TileValueError naming the op and the user's line: an index outside a
partition view's index space, an access outside every allocation or misaligned, a data race
between tile blocks on weak memory accesses, an infinite `loop` (after `max_loop_iterations`).
Lanes whose value the spec leaves undefined (past a view's edge without a padding value, masked
pointer loads without one, division by zero, ftoi of Inf, a broken `overflow` promise) are
tracked instead and only an error once observed: stored, used as a pointer, index, loop bound or
branch condition (see poison.py): padded lanes of a ragged tile may hold garbage, as on a GPU.

Choices where the spec is silent (documented, and what the CUDA C++ runtime does too): shift
amounts >= the bit width clamp like PTX shl/shr (0, or the sign for signed shri); tile blocks run
in order x fastest; duplicate addresses in one pointer store keep the last element's value;
masked-off atomic_rmw results are undefined lanes; partition-view indices are per tile dimension
(tile dimension i indexes view dimension dim_map[i], as cuTile's `order`); itof into e4m3/e5m2
saturates (spec 5.1.3's table; 8.4.5's warning says NaN) .

Arguments are bound like the CPU backend binds them: one value per entry parameter, an array being
a base pointer (a numpy array, or `(array, element offset)`) followed by its int32 shapes and
non-unit strides (see frontend/context.py ArrayParam.c_params).

Precision
- Exact (bit for bit) for: integer ops, comparisons, select, conversions (ftof/itof/ftoi/exti/
  trunci/bitcast, including satfinite e4m3/e5m2 and tf32), addf subf mulf divf sqrt fma remf
  floor ceil absf negf maxf minf in f16/bf16/f32/f64 in every rounding mode the spec lists, and
  all data movement. f16/bf16 are computed in float64 and rounded once (exact for + - * / sqrt).
- Left to the implementation by the spec, so compared within tolerance: exp exp2 log log2 rsqrt
  sin cos tan sinh cosh tanh pow atan2 (float64 libm, rounded once: at most 2 ulp of the result
  type from a correctly rounded result); `approx`/`full` rounding (computed correctly rounded);
  float reduce/scan bodies that are not associative (addf, mulf: folded in index order) and mmaf
  (exact products summed in float64). NaN payloads are not specified except that maxf/minf return
  a canonical NaN.

Debugging
- `on_op=callback` calls `callback(event)` after every op with `event.op`, `event.loc` (the
  kernel's Python source line), `event.block` (tile block coordinates) and the concrete
  `event.inputs` / `event.outputs`; set a breakpoint in the callback, or pass
  `tilepy.interpret.print_ops` to print every op with its values.
- `print_tko` (tilepy's printf) writes to stdout; a failing `assert` prints each false element
  to stderr (as the CUDA C++ runtime does) and the launch raises KernelAssertionError at its end.
- The data-race check (weak accesses of two tile blocks to the same bytes, one a store) is
  skipped for kernels with acquire/release memory ops: it does not model their happens-before.
"""
from . import memops, tileops  # noqa: F401  (register their handlers)
from .arith import HANDLERS, INEXACT_OPS
from .machine import CONTROL, KernelAssertionError, OpEvent, print_ops
from ..host.grid import normalize_grid as check_grid
from .run import run
from .kernel import launch, run_compiled

#: Every op name the interpreter executes (terminators included).
SUPPORTED_OPS = frozenset(HANDLERS) | frozenset(CONTROL) | frozenset(
    {"yield", "continue", "break", "return", "entry", "global", "module"})

__all__ = ["run", "launch", "run_compiled", "SUPPORTED_OPS", "INEXACT_OPS", "OpEvent",
           "print_ops", "KernelAssertionError", "check_grid"]
