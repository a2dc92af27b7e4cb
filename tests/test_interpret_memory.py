"""Memory in the interpreter: partition views (padding, dim_map, ragged edges, index space),
pointer loads/stores with masks, atomics, globals, undefined lanes and races (spec 5.3, 6, 8.6)."""
import numpy as np
import pytest

import tilepy.interpret as interp
from tilepy.errors import TileValueError
from tilepy.ir.parser import parse_module


def ir(body: str, params: str = "") -> object:
    return parse_module(f"cuda_tile.module @t {{\nentry @k({params}) {{\n{body}\nreturn\n}}\n}}\n")


VIEW2 = ("%tv = make_tensor_view %p, shape = [%m, %n], strides = [%s, 1] : tile<i32> -> "
         "tensor_view<?x?xf32, strides=[?,1]>\n")


def pview(tile, extra=""):
    return (f"%pv = make_partition_view %tv : partition_view<tile=({tile}), "
            f"tensor_view<?x?xf32, strides=[?,1]>{extra}>\n")


PV_T = "partition_view<tile=({tile}), tensor_view<?x?xf32, strides=[?,1]>{extra}>"
P2 = "%p: tile<ptr<f32>>, %m: tile<i32>, %n: tile<i32>, %s: tile<i32>, %q: tile<ptr<f32>>"


def copy_kernel(tile: str, extra: str = ""):
    """Each block copies tile (bid.x, bid.y) of p (a padded strided view) into q's same tile."""
    t = PV_T.format(tile=tile, extra=extra)
    return ir(VIEW2 + pview(tile, extra) +
              "%qv = make_tensor_view %q, shape = [%m, %n], strides = [%n, 1] : tile<i32> -> "
              "tensor_view<?x?xf32, strides=[?,1]>\n"
              f"%qp = make_partition_view %qv : {PV_T.format(tile=tile, extra='')}\n"
              "%x, %y, %z = get_tile_block_id : tile<i32>\n"
              f"%t, %k = load_view_tko weak %pv[%x, %y] : {t}, tile<i32> -> tile<{tile}xf32>, token\n"
              f"%k2 = store_view_tko weak %t, %qp[%x, %y] : tile<{tile}xf32>, "
              f"{PV_T.format(tile=tile, extra='')}, tile<i32> -> token", P2)


def test_ragged_tiles_pad_on_load_and_mask_on_store():
    base = np.arange(7 * 12, dtype=np.float32).reshape(7, 12)
    a = base[:, :10]                                   # 7x10 in rows of 12: a strided view
    out = np.full((7, 10), -1.0, np.float32)
    interp.run(copy_kernel("4x8", ", padding_value=nan"), (2, 2), [a, 7, 10, 12, out])
    assert np.array_equal(out, a)


def test_padding_values_reach_the_tile():
    """A 3x5 array loaded as one 4x8 tile: the padded lanes hold the padding value."""
    a = np.ones((3, 5), np.float32)
    seen = []
    interp.run(copy_kernel("4x8", ", padding_value=neg_inf"), (1, 1),
               [a, 3, 5, 5, np.zeros((3, 5), np.float32)],
               on_op=lambda e: seen.append(e.outputs[0]) if e.op.name == "load_view_tko" else None)
    t = seen[0]
    assert (t[:3, :5] == 1).all() and (t[3:, :] == -np.inf).all() and (t[:, 5:] == -np.inf).all()


def test_dim_map_transposes_the_tile():
    a = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    t = "partition_view<tile=(4x8), tensor_view<?x?xf32, strides=[?,1]>, dim_map=[1, 0]>"
    got = []
    m = ir(VIEW2 + f"%pv = make_partition_view %tv : {t}\n%c0 = constant <i32: 0> : tile<i32>\n"
           f"%t, %k = load_view_tko weak %pv[%c0, %c0] : {t}, tile<i32> -> tile<4x8xf32>, token",
           "%p: tile<ptr<f32>>, %m: tile<i32>, %n: tile<i32>, %s: tile<i32>")
    interp.run(m, 1, [a, 8, 4, 4], on_op=lambda e: got.append(e.outputs[0])
               if e.op.name == "load_view_tko" else None)
    assert np.array_equal(got[0], a.T)


def test_index_outside_the_index_space_is_reported():
    a = np.zeros((4, 8), np.float32)
    with pytest.raises(TileValueError, match=r"index 1 of dimension 0 is outside the index space"):
        interp.run(copy_kernel("4x8", ", padding_value=zero"), (2, 1), [a, 4, 8, 8, a.copy()])


def test_undefined_lanes_are_fine_until_stored():
    """Without a padding value, lanes past the edge are undefined; dividing by them is not an
    error as long as they are never stored; storing an undefined lane is, and names its cause."""
    body = ("%tv = make_tensor_view %p, shape = [%n], strides = [1] : tile<i32> -> "
            "tensor_view<?xi32, strides=[1]>\n"
            "%pv = make_partition_view %tv : partition_view<tile=(8), tensor_view<?xi32, strides=[1]>>\n"
            "%c0 = constant <i32: 0> : tile<i32>\n"
            "%t, %k = load_view_tko weak %pv[%c0] : partition_view<tile=(8), tensor_view<?xi32, "
            "strides=[1]>>, tile<i32> -> tile<8xi32>, token\n"
            "%c7 = constant <i32: 700> : tile<8xi32>\n%d = divi %c7, %t signed : tile<8xi32>\n"
            "%qv = make_tensor_view %q, shape = [%w], strides = [1] : tile<i32> -> "
            "tensor_view<?xi32, strides=[1]>\n"
            "%qp = make_partition_view %qv : partition_view<tile=(8), tensor_view<?xi32, strides=[1]>>\n"
            "%k2 = store_view_tko weak %d, %qp[%c0] : tile<8xi32>, partition_view<tile=(8), "
            "tensor_view<?xi32, strides=[1]>>, tile<i32> -> token")
    m = ir(body, "%p: tile<ptr<i32>>, %n: tile<i32>, %q: tile<ptr<i32>>, %w: tile<i32>")
    a = np.array([1, 2, 5, 7, 10], np.int32)
    out = np.zeros(5, np.int32)
    interp.run(m, 1, [a, 5, out, 5])
    assert out.tolist() == [700, 350, 140, 100, 70]
    with pytest.raises(TileValueError, match="past the tensor's edge read without a padding value"):
        interp.run(m, 1, [a, 5, np.zeros(8, np.int32), 8])
    a[2] = 0
    with pytest.raises(TileValueError, match=r"element \(2,\).*division by zero.* in divi"):
        interp.run(m, 1, [a, 5, out, 5])


PTRS = ("%p1 = reshape %p : tile<ptr<i32>> -> tile<1xptr<i32>>\n"
        "%ptrs = broadcast %p1 : tile<1xptr<i32>> -> tile<8xptr<i32>>\n"
        "%offs = iota : tile<8xi32>\n"
        "%addrs = offset %ptrs, %offs : tile<8xptr<i32>>, tile<8xi32> -> tile<8xptr<i32>>\n")


def test_pointer_gather_scatter_with_mask_and_padding():
    m = ir(PTRS + "%mask = constant <i1: [true, false, true, true, false, true, true, true]> : "
           "tile<8xi1>\n%pad = constant <i32: -5> : tile<8xi32>\n"
           "%v, %k = load_ptr_tko weak %addrs, %mask, %pad : tile<8xptr<i32>>, tile<8xi1>, "
           "tile<8xi32> -> tile<8xi32>, token\n"
           "%one = constant <i32: 100> : tile<8xi32>\n%w = addi %v, %one : tile<8xi32>\n"
           "%k2 = store_ptr_tko weak %addrs, %w, %mask : tile<8xptr<i32>>, tile<8xi32>, "
           "tile<8xi1> -> token", "%p: tile<ptr<i32>>")
    a = np.arange(8, dtype=np.int32)
    interp.run(m, 1, [a])
    assert a.tolist() == [100, 1, 102, 103, 4, 105, 106, 107]
    with pytest.raises(TileValueError, match="outside every allocation"):
        interp.run(m, 1, [np.zeros(4, np.int32)])
    b = np.arange(10, dtype=np.int32)
    interp.run(m, 1, [(b, 2)])                  # a pointer into the middle of an array
    assert b[2:].tolist() == [102, 3, 104, 105, 6, 107, 108, 109]


def test_atomics_return_old_values():
    m = ir(PTRS + "%v = constant <i32: [5, 5, 5, 5, 1, 1, 1, 1]> : tile<8xi32>\n"
           "%r, %k = atomic_rmw_tko relaxed device %addrs, max, %v : tile<8xptr<i32>>, "
           "tile<8xi32> -> tile<8xi32>, token\n"
           "%c, %k2 = atomic_cas_tko acq_rel device %addrs, %r, %offs : tile<8xptr<i32>>, "
           "tile<8xi32> -> tile<8xi32>, token", "%p: tile<ptr<i32>>")
    a = np.array([0, 9, -3, 7, 0, 9, -3, 7], np.int32)
    seen = {}
    interp.run(m, 1, [a], on_op=lambda e: seen.__setitem__(e.op.name, e.outputs[0]))
    assert seen["atomic_rmw_tko"].tolist() == [0, 9, -3, 7, 0, 9, -3, 7]
    assert seen["atomic_cas_tko"].tolist() == [5, 9, 5, 7, 1, 9, 1, 7]     # max's results
    assert a.tolist() == [5, 1, 5, 3, 1, 5, 1, 7]      # swapped where max left the old value


def test_globals_are_initialized_per_launch():
    m = parse_module("cuda_tile.module @m {\nglobal @g <i32: [1, 2, 3, 4]> : tile<4xi32>\n"
                     "entry @k(%q: tile<ptr<i32>>) {\n%p = get_global @g : tile<ptr<i32>>\n"
                     "%t, %k = load_ptr_tko weak %p : tile<ptr<i32>> -> tile<i32>, token\n"
                     "%one = constant <i32: 10> : tile<i32>\n%u = addi %t, %one : tile<i32>\n"
                     "%k2 = store_ptr_tko weak %p, %u : tile<ptr<i32>>, tile<i32> -> token\n"
                     "%k3 = store_ptr_tko weak %q, %u : tile<ptr<i32>>, tile<i32> -> token\n"
                     "return\n}\n}\n")
    out = np.zeros(1, np.int32)
    interp.run(m, 1, [out])
    interp.run(m, 1, [out])
    assert out[0] == 11


def test_races_between_tile_blocks_are_reported():
    m = ir("%c = constant <i32: 1> : tile<i32>\n"
           "%k = store_ptr_tko weak %p, %c : tile<ptr<i32>>, tile<i32> -> token", "%p: tile<ptr<i32>>")
    with pytest.raises(TileValueError, match=r"data race.*tile blocks \[0, 1\]"):
        interp.run(m, 2, [np.zeros(1, np.int32)])
    interp.run(m, 2, [np.zeros(1, np.int32)], check_races=False)
    m2 = ir("%c = constant <i32: 1> : tile<i32>\n"
            "%k = store_ptr_tko relaxed device %p, %c : tile<ptr<i32>>, tile<i32> -> token",
            "%p: tile<ptr<i32>>")
    interp.run(m2, 2, [np.zeros(1, np.int32)])      # relaxed: concurrent access is allowed


def test_i1_memory_is_a_byte_read_nonzero_as_true():
    m = ir("%t, %k = load_ptr_tko weak %p : tile<ptr<i1>> -> tile<i1>, token\n"
           "%k2 = store_ptr_tko weak %q, %t : tile<ptr<i1>>, tile<i1> -> token",
           "%p: tile<ptr<i1>>, %q: tile<ptr<i1>>")
    out = np.zeros(1, np.uint8)
    interp.run(m, 1, [np.array([7], np.uint8), out])
    assert out[0] == 1


def test_views_report_their_shapes():
    m = ir(VIEW2 + pview("4x8") + f"%a, %b = get_index_space_shape %pv : "
           f"{PV_T.format(tile='4x8', extra='')} -> tile<i64>\n"
           "%c, %d = get_tensor_shape %tv : tensor_view<?x?xf32, strides=[?,1]> -> tile<i32>",
           "%p: tile<ptr<f32>>, %m: tile<i32>, %n: tile<i32>, %s: tile<i32>")
    seen = []
    interp.run(m, 1, [np.zeros((9, 17), np.float32), 9, 17, 17],
               on_op=lambda e: seen.append([int(v) for v in e.outputs])
               if e.op.name.startswith("get_") else None)
    assert seen == [[3, 3], [9, 17]]


# ----------------------------------------------------------------------------- aliasing arguments
def _shift_kernel():
    import tilepy as ct

    @ct.kernel
    def shift(a, b):
        i = ct.bid(0)
        ct.store(b, (i,), ct.load(a, (i,), (4,)) + 1)     # RACE
    return shift


def test_arguments_aliasing_one_buffer_share_addresses_and_races_are_reported():
    """Block i reads a[4i:4i+4] = x[4i+4:...] which block i+1 writes through b: a race that is
    only visible when both arguments map the buffer's bytes to the same addresses."""
    x = np.zeros(20, np.float32)
    with pytest.raises(TileValueError, match=r"data race.*aliased by") as e:
        interp.launch((4,), _shift_kernel(), (x[4:], x[:16]))
    assert e.value.loc.source_line.rstrip().endswith("# RACE")


def test_adjacent_arguments_of_one_buffer_do_not_alias():
    y = np.zeros(32, np.float32)
    interp.launch((4,), _shift_kernel(), (y[:16], y[16:]))
    assert (y[16:] == 1).all() and (y[:16] == 0).all()


def test_one_block_reading_and_writing_aliased_arguments_is_no_race():
    x = np.arange(16, dtype=np.float32)
    interp.launch((4,), _shift_kernel(), (x, x[:]))
    assert (x == np.arange(16) + 1).all()
