"""`kernel.inspect(*args)`: the Tile IR, CUDA C++, PTX and SASS statistics of one
specialization; HTML panes with syntax highlighting in a notebook, plain text in a terminal."""
import numpy as np
import pytest

import tilepy as ct
from tilepy.tools import sass_stats
from tilepy.tools.highlight import to_html
from notebook_util import execute, notebook


@ct.kernel
def scale(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (T,)) * 2.0)


X = np.zeros(1000, np.float32)


@pytest.fixture(scope="module")
def view():
    return scale.inspect(X, X, 128)


def test_inspect_has_every_form_of_the_specialization(view):
    assert view.tile_ir == scale.mlir(X, X, 128) and "cuda_tile.module @scale" in view.tile_ir
    assert view.cuda == scale.cuda_source(X, X, 128) and 'extern "C"' in view.cuda
    assert ".entry tp_kernel_scale" in view.ptx and "st.global" in view.ptx
    assert ".loc" not in view.ptx and ".debug" not in view.ptx        # readable: no line info
    assert view.sass.registers and view.sass.registers > 0 and view.sass.spill_bytes == 0
    if sass_stats.available():
        assert view.sass.instructions > 10 and view.sass.by_class.get("STG.E.128", 0) >= 1
        counts = [n for _, n in view.sass.top_ops]
        assert counts == sorted(counts, reverse=True) and sum(counts) <= view.sass.instructions
        assert "EXIT" in dict(view.sass.top_ops)
    else:
        assert view.sass.instructions is None and "nvdisasm" in view.sass.note


def test_inspect_prints_as_plain_text_in_a_terminal(view):
    text = str(view)
    assert repr(view) == text and "<" not in text.split("-- Tile IR --")[0]
    order = [text.index(h) for h in ("-- Tile IR --", "-- CUDA C++ --", "-- PTX (compute_90) --",
                                     "-- SASS statistics (sm_90) --")]
    assert order == sorted(order)
    assert f"registers / thread       {view.sass.registers}" in text


def test_inspect_shows_side_by_side_highlighted_panes_in_a_notebook(view):
    page = view._repr_html_()
    assert page.count('class="tp-pane"') == 4 and "display:flex" in page
    for title in ("Tile IR", "CUDA C++", "PTX (compute_90)", "SASS statistics (sm_90)"):
        assert f"<h4>{title}</h4>" in page
    assert '<span class="tp-kw">extern</span>' in page          # C++ keyword
    assert '<span class="tp-var">%x</span>' in page              # a Tile IR value
    assert '"C"' not in page and "&quot;C&quot;" in page             # escaped


def test_highlighting_escapes_html_and_keeps_the_text():
    for lang, text in [("cpp", 'if (a < b) { s = "<x>"; } // a & b\n'),
                       ("mlir", "%0 = addf %a, %b : tile<f32>\n"),
                       ("ptx", "\tld.global.f32 %f1, [%rd1]; // load\n")]:
        page = to_html(text, lang)
        assert "<x>" not in page and "a < b" not in page
        import html
        import re
        assert html.unescape(re.sub(r"</?span[^>]*>", "", page)) == text


def test_inspect_renders_in_a_jupyter_kernel(tmp_path):
    cell = ("import numpy as np\nimport tilepy as ct\n\n@ct.kernel\ndef k(x, y):\n"
            "    ct.store(y, (0,), ct.load(x, (0,), (16,)) + 1.0)\n\n"
            "x = np.zeros(16, np.float32)\nk.inspect(x, x)\n")
    nb = execute(notebook(cell), tmp_path, {"TILEPY_CACHE_DIR": str(tmp_path / "cache")})
    result = [o for o in nb.cells[0].outputs if o["output_type"] == "execute_result"][0]
    assert 'class="tp-inspect"' in result["data"]["text/html"]
    assert "-- SASS statistics (sm_90) --" in result["data"]["text/plain"]
