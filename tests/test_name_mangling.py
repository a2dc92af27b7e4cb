"""cuTile's kernel name mangling (tilepy.compilation.mangle_kernel_name/demangle_kernel_name,
api/name_mangling.py): each constraint's spelling, the round trip, the demangler's errors."""
import math

import pytest

import tilepy as ct
from tilepy.api.name_mangling import Cursor, demangle_string, mangle_string
from tilepy.compilation import (ArrayConstraint, CallingConvention, KernelSignature,
                                ListConstraint, ScalarConstraint, TupleConstraint,
                                demangle_kernel_name, mangle_kernel_name)

V1, V2 = CallingConvention.cutile_python_v1(), CallingConvention.cutile_python_v2()


def _array(dtype=ct.float16, ndim=2, **kw):
    args = dict(index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                may_alias_internally=False)
    return ArrayConstraint(dtype, ndim, **{**args, **kw})


@pytest.mark.parametrize("params,cconv,suffix", [
    ([ScalarConstraint(ct.uint16), ScalarConstraint(ct.float8_e5m2)], V1, "_Su16_Sf8m2"),
    ([-12, 7, True, 0.5], V1, "_I_12_I7_B1_F3fe0000000000000"),
    # axes 0 and 2 share "stride >= 0", axis 1's stride is 1; 8-element extents on axis 0
    ([_array(ndim=3, stride_constant=(None, 1, None), shape_divisible_by=(8, 1, 1))], V1,
     "_A3f16_1i8_2t1_5l0"),
    ([_array(alias_groups=("q",), may_alias_internally=True, base_addr_divisible_by=16,
             index_dtype=ct.int64), _array(alias_groups=("q",))], V1,
     "_A2f16_3l0_p16g0iw_A2f16_3l0_g0"),
    ([ListConstraint(_array(stride_lower_bound_incl=None), alias_groups=(),
                     elements_may_alias=True)], V1, "_LiA2f16"),
    ([TupleConstraint([ScalarConstraint(ct.int8), TupleConstraint([5])]), _array(ndim=1)], V2,
     "_T2Si8T1I5_A1f16_1l0"),
])
def test_each_constraint_and_the_round_trip(params, cconv, suffix):
    sig = KernelSignature(params, cconv)
    name = mangle_kernel_name("gemm_tile", sig)
    assert name == f"gemm_tile_K{cconv.code}{suffix}"
    fn, back = demangle_kernel_name(name)
    assert fn == "gemm_tile" and back.calling_convention == cconv and back.symbol == name
    if not any(getattr(p, "alias_groups", ()) for p in params):
        assert back.parameters == sig.parameters


def test_a_nan_constant_round_trips():
    _, back = demangle_kernel_name(mangle_kernel_name("k", KernelSignature([math.nan], V1)))
    assert math.isnan(back.parameters[0].value)


@pytest.mark.parametrize("text,mangled", [("Kab_c", "_kab__c_z"), ("é€", "_e9_u20ac_z"),
                                          ("x.y", "x_2ey_z")])
def test_strings_escape_all_but_letters_and_digits(text, mangled):
    assert mangle_string(text) == mangled
    cursor = Cursor(mangled + "rest", mangled + "rest")
    assert demangle_string(cursor) == text and cursor.remaining == "rest"


@pytest.mark.parametrize("symbol,message", [
    ("plain", "is not a mangled kernel name"),
    ("k_Kt1_Sq9", "Unknown dtype name `q9`"),
    ("k_Kt1_A1f32_0l0", "Zero axis mask"),
    ("k_Kt1_A1f32_1i1", "Divisibility must be greater than 1"),
    ("k_Kt1_A1f32_g1", "Invalid alias group ID"),
    ("k_Kt1_T1Si32", "version >= 2"),
    ("k_Kt7_Si32", "Unknown calling convention"),
])
def test_what_is_not_a_mangled_name(symbol, message):
    with pytest.raises(ValueError, match=message):
        demangle_kernel_name(symbol)


def test_parameter_constraint_is_a_type_alias_as_cuTiles():
    """cuTile's ParameterConstraint is the union of the constraint classes: an annotation may
    subscript it, and isinstance takes it."""
    from typing import Sequence

    from tilepy.compilation import ParameterConstraint, ScalarConstraint
    assert Sequence[ParameterConstraint].__args__ == (ParameterConstraint,)
    assert isinstance(ScalarConstraint(ct.int32), ParameterConstraint)
    assert not isinstance((1, 2), ParameterConstraint)
