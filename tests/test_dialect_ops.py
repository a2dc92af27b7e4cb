"""NVIDIA's 13.4 ops from kernels (tilepy/ir/ops_dialect.py): `insert`, `**` with an integer
exponent (`fpowi`), grid dependency control and the alias fence, checked against numpy in the
interpreter and both CPU modes; their IR; errors at the user's line."""
import numpy as np
import pytest

import tilepy as ct
from guarded import run_everywhere
from kernels_util import assert_located
from tilepy.errors import TileTypeError, TileValueError


@ct.kernel
def insert_rows(x, out):
    t = ct.load(x, index=(0, 0), shape=(8, 4))
    row = ct.full((2, 4), -1.0, dtype=ct.float32)
    t = ct.insert(t, (ct.bid(0) + 1, 0), row)           # a runtime sub-tile index
    t = ct.insert(t, (0, 3), ct.float32(7.0) + 0.0)      # a 0-d value: one element
    ct.store(out, index=(0, 0), tile=t)


def test_insert_matches_numpy():
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    want = x.copy()
    want[2:4, :] = -1.0
    want[0, 3] = 7.0
    for mode, (_, out) in run_everywhere((1,), insert_rows, (x, np.zeros_like(x))).items():
        np.testing.assert_array_equal(out, want, err_msg=mode)
    assert "= insert " in insert_rows.mlir(x, np.zeros_like(x))


@ct.kernel
def int_powers(x, n, out):
    t = ct.load(x, index=(0,), shape=(16,))
    e = ct.load(n, index=(0,), shape=(16,))
    ct.store(out, index=(0, 0), tile=ct.reshape(t ** e, (1, 16)))
    ct.store(out, index=(1, 0), tile=ct.reshape(t ** 3, (1, 16)))
    ct.store(out, index=(2, 0), tile=ct.reshape(ct.pow(t, e.astype(ct.uint8)), (1, 16)))


def test_integer_exponents_use_fpowi():
    x = np.linspace(-2.0, 2.0, 16).astype(np.float32)
    n = np.arange(-8, 8, dtype=np.int32)
    args = (x, n, np.zeros((3, 16), np.float32))
    text = int_powers.mlir(*args)
    assert text.count("= fpowi ") == 3 and "= pow " not in text
    with np.errstate(all="ignore"):
        want = np.stack([x.astype(np.float64) ** n, x.astype(np.float64) ** 3,
                         x.astype(np.float64) ** n.astype(np.uint8)]).astype(np.float32)
    for mode, (*_, out) in run_everywhere((1,), int_powers, args).items():
        np.testing.assert_allclose(out, want, rtol=2e-6, err_msg=mode)


@ct.kernel
def grid_dependency(x, out):
    ct.grid_dependency_control_wait()
    t = ct.load(x, index=(ct.bid(0),), shape=(8,))
    ct.store(out, index=(ct.bid(0),), tile=t * 2.0)
    ct.grid_dependency_control_launch_dependents()


def test_grid_dependency_control_is_ordered_and_runs():
    """Without programmatic dependent launch both are no-ops: the kernel computes as without
    them; in the IR they are on the memory token chain, around the load and the store."""
    x = np.arange(32, dtype=np.float32)
    for mode, (_, out) in run_everywhere((4,), grid_dependency, (x, np.zeros_like(x))).items():
        np.testing.assert_array_equal(out, x * 2, err_msg=mode)
    text = grid_dependency.mlir(x, np.zeros_like(x))
    lines = [ln for ln in text.splitlines() if "_tko" in ln]
    assert "gdc_wait_tko" in lines[0] and "gdc_launch_dependents_tko" in lines[-1], lines
    assert "token = " in lines[-1]


@ct.kernel
def insert_bad_value(x, out):
    t = ct.load(x, index=(0, 0), shape=(8, 4))
    t = ct.insert(t, (0, 0), ct.full((16, 4), 1.0, dtype=ct.float32))  # VALUE
    ct.store(out, index=(0, 0), tile=t)


@ct.kernel
def insert_bad_index(x, out):
    t = ct.load(x, index=(0, 0), shape=(8, 4))
    t = ct.insert(t, (4, 0), ct.full((2, 4), 1.0, dtype=ct.float32))  # INDEX
    ct.store(out, index=(0, 0), tile=t)


@pytest.mark.parametrize("kernel, marker, snippet, words", [
    (insert_bad_value, "VALUE", "ct.full((16, 4)", "tile's shape (8, 4) is not divisible by"),
    (insert_bad_index, "INDEX", "(4, 0)", "index 4 is out of bounds for dimension 0"),
])
def test_insert_errors_point_at_the_line(kernel, marker, snippet, words):
    x = np.zeros((8, 4), np.float32)
    with pytest.raises(TileTypeError) as e:
        kernel.mlir(x, x.copy())
    assert words in str(e.value)
    assert_located(e.value, marker, snippet, __file__)


@pytest.mark.parametrize("op", ["fpowi", "insert", "memory_fence_alias_tko", "gdc_wait_tko",
                                "gdc_launch_dependents_tko"])
def test_new_ops_need_bytecode_13_4(op):
    """13.4's ops are written in 13.4 bytecode and refused, by name, in older versions."""
    from tilepy.bytecode import read_module, write_module
    from tilepy.errors import TileUnsupportedFeatureError
    from tilepy.ir.parser import parse_module
    from tilepy.ir.samples import VALID
    module = parse_module(VALID[op].text())
    data = write_module(module, (13, 4))
    assert write_module(read_module(data), (13, 4)) == data
    with pytest.raises(TileUnsupportedFeatureError, match=f"{op} needs bytecode 13.4"):
        write_module(module, (13, 3))


RED_MODULE = """cuda_tile.module @m {
entry @red(%p: tile<ptr<f32>>, %n: tile<i32>) {
%tv = make_tensor_view %p, shape = [%n, 64], strides = [64, 1] : tile<i32> -> tensor_view<?x64xf32, strides=[64,1]>
%pv = make_partition_view %tv : partition_view<tile=(16x64), tensor_view<?x64xf32, strides=[64,1]>>
%i = constant <i32: 1> : tile<i32>
%z = constant <i32: 0> : tile<i32>
%v = iota : tile<64xi32>
%f = itof %v signed : tile<64xi32> -> tile<64xf32>
%r = reshape %f : tile<64xf32> -> tile<1x64xf32>
%b = broadcast %r : tile<1x64xf32> -> tile<16x64xf32>
%k = atomic_red_view_tko relaxed device %pv[%i, %z], addf, %b : tile<16x64xf32>, partition_view<tile=(16x64), tensor_view<?x64xf32, strides=[64,1]>>, tile<i32> -> token
return
}
}
"""


def test_atomic_red_view_in_the_interpreter():
    """Every grid block adds its tile into rows 16..31 (the view's tile (1, 0)); rows past the
    tensor's edge (n = 24) are not touched."""
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    x = np.ones((32, 64), np.float32)
    run(parse_module(RED_MODULE), (3, 1, 1), [x, 24])
    want = np.ones((32, 64), np.float32)
    want[16:24] += 3 * np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(x, want)


def test_atomic_red_view_inbounds_is_checked_in_the_interpreter():
    """13.5's `inbounds` on atomic_red_view_tko: a tile marked inside the tensor that reaches
    past its edge is reported, as for load/store_view_tko; the unmarked dimension is not."""
    from tilepy.errors import TileError
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    marked = RED_MODULE.replace(", %b :", ", %b inbounds = [true, false] :")
    assert marked != RED_MODULE
    with pytest.raises(TileError, match="inbounds"):
        run(parse_module(marked), (1, 1, 1), [np.ones((32, 64), np.float32), 24])
    x = np.ones((32, 64), np.float32)
    run(parse_module(marked.replace("[true, false]", "[false, true]")), (1, 1, 1), [x, 24])
    assert x[16:24].sum() > x[24:].sum()


_V64 = "tensor_view<64xf32, strides=[1]>"
_V8 = "tensor_view<8x8xf32, strides=[8,1]>"
ALIAS_MODULE = f"""cuda_tile.module @m {{
entry @alias(%p: tile<ptr<f32>>, %q: tile<ptr<f32>>) {{
%k0 = gdc_wait_tko -> token
%tv = make_tensor_view %p, shape = [64], strides = [1] : {_V64}
%pv = make_partition_view %tv : partition_view<tile=(64), {_V64}>
%sv = make_tensor_view %p, shape = [8, 8], strides = [8, 1] : {_V8}
%sq = make_partition_view %sv : partition_view<tile=(8x8), {_V8}>
%qv = make_tensor_view %q, shape = [8, 8], strides = [8, 1] : {_V8}
%qq = make_partition_view %qv : partition_view<tile=(8x8), {_V8}>
%i = constant <i32: 0> : tile<i32>
%t, %k1 = load_view_tko weak %pv[%i] token = %k0 : partition_view<tile=(64), {_V64}>, tile<i32> -> tile<64xf32>, token
%two = constant <f32: 2.0> : tile<64xf32>
%d = mulf %t, %two : tile<64xf32>
%k2 = store_view_tko weak %d, %pv[%i] token = %k1 : tile<64xf32>, partition_view<tile=(64), {_V64}>, tile<i32> -> token
%k3 = memory_fence_alias_tko %k2
%u, %k4 = load_view_tko weak %sq[%i, %i] token = %k3 : partition_view<tile=(8x8), {_V8}>, tile<i32> -> tile<8x8xf32>, token
%one = constant <f32: 1.0> : tile<8x8xf32>
%e = addf %u, %one : tile<8x8xf32>
%k5 = store_view_tko weak %e, %qq[%i, %i] token = %k4 : tile<8x8xf32>, partition_view<tile=(8x8), {_V8}>, tile<i32> -> token
%k6 = gdc_launch_dependents_tko token = %k5 -> token
return
}}
}}
"""


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_alias_fence_orders_a_store_before_a_load_through_another_view(mode):
    """x is doubled through a 1-d view, fenced, and read back through a 2-d view of the same
    memory: the read sees the doubled values (interpreter and both CPU modes). The emitted C++
    has the fence and no trace of the grid dependency ops, and compiles with NVRTC."""
    import ctypes
    from tilepy.api.compiler import compile_module
    from tilepy.ir.parser import parse_module
    from tilepy.launch import cpu
    x = np.arange(64, dtype=np.float32)
    q = np.zeros((8, 8), np.float32)
    module = parse_module(ALIAS_MODULE)
    if mode == "interpret":
        from tilepy.interpret import run
        run(module, (1, 1, 1), [x, q])
    else:
        cm = compile_module(module)
        assert "tp::fence_alias();" in cm.cuda_source and "gdc" not in cm.cuda_source
        lib = cpu.build(cm.emitted, cm.compile_source(), mode=mode)
        cpu.run(lib, (1, 1, 1), [ctypes.c_void_p(a.ctypes.data) for a in (x, q)],
                smem=cm.emitted.smem_bytes)
        if mode == "faithful":
            from tilepy.launch.nvrtc import compile_cubin
            for arch in ("sm_80", "sm_90"):
                assert compile_cubin(cm.compile_source(), arch, "alias")
    np.testing.assert_array_equal(x, 2 * np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(q, 2 * np.arange(64, dtype=np.float32).reshape(8, 8) + 1)


def test_new_ops_compile_with_nvrtc():
    """fpowi and insert, from kernels, compile for sm_80 and sm_90."""
    x = np.zeros((8, 4), np.float32)
    v, n = np.zeros(16, np.float32), np.zeros(16, np.int32)
    for arch in ("sm_80", "sm_90"):
        assert insert_rows.compile(x, x.copy(), arch=arch)
        assert int_powers.compile(v, n, np.zeros((3, 16), np.float32), arch=arch)


_GV = "gather_scatter_view<tile=(4x8), tensor_view<?x16xf32, strides=[16,1]>, sparse_dim=0>"
_SV = ("strided_view<tile=(4x8), traversal_strides=[2,4], padding_value = nan, "
       "tensor_view<?x16xf32, strides=[16,1]>>")
VIEWS_MODULE = f"""cuda_tile.module @m {{
entry @views(%p: tile<ptr<f32>>, %q: tile<ptr<f32>>, %n: tile<i32>) {{
%tv = make_tensor_view %p, shape = [%n, 16], strides = [16, 1] : tile<i32> -> tensor_view<?x16xf32, strides=[16,1]>
%tq = make_tensor_view %q, shape = [%n, 16], strides = [16, 1] : tile<i32> -> tensor_view<?x16xf32, strides=[16,1]>
%gv = make_gather_scatter_view %tv : {_GV}
%gq = make_gather_scatter_view %tq : {_GV.replace("sparse_dim=0", "sparse_dim=0")}
%sv = make_strided_view %tv : {_SV}
%rows = constant <i32: [5, 0, 9, 2]> : tile<4xi32>
%back = constant <i32: [0, 1, 2, 3]> : tile<4xi32>
%c4 = constant <i32: 4> : tile<i32>
%c10 = constant <i32: 10> : tile<i32>
%one = constant <i32: 1> : tile<i32>
%g, %k1 = load_view_tko weak %gv[%rows, %c4] : {_GV}, tile<4xi32>, tile<i32> -> tile<4x8xf32>, token
%k2 = store_view_tko weak %g, %gq[%back, %c10] token = %k1 : tile<4x8xf32>, {_GV}, tile<4xi32>, tile<i32> -> token
%s, %k3 = load_view_tko weak %sv[%c4, %one] token = %k2 : {_SV}, tile<i32> -> tile<4x8xf32>, token
%k4 = store_view_tko weak %s, %gq[%rows, %one] token = %k3 : tile<4x8xf32>, {_GV}, tile<4xi32>, tile<i32> -> token
return
}}
}}
"""


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_gather_scatter_and_strided_views(mode):
    """Rows 5, 0, 9, 2 (columns 4..11) gathered and scattered to rows 0..3 at column 10 (columns
    past 16 are not written); the strided tile (4, 1) covers rows 8..11, columns 4..11 (rows past
    n = 10 read the padding value NaN) and is scattered to rows 5, 0, 9, 2 at column 1. The C++
    backend addresses the views through pointer tiles (lowering/view_pointers.py)."""
    from tilepy.api.compiler import compile_module
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    x = np.arange(10 * 16, dtype=np.float32).reshape(10, 16)
    q = np.zeros((10, 16), np.float32)
    if mode == "interpret":
        run(parse_module(VIEWS_MODULE), (1, 1, 1), [x, q, 10])
    else:
        compile_module(parse_module(VIEWS_MODULE)).run_cpu(1, [x, q, 10], mode=mode)
    want = np.zeros((10, 16), np.float32)
    want[0:4, 10:16] = x[[5, 0, 9, 2], 4:10]
    strided = np.full((4, 8), np.nan, np.float32)
    strided[:2] = x[8:10, 4:12]
    want[[5, 0, 9, 2], 1:9] = strided
    np.testing.assert_array_equal(q, want)


def test_a_gather_wholly_outside_the_tensor_is_reported():
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    text = VIEWS_MODULE.replace("[5, 0, 9, 2]", "[50, 60, 70, 80]")
    x, q = np.zeros((10, 16), np.float32), np.zeros((10, 16), np.float32)
    with pytest.raises(TileValueError, match="entirely outside the tensor"):
        run(parse_module(text), (1, 1, 1), [x, q, 10])


@pytest.mark.parametrize("name", ["VIEWS_MODULE", "ALIAS_MODULE", "RED_MODULE", "ALLOCA_MODULE"])
def test_nvidia_verifier_accepts_the_modules_here(name):
    import bytecode_util as bu
    from tilepy.bytecode import write_module
    from tilepy.ir.parser import parse_module
    if bu.TILEIRDISASM is None:
        pytest.skip("tileirdisasm not installed (pip install nvidia-cuda-tileiras)")
    result = bu.disasm(write_module(parse_module(globals()[name])))
    assert result.returncode == 0, result.stderr


def _pointers(src, dst):
    return (f"%{dst}1 = reshape %{src} : tile<ptr<f32>> -> tile<1xptr<f32>>\n"
            f"%{dst}b = broadcast %{dst}1 : tile<1xptr<f32>> -> tile<8xptr<f32>>\n"
            f"%{dst} = offset %{dst}b, %offs : tile<8xptr<f32>>, tile<8xi32> -> tile<8xptr<f32>>\n")


ALLOCA_MODULE = ("cuda_tile.module @m {\nentry @scratch(%q: tile<ptr<f32>>) {\n"
                 "%a = alloca num_elem = 8, alignment = 16 : tile<ptr<f32>>\n"
                 "%offs = iota : tile<8xi32>\n" + _pointers("a", "pa") + _pointers("q", "pq") +
                 "%v = itof %offs signed : tile<8xi32> -> tile<8xf32>\n"
                 "%k = store_ptr_tko weak %pa, %v : tile<8xptr<f32>>, tile<8xf32> -> token\n"
                 "%r, %k2 = load_ptr_tko weak %pa token = %k : tile<8xptr<f32>> -> tile<8xf32>, token\n"
                 "%w = addf %r, %r : tile<8xf32>\n"
                 "%k3 = store_ptr_tko weak %pq, %w token = %k2 : tile<8xptr<f32>>, tile<8xf32> -> token\n"
                 "return\n}\n}\n")


def test_alloca_is_scratch_memory_in_the_interpreter():
    """Values stored into an alloca'd buffer are read back."""
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    q = np.zeros(8, np.float32)
    run(parse_module(ALLOCA_MODULE), (1, 1, 1), [q])
    np.testing.assert_array_equal(q, 2 * np.arange(8, dtype=np.float32))


@pytest.mark.parametrize("mode", ["fast", "faithful"])
@pytest.mark.parametrize("alignment", [16, 256])
def test_alloca_is_block_memory_in_the_cpp_backend(mode, alignment):
    """A shared-memory buffer of the block's (aligned at run time beyond 128 bytes), read back
    after a barrier by the threads that did not write it; NVRTC compiles it for sm_80/sm_90.
    With 256 the pointer store and load are ordered (release, acquire: ordered.h)."""
    from tilepy.api.compiler import compile_module
    from tilepy.ir.parser import parse_module
    from tilepy.launch.nvrtc import compile_cubin
    text = ALLOCA_MODULE.replace("alignment = 16", f"alignment = {alignment}")
    if alignment == 256:
        text = text.replace("%k = store_ptr_tko weak", "%k = store_ptr_tko release device") \
            .replace("load_ptr_tko weak %pa", "load_ptr_tko acquire device %pa")
        assert "tp::release_fence<2, 1>" in compile_module(parse_module(text)).cuda_source
    q = np.zeros(8, np.float32)
    cm = compile_module(parse_module(text))
    cm.run_cpu(1, [q], mode=mode)
    np.testing.assert_array_equal(q, 2 * np.arange(8, dtype=np.float32))
    if mode == "fast" and alignment == 256:
        for arch in ("sm_80", "sm_90"):
            compile_cubin(cm.compile_source(), arch, cm.symbol)


GLOBAL_ALLOCA_MODULE = (
    "cuda_tile.module @m {\nentry @scratch(%p: tile<ptr<f32>>) {\n"
    "%offs = iota : tile<8xi32>\n"
    "%bx, %by, %bz = get_tile_block_id : tile<i32>\n"
    "%eight = constant <i32: 8> : tile<i32>\n"
    "%row = muli %bx, %eight : tile<i32>\n"
    "%q = offset %p, %row : tile<ptr<f32>>, tile<i32> -> tile<ptr<f32>>\n"
    "%v = itof %offs signed : tile<8xi32> -> tile<8xf32>\n"
    "%zero = constant <f32: 0.0> : tile<8xf32>\n"
    "%lo = constant <i32: 0> : tile<i32>\n%hi = constant <i32: 3> : tile<i32>\n"
    "%one = constant <i32: 1> : tile<i32>\n"
    "%acc = for %i in (%lo to %hi, step %one) : tile<i32> iter_values(%s = %zero) -> "
    "(tile<8xf32>) {\n"
    "%a = alloca num_elem = 8, alignment = 256 global : tile<ptr<f32>>\n" + _pointers("a", "pa") +
    "%k = store_ptr_tko weak %pa, %v : tile<8xptr<f32>>, tile<8xf32> -> token\n"
    "%r, %k2 = load_ptr_tko weak %pa token = %k : tile<8xptr<f32>> -> tile<8xf32>, token\n"
    "%t = addf %s, %r : tile<8xf32>\ncontinue %t : tile<8xf32>\n}\n" + _pointers("q", "pq") +
    "%k3 = store_ptr_tko weak %pq, %acc : tile<8xptr<f32>>, tile<8xf32> -> token\n"
    "return\n}\n}\n")


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_a_global_alloca_is_heap_memory_alive_in_its_block(mode):
    """`alloca ... global` (memory other tile blocks may reach; NVIDIA's dialect: alive until
    the end of the block the op is in): in the C++ backend heap memory the block's thread 0
    takes where the op runs (device malloc on a GPU) and frees at its Tile IR block's end,
    here once per iteration of a loop in each of two blocks; NVRTC compiles it for sm_80/sm_90.
    The source says so at the op's line; shared memory holds only the pointer."""
    from tilepy.api.compiler import compile_module
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    from tilepy.launch.nvrtc import compile_cubin
    q = np.zeros(16, np.float32)
    module = parse_module(GLOBAL_ALLOCA_MODULE, "m.mlir")
    if mode == "interpret":
        run(module, (2, 1, 1), [q])
    else:
        cm = compile_module(module)
        cm.run_cpu(2, [q], mode=mode)
        assert "tp::GlobalAlloca<float> v1_tp_galloca(32ull, 256ull" in cm.cuda_source
        if mode == "fast":
            for arch in ("sm_80", "sm_90"):
                compile_cubin(cm.compile_source(), arch, cm.symbol)
    np.testing.assert_array_equal(q, np.tile(3 * np.arange(8, dtype=np.float32), 2))


@ct.kernel
def gather_rows(x, rows, out):
    r = ct.load(rows, index=(0,), shape=(8,))
    t = ct.load_advanced_indexing(x, (r, ct.Slice(ct.bid(0) * 4, 8)),  # LOAD
                                  padding_mode=ct.PaddingMode.ZERO)
    ct.store_advanced_indexing(out, (ct.arange(8, dtype=ct.int32) + ct.bid(0) * 8, ct.Slice(0, 8)),
                               t * 2.0)  # GATHER


@pytest.mark.parametrize("mode", ["interpret", "fast", "faithful"])
def test_advanced_indexing_gathers_and_scatters_rows(mode):
    """Block b reads rows `rows` at columns 4b..4b+7 (past the edge: zeros) and writes them to
    rows 8b..8b+7 of out (NVIDIA's gather_scatter_view in the Tile IR and the bytecode; pointer
    tiles in the C++ backend)."""
    from guarded import launch
    x = np.arange(20 * 12, dtype=np.float32).reshape(20, 12)
    rows = np.array([3, 19, 0, 7, 7, 12, 1, 5], np.int32)
    out = np.zeros((16, 8), np.float32)
    launch((2,), gather_rows, (x, rows, out), mode)
    padded = np.concatenate([x, np.zeros((20, 8), np.float32)], axis=1)
    want = np.concatenate([padded[rows, 0:8], padded[rows, 4:12]]) * 2
    np.testing.assert_array_equal(out, want)
    if mode != "interpret":
        return
    from tilepy.bytecode import read_module
    names = [o.name for o in read_module(gather_rows.bytecode(x, rows, out)).walk()]
    assert names.count("make_gather_scatter_view") == 2, names    # NVIDIA's compiler gets them
    import bytecode_util as bu
    if bu.TILEIRDISASM is not None:
        assert bu.disasm(gather_rows.bytecode(x, rows, out)).returncode == 0


_TV3 = "tensor_view<4x?x64xf32, strides=[?,64,1]>"
_GV3 = f"gather_scatter_view<tile=(2x8x32), padding_value = nan, {_TV3}, sparse_dim=1>"
GATHER3_MODULE = f"""cuda_tile.module @m {{
entry @k(%p: tile<ptr<f32>>, %n: tile<i32>) {{
%tv = make_tensor_view %p, shape = [4, %n, 64], strides = [%n, 64, 1] : tile<i32> -> {_TV3}
%gv = make_gather_scatter_view %tv : {_GV3}
%rows = constant <i64: [3, 0, 7, 1, 2, 9, 4, 4]> : tile<8xi64>
%c = constant <i32: 32> : tile<i32>
%t, %k = load_view_tko weak %gv[%c, %rows, %c] : {_GV3}, tile<i32>, tile<8xi64>, tile<i32> -> tile<2x8x32xf32>, token
return
}}
}}
"""


def test_index_types_print_once_when_uniform_else_each():
    """As NVIDIA's printer: one type for the 0-d indices of a partition view, one per index for
    a gather's mixed 1-d and 0-d ones (sparse_dim 1, an i64 row tile); tileirdisasm's text of
    tilepy's bytecode reads back."""
    from tilepy.ir.parser import parse_module
    from tilepy.ir.printer import print_module
    from tilepy.ir.verifier import verify
    text = print_module(verify(parse_module(GATHER3_MODULE)))
    assert f"{_GV3}, tile<i32>, tile<8xi64>, tile<i32> -> tile<2x8x32xf32>" in text
    import bytecode_util as bu
    if bu.TILEIRDISASM is None:
        pytest.skip("tileirdisasm not installed")
    from tilepy.bytecode import write_module
    nvidia = bu.disasm(write_module(parse_module(GATHER3_MODULE))).stdout
    verify(parse_module(f"cuda_tile.module @m {{\n{nvidia}\n}}\n"))


_SVR = "strided_view<tile=(16x64), traversal_strides=[8,64], tensor_view<?x64xf32, strides=[64,1]>>"
RED_STRIDED_MODULE = (RED_MODULE
                      .replace("%pv = make_partition_view %tv : partition_view<tile=(16x64), "
                               "tensor_view<?x64xf32, strides=[64,1]>>",
                               f"%pv = make_strided_view %tv : {_SVR}")
                      .replace("partition_view<tile=(16x64), tensor_view<?x64xf32, strides=[64,1]>>",
                               _SVR))


def test_atomic_red_through_a_strided_view():
    """Tile (1, 0) of a strided view with traversal stride 8 covers rows 8..23: three blocks add
    into them (rows past n = 20 are not touched); NVIDIA's verifier takes the module too."""
    from tilepy.interpret import run
    from tilepy.ir.parser import parse_module
    assert "make_strided_view" in RED_STRIDED_MODULE and "partition_view" not in RED_STRIDED_MODULE
    x = np.ones((32, 64), np.float32)
    run(parse_module(RED_STRIDED_MODULE), (3, 1, 1), [x, 20])
    want = np.ones((32, 64), np.float32)
    want[8:20] += 3 * np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(x, want)
    import bytecode_util as bu
    if bu.TILEIRDISASM is not None:
        from tilepy.bytecode import write_module
        assert bu.disasm(write_module(parse_module(RED_STRIDED_MODULE))).returncode == 0


@pytest.mark.parametrize("mode", ["fast", "faithful"])
def test_atomic_red_view_on_the_cpu_backend(mode):
    """The C++ backend's atomic_red_view_tko gives the interpreter's result (three blocks add
    into one tile; rows past n untouched), and compiles with NVRTC."""
    import ctypes
    from tilepy.api.compiler import compile_module
    from tilepy.ir.parser import parse_module
    from tilepy.launch import cpu
    cm = compile_module(parse_module(RED_MODULE))
    x = np.ones((32, 64), np.float32)
    lib = cpu.build(cm.emitted, cm.compile_source(), mode=mode)
    cpu.run(lib, (3, 1, 1), [ctypes.c_void_p(x.ctypes.data), ctypes.c_int32(24)],
            smem=cm.emitted.smem_bytes)      # its shared memory, as a GPU launch gives it
    want = np.ones((32, 64), np.float32)
    want[16:24] += 3 * np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(x, want)
    if mode == "faithful":
        from tilepy.launch.nvrtc import compile_cubin
        for arch in ("sm_80", "sm_90"):
            assert compile_cubin(cm.compile_source(), arch, "red")


@pytest.mark.parametrize("name", ["VIEWS_MODULE", "RED_MODULE", "RED_STRIDED_MODULE",
                                  "ALLOCA_MODULE", "ALIAS_MODULE", "GATHER3_MODULE"])
def test_tileiras_compiles_the_new_ops(name):
    """NVIDIA's compiler takes tilepy's bytecode of every new op, those the C++ backend refuses
    included (sm_90 here; sm_80 and sm_100 compile too)."""
    from tilepy.bytecode import write_module
    from tilepy.ir.parser import parse_module
    from tilepy.launch.tileiras import assemble, unusable
    if unusable():
        pytest.skip(unusable())
    assert assemble(write_module(parse_module(globals()[name])), "sm_90", "k")
