"""tilepy: a Python-embedded tile kernel language (cuTile-compatible) that compiles to Tile IR and
CUDA C++, runs on NVIDIA GPUs through NVRTC and on the CPU through the host C++ compiler."""
from .errors import (TileError, TileSyntaxError, TileTypeError, TileValueError,
                     TileUnsupportedFeatureError, TileInternalError, TileCompileError,
                     TileLaunchError, TileVerificationError, TileRecursionError,
                     TileStaticEvalError, TileStaticAssertionError, StaticException)
from .types.dtype import (DType, bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                          float16, bfloat16, float32, float64, tfloat32, float8_e4m3fn, float8_e5m2)
from .frontend.api import *  # noqa: F401,F403  (the builtins)
from .frontend.api import (PaddingMode, RoundingMode, MemoryOrder, MemoryScope, Constant,
                           ConstantAnnotation, ByTarget, Array, Tile, Scalar)
from .frontend import builtins as _builtins  # noqa: F401  (registers implementations)
from .frontend.kernel import Kernel, kernel, function

__version__ = "0.1.0"
from .launch.launcher import launch
from .launch.cpu import cpu_mode
