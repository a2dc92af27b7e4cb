"""tilepy.torch: tutorial kernels declared as torch custom ops, checked with torch's own tools
(opcheck, gradcheck) and compiled with torch.compile(fullgraph=True) on the CPU (inductor).

The ops are built here from the tutorials' kernels (01 vector add, 02 softmax, 04 layer norm:
three outputs and a float argument, 06 GELU into a given tensor: a mutating op) and from
tutorial 6's GELU op functions themselves (forward and backward), loaded without running the
tutorial; they live in the `tilepy_test` namespace. torch.compile with inductor costs seconds,
so it is done once, on one function that uses the ops together.
"""
import math

import pytest

torch = pytest.importorskip("torch")
import tilepy as ct  # noqa: E402
import tilepy.torch as tpt  # noqa: E402
from definitions import load  # noqa: E402
from torch_tutorial import tutorial6  # noqa: E402
from kernels_util import assert_located  # noqa: E402

_t1, _t2, _t4, _t6 = (load("01_vector_add"), load("02_softmax"), load("04_layernorm"),
                      tutorial6())


def _add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Tutorial 1's vector add, over tensors of any (equal) shape."""
    c = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    tpt.launch(None, (ct.cdiv(n, 256),), _t1.vector_add,
               (a.reshape(n), b.reshape(n), c.view(n), 256))
    return c


def _softmax(x: torch.Tensor) -> torch.Tensor:
    """Tutorial 2's row softmax: one tile block per row, the row in one tile."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = 1 << max(0, x.shape[1] - 1).bit_length()
    tpt.launch(None, (x.shape[0],), _t2.softmax, (x, y, block))
    return y


def _layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tutorial 4's layer norm: three outputs (y, and each row's mean and 1/std in float32)
    and a float argument."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    mean, rstd = (torch.empty(x.shape[0], dtype=torch.float32, device=x.device) for _ in "mr")
    tpt.launch(None, (x.shape[0],), _t4.layernorm, (x, w, b, y, mean, rstd, eps, 256))
    return y, mean, rstd


def _gelu_into(x: torch.Tensor, out: torch.Tensor) -> None:
    """Tutorial 6's GELU kernel writing into a given tensor: a mutating op."""
    tpt.launch(None, _t6.gelu_grid(x), _t6.gelu_forward_kernel,
               (x, out, _t6.compute_dtype(x), 16, 64))


gelu_backward = tpt.op("tilepy_test::gelu_backward", _t6.gelu_backward)
gelu = tpt.op("tilepy_test::gelu", _t6.gelu, backward=gelu_backward, save=("x",))
add = tpt.op("tilepy_test::add", _add, backward=lambda dc: (dc, dc))
softmax = tpt.op("tilepy_test::softmax", _softmax,
                 fake=lambda x: torch.empty(x.shape, dtype=x.dtype, device=x.device))
layernorm = tpt.op("tilepy_test::layernorm", _layernorm)
gelu_into = tpt.op("tilepy_test::gelu_into", _gelu_into, mutates_args=("out",))


def _gelu_ref(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def test_ops_match_torch():
    torch.manual_seed(0)
    x, y = torch.randn(40, 100), torch.randn(40, 100)
    torch.testing.assert_close(gelu(x), _gelu_ref(x), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(add(x, y), x + y)
    torch.testing.assert_close(softmax(x), torch.softmax(x, 1), rtol=1e-6, atol=1e-6)
    xt = x.t()                                    # a strided view, read in place
    torch.testing.assert_close(gelu(xt), _gelu_ref(xt), rtol=1e-6, atol=1e-6)
    w, b = torch.randn(100), torch.randn(100)
    y, mean, rstd = layernorm(x, w, b, 1e-5)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (100,), w, b, 1e-5),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean, x.mean(1))
    out = torch.zeros_like(x)
    gelu_into(x, out)
    torch.testing.assert_close(out, _gelu_ref(x), rtol=1e-6, atol=1e-6)


def test_schema_comes_from_the_signature():
    assert str(torch.ops.tilepy_test.gelu.default._schema) == "tilepy_test::gelu(Tensor x) -> Tensor"
    assert str(torch.ops.tilepy_test.gelu_backward.default._schema) == \
        "tilepy_test::gelu_backward(Tensor dy, Tensor x) -> Tensor"


@pytest.mark.parametrize("name", ["gelu", "gelu_backward", "add", "softmax", "layernorm",
                                  "gelu_into"])
def test_opcheck(name):
    x = torch.randn(24, 80, dtype=torch.float64)
    x32, v = x.float(), torch.randn(80)
    op, args = {"gelu": (gelu, (x,)), "gelu_backward": (gelu_backward, (torch.randn_like(x), x)),
                "add": (add, (x, torch.randn_like(x))), "softmax": (softmax, (x,)),
                "layernorm": (layernorm, (x32, v, v + 1, 1e-5)),
                "gelu_into": (gelu_into, (x, torch.empty_like(x)))}[name]
    result = torch.library.opcheck(op, args)
    assert set(result.values()) == {"SUCCESS"}, result


def test_gradcheck_gelu_float64():
    x = torch.randn(3, 70, dtype=torch.float64, requires_grad=True)     # ragged tiles
    assert torch.autograd.gradcheck(gelu, (x,))
    xt = torch.randn(70, 3, dtype=torch.float64).t().requires_grad_()   # strided input
    assert torch.autograd.gradcheck(gelu, (xt,))
    x, y = (torch.randn(3, 20, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda a, b: add(gelu(a), b), (x, y))


def test_compile_fullgraph_inductor_three_ops_forward_and_backward():
    """One compiled function, three tilepy ops and torch ops between them; fullgraph=True turns
    any graph break into an error. The backward graph runs gelu_backward."""
    def f(x, y, b):
        h = add(gelu(x), y)
        return softmax(h.detach() * 0.5 + b), h

    torch.manual_seed(1)
    x, y, b = torch.randn(32, 96), torch.randn(32, 96), torch.randn(96)
    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    x.requires_grad_(), y.requires_grad_()
    p, h = torch.compile(f, fullgraph=True, backend="inductor")(x, y, b)
    hr = _gelu_ref(xr) + yr
    torch.testing.assert_close(h, hr, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(p, torch.softmax(hr.detach() * 0.5 + b, 1), rtol=1e-5, atol=1e-6)
    h.square().sum().backward()
    hr.square().sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(y.grad, yr.grad, rtol=1e-5, atol=1e-5)


def test_fake_launch_specializes_the_kernel():
    """The default fake implementation traces the kernel for the fake tensors' metadata, so the
    real launch that follows finds the specialization in the kernel's cache."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    kernel = _t1.vector_add
    kernel.cache.clear()
    with FakeTensorMode():
        out = add(torch.empty(5, 40), torch.empty(5, 40))
    assert out.shape == (5, 40) and len(kernel.cache) == 1
    a, b = torch.randn(5, 40), torch.randn(5, 40)
    torch.testing.assert_close(add(a, b), a + b)
    assert len(kernel.cache) == 1                  # the fake trace's specialization was used


def test_kernel_errors_surface_while_tracing():
    """A kernel that does not type-check fails in the fake implementation, at the kernel's line,
    before anything runs."""
    @ct.kernel
    def bad(x, y):
        t = ct.load(x, index=(0,), shape=(16,))
        ct.store(y, index=(0,), tile=ct.reshape(t, (3,)))   # MARKER

    def body(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        tpt.launch(None, (1,), bad, (x, y))
        return y

    op = tpt.op("tilepy_test::bad", body)
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(), pytest.raises(ct.TileError, match="reshape") as e:
        op(torch.empty(16))
    assert_located(e.value, "MARKER", "(3,)", __file__)


def test_fake_launch_checks_the_call():
    """In the fake implementation, a launch is checked as tilepy.launch would check it."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def body(x: torch.Tensor) -> torch.Tensor:
        tpt.launch(None, (1,), _t6.gelu, (x,))              # a function, not a kernel
        return torch.empty_like(x)

    op = tpt.op("tilepy_test::not_a_kernel", body)
    with FakeTensorMode(), pytest.raises(ct.TileTypeError, match="expects a @tilepy.kernel"):
        op(torch.empty(4))

    def short(x: torch.Tensor) -> torch.Tensor:
        tpt.launch(None, (1,), _t1.vector_add, (x, x))     # 2 of its 4 arguments
        return torch.empty_like(x)

    with FakeTensorMode(), pytest.raises(ct.TileTypeError, match="takes 4 argument"):
        tpt.op("tilepy_test::arity", short)(torch.empty(4))


def test_launch_on_fake_tensors_outside_an_op_is_explained():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(64)
        with pytest.raises(ct.TileValueError, match="argument 'a': the tensor has no data"):
            tpt.launch(None, (1,), _t1.vector_add, (a, a, a, 64))


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "gelu"}, "must be 'namespace::name'"),
    ({"save": ("x",)}, "without backward="),
    ({"backward": lambda g: g, "save": ("y",)}, r"neither a parameter \(x\) nor 'out'"),
    ({"backward": 3}, "backward must be a function"),
])
def test_declaration_errors(kwargs, message):
    kwargs = {"name": f"tilepy_test::err_{abs(hash(message)) % 10**6}", **kwargs}
    with pytest.raises(ct.TileValueError, match=message):
        tpt.op(kwargs.pop("name"), _t6.gelu, **kwargs)


def test_backward_must_return_one_gradient_per_tensor_argument():
    def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
        return add(x, x) * alpha

    op = tpt.op("tilepy_test::scale_wrong", scale, backward=lambda g: (g, g))
    x = torch.randn(4, 8, requires_grad=True)
    with pytest.raises(ct.TileValueError, match=r"returned 2 gradient\(s\); it must return one "
                                                r"per tensor argument \(x\)"):
        op(x, 2.0).sum().backward()


def test_save_passes_outputs_and_non_tensor_arguments():
    """`save` may name the output and scalar arguments: d/dx of exp-like y = e^(alpha x) via
    y itself."""
    def expish(x: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.exp(alpha * x)

    op = tpt.op("tilepy_test::expish", expish, backward=lambda g, y, alpha: g * alpha * y,
                save=("out", "alpha"))
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: op(t, 1.5), (x,))
    assert math.isclose(float(op(torch.zeros(1), 2.0)), 1.0)


def test_saved_inputs_follow_torchs_rules():
    """`save` goes through ctx.save_for_backward (issue 33): an input changed in place after
    the forward is torch's error at backward, not a gradient of the new values; and what was
    saved is freed by the backward (a second backward is torch's error, and the saved tensor
    is gone once nothing else holds it)."""
    import gc
    import weakref

    x = torch.randn(4, 64, requires_grad=True)
    h = x * 1.0                                        # a saved input nobody else keeps
    y = gelu(h)
    with torch.no_grad():
        h.add_(10.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    h = x * 1.0
    saved = weakref.ref(h)
    y = gelu(h)
    del h
    y.sum().backward()
    gc.collect()
    assert saved() is None                             # freed by the backward, y still alive
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_torch_stays_optional():
    """`import tilepy` (and a launch) loads neither torch nor tilepy.torch; without torch,
    `import tilepy.torch` says what is missing."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys, numpy as np, tilepy as ct\n"
            "ct.cdiv(3, 2); ct.kernel\n"
            "assert 'torch' not in sys.modules and 'tilepy.torch' not in sys.modules\n"
            "sys.modules['torch'] = None\n"
            "try:\n"
            "    import tilepy.torch\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tilepy.torch needs torch (pip install torch)" in out.stdout


def test_fake_launch_checks_what_the_launch_compiler_compiles():
    """On CUDA tensors a kernel that launches through tileiras is checked as tileiras gets it (its
    Tile IR, traced and verified), not through the C++ emitter, which refuses a transpose whose
    scratch needs more shared memory than a GPU gives a block; an NVRTC kernel still meets the
    emitter's located refusal while tracing."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def flipped(compiler):
        @ct.kernel(compiler=compiler)
        def flip(a, out):
            t = ct.load(a, index=(0, 0), shape=(256, 256))
            ct.store(out, (0, 0), ct.transpose(t))   # SCRATCH

        def body(a: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(a)
            tpt.launch(None, (1,), flip, (a, out))
            return out
        return tpt.op(f"tilepy_test::flip_{compiler}", body)

    with FakeTensorMode():
        a = torch.empty(256, 256, device="cuda")
        assert flipped("tileiras")(a).shape == (256, 256)
        with pytest.raises(ct.TileUnsupportedFeatureError, match="of shared memory") as e:
            flipped("nvrtc")(a)
    assert_located(e.value, "SCRATCH", "ct.transpose", __file__)
