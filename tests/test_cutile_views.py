"""cuTile's views and ct.compilation (issue 31): tiled views (partitions, overlapping windows,
0-d tiles with steps), array slices and advanced indexing (tests/cutile_kernels/views.py) in the
interpreter and both CPU modes, against numpy, and compiled with NVRTC for sm_80/sm_90;
kernel signatures and export_kernel; the Array/List annotations."""
import io
import typing

import numpy as np
import pytest

import tilepy as ct
from cutile_cases import case_tests, registry
from cutile_kernels import views
from kernels_util import assert_located
from tilepy.bytecode import read_module
from tilepy.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint,
                                KernelSignature, ScalarConstraint, TupleConstraint,
                                export_kernel)

rng = np.random.default_rng(31)
CASES, case = registry()


@case
def tiled_partition():
    x = rng.standard_normal((10, 13)).astype(np.float32)
    y = np.zeros_like(x)
    return views.tiled_copy_plus_one, (3, 4), (x, y, 4, 4), \
        lambda: np.testing.assert_array_equal(y, x + 1)


@case
def tiled_sliding_windows():
    x = np.arange(1, 11, dtype=np.float32)
    out = np.full((5, 4), -1, np.float32)

    def check():
        ref = np.zeros((4, 4), np.float32)
        for w in range(4):                        # cdiv(10, 3) windows of 4, 3 apart
            seg = x[3 * w:3 * w + 4]
            ref[w, :len(seg)] = seg
        np.testing.assert_array_equal(out[:4], ref)
        np.testing.assert_array_equal(out[4], -1)      # the 5th block: past num_tiles
    return views.sliding_windows, (5,), (x, out, 4, 3), check


@case
def tiled_0d_steps():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = np.zeros(4, np.float32)
    return views.strided_elements, (1,), (x, out, 2, 3, 2, 2), \
        lambda: np.testing.assert_array_equal(out, x[::2, ::3].ravel())


@case
def tiled_atomic_add():
    acc = rng.integers(-5, 5, (10, 13)).astype(np.float32)
    x = rng.integers(-5, 5, (10, 13)).astype(np.float32)
    ref = acc + x
    return views.tiled_accumulate, (3, 4), (acc, x, 4, 4), \
        lambda: np.testing.assert_array_equal(acc, ref)


@case
def tiled_atomic_windows():
    counts, flags = np.zeros(10, np.int32), np.zeros(10, np.int32)
    ref_counts, ref_flags = np.zeros(10, np.int32), np.zeros(10, np.int32)
    for w in range(4):                            # windows of 4, 3 apart, the last one partial
        ref_counts[3 * w:3 * w + 4] += 1
        ref_flags[3 * w:3 * w + 4] ^= w

    def check():
        np.testing.assert_array_equal(counts, ref_counts)
        np.testing.assert_array_equal(flags, ref_flags)
    return views.window_counts, (4,), (counts, flags, 4, 3), check


@case
def array_slice():
    x = rng.standard_normal((12, 16)).astype(np.float32)
    y = np.full((4, 8), -1, np.float32)

    def check():
        ref = np.zeros((4, 8), np.float32)
        ref[:3] = x[9:12, :8]
        np.testing.assert_array_equal(y, ref)
    return views.rows_of_slice, (1,), (x, y, 9, 12, 4, 8), check


@case
def array_slice_static_extent():
    x = np.arange(32, dtype=np.int32)
    y = np.zeros(16, np.int32)
    return views.static_slice, (1,), (x, y), lambda: np.testing.assert_array_equal(y, x[2:18])


IDX = np.array([3, 0, 9, 12, 5, 1, 2, 100], np.int32)     # 12 and 100: past the array


@case
def advanced_gather():
    x = rng.standard_normal((10, 12)).astype(np.float32)
    out = np.full((8, 16), -1, np.float32)

    def check():
        ref = np.zeros((8, 16), np.float32)
        for r, i in enumerate(IDX):
            if i < 10:
                ref[r, :12] = x[i]
        np.testing.assert_array_equal(out, ref)
    return views.gather_rows, (2,), (x, IDX, out, 8, 8), check


@case
def advanced_scatter():
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.full((11, 12), -1, np.float32)

    def check():
        ref = np.full((11, 12), -1, np.float32)
        for r, i in enumerate(IDX):
            if i < 11:
                ref[i] = x[r, :12]
        np.testing.assert_array_equal(out, ref)
    return views.scatter_rows, (2,), (x, IDX, out, 8, 8), check


@case
def zero_d_gather_scatter():
    x = np.ones((), np.int32)
    return views.add_to_scalar, (1,), (x,), lambda: np.testing.assert_array_equal(x, 21)


@case
def raw_array_memory():
    n = 8
    x = np.arange(1, n + 1, dtype=np.int32)
    y = np.zeros(3 * n, np.int32)

    def check():
        first = np.where(np.arange(n) < n - 2, x[::-1], -1)
        even = np.arange(n) % 2 == 0
        added = first + np.where(even, 10, 0)
        ref_cas = np.where(np.arange(n) < n - 1, added, 16)
        final = np.where((added == 16) & (np.arange(n) < n - 1), 100, added)
        assert (final == 100).sum() == 1
        np.testing.assert_array_equal(y, np.concatenate([final, np.where(even, first, 0),
                                                         ref_cas]))
    return views.raw_memory, (1,), (x, y, n), check


test_view_kernel_matches_numpy, test_view_kernel_compiles_with_nvrtc = case_tests(CASES)


def test_the_cpp_backend_addresses_views_through_pointers():
    """The C++ source of a gather through a gather_scatter_view loads pointer tiles; the Tile
    IR text and the bytecode for NVIDIA's compiler keep the view, after a launch too."""
    kernel, grid, args, _ = CASES["advanced_gather"]()
    ct.launch(None, grid, kernel, args)
    assert "make_gather_scatter_view" in kernel.mlir(*args)
    src = kernel.cuda_source(*args)
    assert "gather_scatter" not in src and "tp_kernel_gather_rows" in src
    names = [o.name for o in read_module(kernel.bytecode(*args)).walk()]
    assert names.count("make_gather_scatter_view") == 1 and "load_ptr_tko" not in names


def test_tiled_view_errors_name_the_line():
    x = np.zeros(16, np.float32)

    @ct.kernel
    def rank(x):
        x.tiled_view((4, 4))

    @ct.kernel
    def steps(x):
        x.tiled_view(4, traversal_steps=0)

    @ct.kernel
    def shape(x, y):
        y.tiled_view(4).store(0, ct.load(x, (0,), (8,)))
    with pytest.raises(ct.TileTypeError, match="Expected shape length to be 1, got 2"):
        ct.launch(None, (1,), rank, (x,))
    with pytest.raises(ct.TileTypeError, match="of traversal_steps .* is not positive"):
        ct.launch(None, (1,), steps, (x,))
    with pytest.raises(ct.TileTypeError, match=r"Tile shape \(8,\) is not broadcastable to the "
                                               r"tiled view's tile shape \(4,\)"):
        ct.launch(None, (1,), shape, (x, x.copy()))


def test_tiled_view_atomics_check_as_cutile():
    """cuTile's rules for atomic_store_*: the view's dtype per op, a bitwise update of exactly
    the view's dtype, an implicit cast otherwise, an update broadcastable to the tile."""
    @ct.kernel
    def update(x, y, T: ct.Constant[int]):
        x.tiled_view(4).atomic_store_add(0, ct.load(y, (0,), (T,)))  # TVADD

    @ct.kernel
    def bitwise(x, y):
        x.tiled_view(4).atomic_store_or(0, ct.load(y, (0,), (4,)))
    i32, i16, f32 = np.zeros(8, np.int32), np.zeros(8, np.int16), np.zeros(8, np.float32)
    with pytest.raises(ct.TileTypeError, match="Unsupported tiled view dtype: int16") as info:
        ct.launch(None, (1,), update, (i16, i16, 4))
    assert_located(info.value, "TVADD", "x.tiled_view(4).atomic_store_add", __file__)
    with pytest.raises(ct.TileTypeError, match=r"Update shape \(8,\) is not broadcastable"):
        ct.launch(None, (1,), update, (f32, f32, 8))
    with pytest.raises(ct.TileTypeError, match="cannot implicitly cast"):
        ct.launch(None, (1,), update, (i32, f32, 4))
    with pytest.raises(ct.TileTypeError, match="to exactly match the target dtype"):
        ct.launch(None, (1,), bitwise, (i32, np.zeros(8, np.int64)))


# ------------------------------------------------------------------------ ct.compilation
def test_signature_from_launch_arguments_and_export():
    kernel, _, args, _ = CASES["tiled_partition"]()
    cconv = CallingConvention.cutile_python_v1()
    sig = KernelSignature.from_kernel_args(kernel, args, cconv)
    x_c, y_c, tm, tn = sig.parameters
    assert isinstance(x_c, ArrayConstraint) and x_c.dtype is ct.float32 and x_c.ndim == 2
    assert x_c.stride_constant == (None, 1) and x_c.alias_groups == ()
    assert tm == ConstantConstraint(4) and tm != ConstantConstraint(4.0)
    assert sig.symbol == "tiled_copy_plus_one_Kt1_A2f32_2t1_p16_A2f32_2t1_p16_I4_I4"  # cuTile's
    buf = io.BytesIO()
    export_kernel(kernel, [sig], buf, gpu_code="sm_80", output_format="cubin")
    assert buf.getvalue()[:4] == b"\x7fELF"
    buf = io.BytesIO()
    export_kernel(kernel, [sig.with_symbol("my_copy")], buf, output_format="tileir_bytecode")
    assert read_module(buf.getvalue()).entry().sym_name == "my_copy"
    # bytecode for no GPU in particular exists from 13.3 on (cuTile's rule); 13.1 for one GPU
    with pytest.raises(ct.TileUnsupportedFeatureError, match="requires version 13.3 or later"):
        export_kernel(kernel, [sig], buf, output_format="tileir_bytecode", bytecode_version="13.1")
    export_kernel(kernel, [sig], buf, gpu_code="sm_80", output_format="tileir_bytecode",
                  bytecode_version="13.1")


@ct.kernel
def _atan2(x, y):
    t = ct.load(x, (0,), (16,))
    ct.store(y, (0,), ct.atan2(t, t))


def test_a_cubins_bytecode_version_is_checked():
    """export_kernel(cubin, bytecode_version=...): the kernel must be that version's Tile IR,
    refused by cuTile's phrase before any compiler runs (atan2 is an op since 13.2)."""
    x = np.zeros(16, np.float32)
    sig = KernelSignature.from_kernel_args(_atan2, (x, x), CallingConvention.cutile_python_v1())
    with pytest.raises(ct.TileUnsupportedFeatureError, match=r"atan2 requires tileiras 13\.2"):
        export_kernel(_atan2, [sig], io.BytesIO(), gpu_code="sm_80", output_format="cubin",
                      bytecode_version="13.1")


@ct.kernel
def _to_e4m3(x, y):
    t = ct.load(x, (0,), (16,))
    ct.store(y, (0,), t.astype(ct.float8_e4m3fn).astype(ct.float32))


def test_exported_element_types_are_checked_per_target():
    """Bytecode (or a cubin of a bytecode_version) for a GPU holds only element types tileiras
    compiles for it: fp8 from sm_90, refused at the line that makes one, with cuTile's phrase."""
    x = np.zeros(16, np.float32)
    sig = KernelSignature.from_kernel_args(_to_e4m3, (x, x), CallingConvention.cutile_python_v1())
    for fmt in ("tileir_bytecode", "cubin"):
        with pytest.raises(ct.TileUnsupportedFeatureError,
                           match="float8_e4m3fn is not supported on sm_80") as e:
            export_kernel(_to_e4m3, [sig], io.BytesIO(), gpu_code="sm_80", output_format=fmt,
                          bytecode_version="13.2")
        assert "astype(ct.float8_e4m3fn)" in str(e.value)
    buf = io.BytesIO()
    export_kernel(_to_e4m3, [sig], buf, gpu_code="sm_90a", output_format="tileir_bytecode",
                  bytecode_version="13.2")
    assert read_module(buf.getvalue()).entry().sym_name == sig.symbol


def test_a_written_signature_gives_the_same_kernel():
    kernel = views.gather_rows
    f32, i32 = ct.float32, ct.int32
    arr = dict(index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
               may_alias_internally=False)
    sig = KernelSignature([ArrayConstraint(f32, 2, stride_constant=(None, 1), **arr),
                           ArrayConstraint(i32, 1, stride_constant=(1,), **arr),
                           ArrayConstraint(f32, 2, stride_constant=(None, 1), **arr), 8, 8],
                          CallingConvention.from_code("t1"))
    buf = io.BytesIO()
    export_kernel(kernel, [sig], buf, output_format="tileir_bytecode")
    entry = read_module(buf.getvalue()).entry()
    assert entry.sym_name == sig.with_mangled_symbol("gather_rows").symbol      # cuTile's default
    assert len(entry.regions[0].block.args) == 5 + 3 + 5     # every extent and stride (cuTile's)


@ct.kernel
def _inc16(x, y):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (16,)) + 1)


def test_an_int64_array_constraint_gives_64_bit_extents():
    """ArrayConstraint(index_dtype=int64) on a parameter without IndexedWithInt64: the
    constraint decides (cuTile's rule): int64 extents and strides in the exported Tile IR, and
    an AOT kernel compiled for "float32[::1]{index64}" runs on the CPU."""
    import tilepy.aot as aot
    c64 = ArrayConstraint(ct.float32, 1, index_dtype=ct.int64, stride_lower_bound_incl=0,
                          alias_groups=(), may_alias_internally=False)
    buf = io.BytesIO()
    export_kernel(_inc16, [KernelSignature([c64, c64], CallingConvention.cutile_python_v1())],
                  buf, output_format="tileir_bytecode")
    args = read_module(buf.getvalue()).entry().body.block.args
    assert [str(a.type) for a in args] == ["tile<ptr<f32>>", "tile<i64>", "tile<i64>"] * 2
    spec = aot.parse("float32[::1]{index64}")
    assert spec.index_dtype is ct.int64 and str(spec) == "float32[::1]{index64}"
    compiled = _inc16.compile(spec, spec, arch="cpu")
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    compiled.launch(None, (2,), (x, y))
    np.testing.assert_array_equal(y, x + 1)


@ct.kernel
def _pair_sum(pair, addend: ct.Constant[tuple], out):
    ct.scatter(out, (), pair[0] + pair[1] + addend[0])


def test_a_tuple_parameter_exports():
    """A TupleConstraint: its items are the kernel's parameters, in order (cuTile's calling
    convention 2); from_kernel_args gives one for a tuple argument; an AOT kernel takes the
    items as arguments of their own."""
    import tilepy.aot as aot
    out = np.zeros((), np.int32)
    sig = KernelSignature.from_kernel_args(_pair_sum, ((3, 7), (10,), out),
                                           CallingConvention.cutile_python_v2())
    assert sig.parameters[:2] == (TupleConstraint([ScalarConstraint(ct.int32)] * 2),
                                  TupleConstraint([ConstantConstraint(10)]))
    buf = io.BytesIO()
    export_kernel(_pair_sum, [sig], buf, output_format="tileir_bytecode")
    args = read_module(buf.getvalue()).entry().body.block.args
    assert [str(a.type) for a in args] == ["tile<i32>", "tile<i32>", "tile<ptr<i32>>"]
    compiled = _pair_sum.compile((ct.int32, ct.int32), (10,), aot.ArraySpec(ct.int32, 0),
                                 arch="cpu")
    compiled.launch(None, (1,), (3, 7, (10,), out))
    assert out == 20


def test_signature_checks():
    arr = dict(index_dtype=ct.int32, stride_lower_bound_incl=None, may_alias_internally=False)
    with pytest.raises(ValueError, match="mentioned only once"):
        KernelSignature([ArrayConstraint(ct.float32, 1, alias_groups=("a",), **arr)],
                        CallingConvention.cutile_python_v1())
    with pytest.raises(ValueError, match="not divisible by 16"):
        ArrayConstraint(ct.float32, 1, alias_groups=(), shape_constant=(8,),
                        shape_divisible_by=16, **arr)
    with pytest.raises(ValueError, match="version >= 2"):
        KernelSignature([(1, 2)], CallingConvention.cutile_python_v1())
    with pytest.raises(ValueError, match="Unknown calling convention"):
        CallingConvention.from_code("t9")
    assert KernelSignature([ScalarConstraint(ct.int32)], CallingConvention.cutile_python_v2())


# --------------------------------------------------------------------------- annotations
def test_array_and_list_annotations():
    Static0 = typing.Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))]
    Rows = typing.Annotated[list, ct.ListAnnotation(ct.ArrayAnnotation())]

    @ct.kernel
    def first_row(out: Static0, xs: Rows):
        ct.store(out, (0,), ct.load(xs[1], (0,), (4,)))
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), first_row, (out, [np.zeros(4, np.float32), np.ones(4, np.float32)]))
    np.testing.assert_array_equal(out, 1)
    with pytest.raises(ValueError, match="int32 or int64"):
        ct.ArrayAnnotation(index_dtype=ct.int16)
    with pytest.raises(TypeError, match="must be an ArrayAnnotation"):
        ct.ListAnnotation(3)


Static = typing.Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,),
                                                        static_stride_dims=(0, 1))]


@ct.kernel
def _static_rows(x: Static, out):
    ct.static_assert(x.strides[1] == 0)           # a broadcast stride is a constant too
    t = ct.load(x, (0, 0), (x.shape[0], 4))       # a static extent as a tile shape
    ct.store(out, (0, 0), t + x.strides[0])


def test_static_dims_of_an_array_annotation_are_constants_of_the_kernel():
    """cuTile's ArrayAnnotation(static_shape_dims=, static_stride_dims=): the kernel is made
    for those values (another value, another specialization); KernelSignature reports them;
    an axis out of range or named twice is cuTile's ValueError."""
    x = np.broadcast_to(np.arange(4, dtype=np.float32)[:, None], (4, 4))
    out = np.zeros((4, 4), np.float32)
    ct.launch(None, (1,), _static_rows, (x, out))
    np.testing.assert_array_equal(out, x + 1)
    (c, _) = KernelSignature.from_kernel_args(_static_rows, (x, out),
                                              CallingConvention.cutile_python_v2()).parameters
    assert c.shape_constant == (4, None) and c.stride_constant == (1, 0)
    y = np.zeros((8, 1), np.float32)
    sig = {v: KernelSignature.from_kernel_args(views.gather_rows, (y, np.zeros(8, np.int32), y,
                                                                   8, 1), cc).parameters[0]
           for v, cc in ((1, CallingConvention.cutile_python_v1()),
                         (2, CallingConvention.cutile_python_v2()))}
    assert sig[1].shape_constant == (None, None) and sig[2].shape_constant == (None, 1)
    # annotated strides drop the others' inferred facts (unit stride, divisibility under 16
    # bytes): inner strides 1 and 3 share one specialization, as in cuTile
    from tilepy.host.intake import infos_for
    rows = typing.Annotated[ct.Array, ct.ArrayAnnotation(static_stride_dims=(0,))]

    def k2(x: rows):
        pass
    k2 = ct.kernel(k2)
    base = np.zeros((4, 20), np.float32)
    assert k2.specialize(infos_for((base[:, :4],)))[0] == \
        k2.specialize(infos_for((base[:, 0:12:3],)))[0]
    for dims, phrase in (((2,), "static_shape_dims contains axis 2"),
                         ((0, -2), "static_shape_dims has a duplicate axis 0")):
        ann = typing.Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=dims)]

        def k(x: ann):
            pass
        with pytest.raises(ValueError, match=phrase):
            ct.launch(None, (1,), ct.kernel(k), (out,))


def test_a_kernel_is_an_instance_of_ct_kernel():
    """cuTile's `ct.kernel` is the class of kernels: `isinstance(k, ct.kernel)` (util.py of
    cuTile's tests asks it)."""
    assert isinstance(views.gather_rows, ct.kernel)
    assert not isinstance(views.gather_rows.func, ct.kernel)
