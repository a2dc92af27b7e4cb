"""tilepy's Tile IR bytecode (tilepy/bytecode/) read by NVIDIA's tools: every module of the test
corpora (tutorial kernels, the cuTile-style suite, ir/samples.py, the spec listings) is written as
bytecode and accepted by `tileirdisasm` (NVIDIA's reader and verifier); where tilepy's parser reads
NVIDIA's printed text back, the module has the same ops in the same order. The format tests below
need no NVIDIA tool."""
import functools
import os
import re
import subprocess

import numpy as np
import pytest

import bytecode_util as bu
from tilepy.bytecode import read_module, write_module
from tilepy.bytecode.layouts import LAYOUTS, STRUCTURAL
from tilepy.bytecode.stream import signed_varint, varint
from tilepy.errors import TileUnsupportedFeatureError
from tilepy.ir.ops import OPS
from tilepy.ir.parser import parse_module

CORPORA = bu.corpora()
needs_tool = pytest.mark.skipif(bu.TILEIRDISASM is None,
                                reason="tileirdisasm not installed (pip install nvidia-cuda-tileiras)")

@needs_tool
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_nvidia_verifier_accepts(name):
    result = bu.disasm(write_module(CORPORA[name]()))
    assert result.returncode == 0, result.stderr
    assert "entry @" in result.stdout


def _shape(module):
    """Per op: its name, result types and the attributes it sets to other than their default
    (NVIDIA's printer leaves out a default rounding: the bytecode layouts' defaults)."""
    def attrs(o):
        layout = LAYOUTS.get(o.name)
        default = {f.name: f.default for f in layout.attrs} if layout else {}
        return sorted(k for k, v in o.attrs.items() if v not in (None, False, default.get(k)))
    return [(o.name, [str(r.type) for r in o.results], attrs(o)) for o in module.walk()]


@needs_tool
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_nvidia_text_reads_back_the_same(name):
    """tileirdisasm's text of tilepy's bytecode, read by tilepy's parser and verified, has the
    same ops with the same result types and attributes."""
    from tilepy.ir.verifier import verify
    module = CORPORA[name]()
    text = bu.disasm(write_module(module)).stdout
    back = parse_module(f"cuda_tile.module @m {{\n{text}\n}}\n")
    verify(back)
    assert _shape(back) == _shape(module)


@needs_tool
@pytest.mark.parametrize("name", sorted(CORPORA))
def test_mlir_prints_what_tileirdisasm_prints(name):
    """tilepy's printed text of every corpus module is NVIDIA's: equal, line by line, to
    tileirdisasm's print of tilepy's bytecode of the module, up to SSA names, runs of blanks and
    the `cuda_tile.module` wrapper (bu.canonical_text). Ops, attributes, types, float literals,
    result groups and left-out terminators/defaults are compared as printed."""
    from tilepy.ir.printer import print_module
    module = CORPORA[name]()
    nvidia = bu.disasm(write_module(module)).stdout
    assert bu.canonical_text(print_module(module)) == bu.canonical_text(nvidia)


def test_canonical_text_renames_by_definition():
    a = "cuda_tile.module @m {\n  %x:2 = for %i in (%a to %b, step %c) : tile<i32> iter_values(%s = %z)  {\n  %y = addf %x#1, %s : t\n}"
    b = "%q:2 = for %j in (%a to %b, step %c) : tile<i32> iter_values(%u = %z) {\n%w = addf %q#1, %u : t"
    assert bu.canonical_text(a) == bu.canonical_text(b)
    assert bu.canonical_text(b) != bu.canonical_text(b.replace("%q#1, %u", "%u, %q#1"))


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_reader_round_trips(name):
    """tilepy's reader gives back a module that verifies, has the same ops, and writes the very
    same bytes."""
    from tilepy.ir.verifier import verify
    data = write_module(CORPORA[name]())
    back = read_module(data)
    verify(back)
    assert _shape(back) == _shape(CORPORA[name]())
    assert write_module(back) == data


def test_reader_refuses_what_tilepy_cannot_hold():
    data = bytearray(write_module(CORPORA["sample:load_view_tko"]()))
    with pytest.raises(TileUnsupportedFeatureError, match="version 13.0"):
        read_module(bytes(data[:8]) + b"\x0d\x00" + bytes(data[10:]))
    from tilepy.errors import TileValueError
    with pytest.raises(TileValueError, match="not Tile IR bytecode"):
        read_module(b"MLIR" + bytes(data[4:]))
    with pytest.raises(TileValueError, match="truncated"):
        read_module(bytes(data[:40]))


@needs_tool
def test_kernel_bytecode():
    cases = bu.tutorial_modules()
    assert "tutorial:01_vector_add.vector_add" in cases
    import sys
    sys.path.insert(0, os.path.join(bu.HERE, "..", "tutorials"))
    from definitions import load
    a = np.zeros(2048, np.float32)
    data = load("01_vector_add").vector_add.bytecode(a, a, a, 256)
    assert data.startswith(b"\x7fTileIR\x00\x0d\x04")
    text = bu.disasm(data).stdout
    assert "load_view_tko" in text and "tile<256xf32>" in text


@pytest.mark.parametrize("version", [(13, 1), (13, 2), (13, 3), (13, 4), (13, 5)])
def test_versions_in_the_header(version):
    sample = CORPORA["sample:addf"]()
    data = write_module(sample, version)
    assert data[:8] == b"\x7fTileIR\x00" and tuple(data[8:10]) == version
    assert data[-1] == 0                    # the end-of-bytecode section


def test_older_versions_differ_where_the_format_does():
    """13.4 adds inbounds to load/store_view_tko and optional-part bitfields to ptr types."""
    module = CORPORA["sample:load_view_tko"]()
    assert len(write_module(module, (13, 4))) > len(write_module(module, (13, 3)))


def test_unwritten_version_is_refused():
    with pytest.raises(TileUnsupportedFeatureError, match="13.6 is not written"):
        write_module(CORPORA["sample:addf"](), (13, 6))
    data = bytearray(write_module(CORPORA["sample:addf"]()))
    data[9] = 6
    with pytest.raises(TileUnsupportedFeatureError, match="13.6 is not read"):
        read_module(bytes(data))


def _versions_tileiras_lists() -> list:
    from tilepy.launch.tileiras import find_tileiras
    out = subprocess.run([find_tileiras(), "--list-versions"], capture_output=True,
                         text=True).stdout
    return [tuple(int(x) for x in v.split(".")) for v in re.findall(r"^(\d+\.\d+)$", out, re.M)]


def _listed(version):
    """Skip a version the installed tileiras does not list (13.5 needs tileiras 13.5)."""
    if version not in _versions_tileiras_lists():
        pytest.skip(f"the installed tileiras does not list bytecode {version[0]}.{version[1]}")


WRITTEN = [(13, 1), (13, 2), (13, 3), (13, 4), (13, 5)]


@needs_tool
@pytest.mark.parametrize("version", WRITTEN)
def test_every_version_is_accepted_or_refused_by_name(version):
    """Each corpus module written as `version`: NVIDIA's reader accepts it and tilepy reads it
    back to the same bytes -- or tilepy refuses it, naming what needs a newer version (an op,
    an attribute, a type the older format lacks), and the newest version writes it."""
    from tilepy.bytecode import VERSIONS
    assert version in VERSIONS
    _listed(version)
    refused = []
    for name in sorted(CORPORA):
        try:
            data = write_module(CORPORA[name](), version)
        except TileUnsupportedFeatureError as e:
            assert re.search(r"needs bytecode 13\.\d or later \(writing 13\.\d\)", str(e)), e
            refused.append(name)
            continue
        result = bu.disasm(data)
        assert result.returncode == 0, (name, result.stderr)
        assert write_module(read_module(data), version) == data, name
    # 13.4's ops (fpowi: also the cuTile suite's layer_norm, whose `x ** 2` is fpowi; insert,
    # gdc_*, memory_fence_alias_tko) and 13.3's (alloca, atomic_red_view_tko, the two views,
    # the spec's fp4 pack_1/unpack_1 listings: e2m1 is 13.3's)
    new_13_4, new_13_3 = 6, 6
    expected = {(13, 1): 11 + new_13_3 + new_13_4, (13, 2): 5 + new_13_3 + new_13_4,
                (13, 3): new_13_4, (13, 4): 0, (13, 5): 0}[version]
    assert len(refused) == expected, refused


@needs_tool
@pytest.mark.parametrize("version", WRITTEN)
def test_kernel_bytecode_versions(version):
    import sys
    sys.path.insert(0, os.path.join(bu.HERE, "..", "tutorials"))
    from definitions import load
    a = np.zeros(2048, np.float32)
    _listed(version)
    data = load("01_vector_add").vector_add.bytecode(a, a, a, 256, version=version)
    assert tuple(data[8:10]) == version
    assert bu.disasm(data).returncode == 0


def _marked_atomic_red():
    module = CORPORA["sample:atomic_red_view_tko"]()
    next(o for o in module.walk() if o.name == "atomic_red_view_tko").attrs["inbounds"] = (True,
                                                                                          False)
    return module


def test_atomic_red_inbounds_is_written_from_13_5():
    """atomic_red_view_tko's `inbounds` (13.5): written and read back in 13.5, refused by name in
    13.4 (whose atomic_red_view_tko has no room for it); unmarked, 13.5 writes all-false."""
    module = _marked_atomic_red()
    back = read_module(write_module(module, "13.5"))
    red = next(o for o in back.walk() if o.name == "atomic_red_view_tko")
    assert red.attrs["inbounds"] == (True, False)
    with pytest.raises(TileUnsupportedFeatureError, match="atomic_red_view_tko's 'inbounds' needs "
                                                          r"bytecode 13.5 or later \(writing 13.4\)"):
        write_module(module, (13, 4))
    red = next(o for o in module.walk() if o.name == "atomic_red_view_tko")
    red.attrs["inbounds"] = (False, False)              # what 13.4's absent field says
    assert write_module(module, (13, 4)) == write_module(CORPORA["sample:atomic_red_view_tko"](),
                                                         (13, 4))
    plain = CORPORA["sample:atomic_red_view_tko"]()
    assert len(write_module(plain, (13, 5))) > len(write_module(plain, (13, 4)))
    assert "inbounds" not in read_module(write_module(plain, (13, 5))).entry().regions[0] \
        .block.ops[-2].attrs


def test_thirteen_five_entries_carry_hints_and_argument_attributes():
    """13.5 entries: no hints flag, the hints always (none: an empty list), then an empty array
    of argument attributes; read back as tilepy's entry without hints."""
    module = CORPORA["sample:addf"]()
    data = write_module(module, (13, 5))
    old = write_module(module, (13, 4))
    assert len(data) > len(old) and read_module(data).entry().attrs.get("optimization_hints") is None
    assert write_module(read_module(data), (13, 5)) == data


def test_worker_warps_are_a_hint_from_13_3_and_dropped_before_with_cutiles_warning():
    import warnings
    import tilepy as ct

    @ct.kernel(num_worker_warps=8, occupancy=2)
    def k(x, y):
        ct.store(y, (0,), ct.load(x, (0,), (64,)))
    x = np.zeros(64, np.float32)
    hints = read_module(k.bytecode(x, x, version="13.3")).entry().attrs["optimization_hints"]
    assert hints.as_dict() == {"default": {"occupancy": 2, "num_worker_warps_per_cta": 8}}
    with pytest.warns(UserWarning, match=r"num_worker_warps is ignored: requires tileiras 13\.3, "
                                         r"but current version is 13\.1"):
        old = read_module(k.bytecode(x, x, version="13.1")).entry()
    assert old.attrs["optimization_hints"].as_dict() == {"default": {"occupancy": 2}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_module(CORPORA["sample:addf"](), "13.1")


def test_version_strings():
    module = CORPORA["sample:addf"]()
    assert write_module(module, "13.5") == write_module(module, (13, 5))
    from tilepy.errors import TileValueError
    with pytest.raises(TileValueError, match="'13' is not 'MAJOR.MINOR'"):
        write_module(module, "13")


@needs_tool
def test_atomic_red_inbounds_passes_nvidias_13_5_verifier():
    _listed((13, 5))
    result = bu.disasm(write_module(_marked_atomic_red(), (13, 5)))
    assert result.returncode == 0, result.stderr
    assert "token = %0 inbounds = [true, false] :" in result.stdout
    from tilepy.ir.printer import print_module
    assert bu.canonical_text(print_module(_marked_atomic_red())) == \
        bu.canonical_text(result.stdout)


@needs_tool
def test_tileiras_compiles_thirteen_five_bytecode():
    """tileiras 13.5 makes a cubin of tilepy's 13.5 bytecode (a marked atomic_red_view_tko)."""
    _listed((13, 5))
    from tilepy.launch.tileiras import assemble, unusable
    if unusable():
        pytest.skip(unusable())
    cubin = assemble(write_module(_marked_atomic_red(), (13, 5)), "sm_90", "red135")
    assert cubin.data[:4] == b"\x7fELF"


@needs_tool
@pytest.mark.parametrize("part", ["entry", "subprogram"])
def test_thirteen_five_format_changes_are_needed(part, monkeypatch):
    """NVIDIA's 13.5 reader refuses a 13.5 file written with 13.4's entry header or 13.4's
    debug subprogram: each 13.5 change in the writer is one NVIDIA requires."""
    _listed((13, 5))
    import tilepy.bytecode.debuginfo as di
    import tilepy.bytecode.writer as w
    module = CORPORA["tutorial:01_vector_add.vector_add"]()
    assert bu.disasm(write_module(module, (13, 5))).returncode == 0
    target = (w, "ENTRY_ATTRS_SINCE") if part == "entry" else (di, "SUBPROGRAM_FLAGS_SINCE")
    monkeypatch.setattr(*target, (13, 6))
    assert bu.disasm(write_module(module, (13, 5))).returncode != 0


def test_thirteen_one_print_has_no_token():
    """13.1's print_tko has no token result: written without it when unused (read back with
    one), refused when the token is used."""
    from tilepy.ir.builder import make_op
    module = CORPORA["spec:print_tko_0"]()
    back = read_module(write_module(module, (13, 1)))
    assert write_module(back, (13, 3)) == write_module(module, (13, 3))
    block = module.entry().regions[0].block
    prints = [o for o in block.ops if o.name == "print_tko"]
    join = make_op("join_tokens", [p.result for p in prints])
    join.parent = block
    block.ops.insert(block.ops.index(prints[-1]) + 1, join)
    with pytest.raises(TileUnsupportedFeatureError, match="print_tko with its results used needs "
                                                           "bytecode 13.2"):
        write_module(module, (13, 1))


def test_every_op_has_a_layout():
    missing = [name for name in OPS if name not in LAYOUTS and name not in STRUCTURAL]
    assert not missing


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"),
                                            (300, b"\xac\x02")])
def test_varint(value, encoded):
    buf = bytearray()
    varint(value, buf)
    assert bytes(buf) == encoded


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"),
                                            (-64, b"\x7f")])
def test_signed_varint(value, encoded):
    buf = bytearray()
    signed_varint(value, buf)
    assert bytes(buf) == encoded


def test_bitcast_to_tf32_is_not_a_same_width_cast():
    """NVIDIA's verifier: tf32 is 19 bits wide, so i32 <-> tf32 is no bitcast (found by taking
    the fuzzer's kernels through tileirdisasm); tilepy's verifier says the same."""
    from tilepy.errors import TileError
    from tilepy.ir.verifier import verify
    text = ("cuda_tile.module @m {\nentry @k() {\n%a = constant <i32: 7> : tile<4xi32>\n"
            "%r = bitcast %a : tile<4xi32> -> tile<4xtf32>\nreturn\n}\n}\n")
    with pytest.raises(TileError, match="same bit width"):
        verify(parse_module(text))


FUZZ_BATCHES, FUZZ_CASES, FUZZ_PER_MODULE = 42, 12, 6


@functools.cache
def fuzz_modules():
    """The fuzz corpus of test_fuzzed_kernels_are_accepted, drawn once for every version."""
    from hypothesis import HealthCheck, Phase, given, settings
    from fuzz import batches
    from fuzz.case import materialize
    from tilepy.ir.core import Module
    modules, pending = [], Module("fuzz")

    @settings(max_examples=FUZZ_BATCHES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(batches(FUZZ_CASES))
    def collect(batch):
        nonlocal pending
        module, _ = materialize(batch[0], name=f"fuzz{len(modules)}_{len(pending.items)}")
        for item in module.items:
            pending.append(item)
        if len(pending.items) == FUZZ_PER_MODULE:
            modules.append(pending)
            pending = Module("fuzz")

    collect()
    return modules + ([pending] if pending.items else [])


@needs_tool
@pytest.mark.parametrize("version", [(13, 4), (13, 5)])
def test_fuzzed_kernels_are_accepted(version):
    """At least 500 random valid kernels (tests/fuzz), several entries a module: accepted,
    read back to the same bytes, and printed by tilepy as tileirdisasm prints them."""
    _listed(version)
    modules = fuzz_modules()
    kernels = 0
    for module in modules:
        data = write_module(module, version)
        result = bu.disasm(data)
        assert result.returncode == 0, f"{result.stderr}\n{module}"
        assert write_module(read_module(data), version) == data
        assert bu.canonical_text(str(module)) == bu.canonical_text(result.stdout)   # same text
        kernels += FUZZ_CASES * len(module.items)
    assert kernels >= 500


@needs_tool
def test_locations_point_at_the_python_lines(tmp_path):
    """The debug section carries each op's Python line: NVIDIA's disassembler shows the addf of
    `a_tile + b_tile` at its line and column in the tutorial."""
    path = os.path.join(bu.HERE, "..", "tutorials", "01_vector_add.py")
    with open(path) as f:
        lines = f.read().splitlines()
    row = next(i for i, text in enumerate(lines, 1) if "tile=a_tile + b_tile" in text)
    col = lines[row - 1].index("a_tile + b_tile") + 1
    data = write_module(CORPORA["tutorial:01_vector_add.vector_add"]())
    path = tmp_path / "k.tileirbc"
    path.write_bytes(data)
    text = subprocess.run([bu.TILEIRDISASM, "-g", str(path)], capture_output=True, text=True,
                          check=True).stdout
    addf_loc = re.search(r"= addf .* loc\((#loc\d+)\)", text).group(1)
    inner = re.search(rf"^{addf_loc} = #cuda_tile.di_loc<(#loc\d*) in #di_subprogram>", text,
                      re.M).group(1)
    assert re.search(rf'^{inner} = loc\(".*01_vector_add.py":{row}:{col}\)', text, re.M)


NEW_ATTRS = """cuda_tile.module @m {
entry @k() {
%a = constant <f32: 1.0> : tile<4xf32>
%e = exp %a rounding<approx> : tile<4xf32>
%f = exp %a rounding<full> : tile<4xf32>
%x = constant <f8E4M3FN: 1.0> : tile<16x32xf8E4M3FN>
%y = constant <f8E4M3FN: 1.0> : tile<32x8xf8E4M3FN>
%c = constant <f32: 0.0> : tile<16x8xf32>
%r = mmaf %x, %y, %c fast_acc : tile<16x32xf8E4M3FN>, tile<32x8xf8E4M3FN>, tile<16x8xf32>
return
}
}"""


def test_13_4_attributes_of_existing_ops_round_trip():
    """exp's rounding<approx|full> (13.3) and mmaf's fast_acc (13.3) are op attributes: parsed,
    verified, written and read back (13.2 bytecode has no room for them)."""
    from tilepy.ir.verifier import verify
    module = verify(parse_module(NEW_ATTRS))
    back = read_module(write_module(module))
    ops = {o.name + str(i): o for i, o in enumerate(back.walk())}
    assert [o.attrs.get("rounding_mode") for o in back.walk() if o.name == "exp"] == ["approx", "full"]
    assert next(o for o in ops.values() if o.name == "mmaf").attrs.get("fast_acc") is True
    with pytest.raises(TileUnsupportedFeatureError, match="needs bytecode 13.3"):
        write_module(module, (13, 2))


@needs_tool
def test_13_4_attributes_of_existing_ops_pass_nvidias_verifier():
    module = parse_module(NEW_ATTRS)
    result = bu.disasm(write_module(module))
    assert result.returncode == 0, result.stderr
    assert "rounding<approx>" in result.stdout and "fast_acc" in result.stdout
    from tilepy.ir.printer import print_module
    assert bu.canonical_text(print_module(module)) == bu.canonical_text(result.stdout)


@needs_tool
@pytest.mark.parametrize("elem", ["f32", "i8", "i1", "tf32", "bf16", "f16", "i64"])
def test_large_and_uniform_constants_print_as_nvidia_prints_them(elem):
    """More than 100 elements: MLIR's raw-bytes hex; an all-equal i1 array: a splat."""
    from tilepy.ir.printer import print_module
    big = ", ".join(("true" if i % 3 else "false") if elem == "i1" else str(i % 9 - 4)
                    + (".5" if elem[0] in "bft" else "") for i in range(128))
    text = (f"cuda_tile.module @m {{\nentry @k() {{\n%a = constant <{elem}: [{big}]> : tile<128x{elem}>\n"
            f"%b = constant <i1: [true, true, true, true]> : tile<4xi1>\nreturn\n}}\n}}\n")
    module = parse_module(text)
    nvidia = bu.disasm(write_module(module))
    assert nvidia.returncode == 0, nvidia.stderr
    assert bu.canonical_text(print_module(module)) == bu.canonical_text(nvidia.stdout)
    assert '"0x' in nvidia.stdout


@needs_tool
@pytest.mark.parametrize("op", ["exp", "tanh"])
@pytest.mark.parametrize("elem", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("mode", ["approx", "full", "nearest_even"])
def test_exp_and_tanh_roundings_are_verified_as_nvidia_does(op, elem, mode):
    """tilepy's verifier accepts a rounding of exp/tanh on a type exactly where NVIDIA's does
    (approx: f32 only; full: every float type; nothing else)."""
    from tilepy.errors import TileError
    from tilepy.ir.verifier import verify
    module = parse_module(f"cuda_tile.module @m {{\nentry @k() {{\n%x = constant <{elem}: 1.0> : "
                          f"tile<4x{elem}>\n%r = {op} %x rounding<{mode}> : tile<4x{elem}>\n"
                          "return\n}\n}\n")
    try:
        verify(module)
        ours = True
    except TileError:
        ours = False
    assert ours == (bu.disasm(write_module(module)).returncode == 0)
