"""PyTorch's program set-up lines (issue 33), as a program with `import minitrain as torch` runs
them: the default dtype and device, Generator, inference_mode, backends, compile, amp's
GradScaler and autocast, accelerator and bfloat16. Each compared with torch where it has it,
and each refusal checked."""

import warnings

import numpy as np
import pytest

import minitrain
from minitrain.errors import DeviceError, DTypeError


@pytest.fixture(autouse=True)
def _restore_defaults():
    yield
    minitrain.set_default_dtype(minitrain.float32)
    minitrain.set_default_device("cpu")


def _creations(lib):
    """Every creation function that takes the default floating dtype, on library `lib`."""
    return {
        "tensor of floats": lambda: lib.tensor([1.0, 2.5]),
        "tensor of a float": lambda: lib.tensor(1.5),
        "zeros": lambda: lib.zeros(2, 3),
        "ones": lambda: lib.ones((2,)),
        "empty": lambda: lib.empty(2),
        "full of a float": lambda: lib.full((2,), 1.5),
        "randn": lambda: lib.randn(2),
        "rand": lambda: lib.rand(2),
        "arange with a float": lambda: lib.arange(0.0, 2.0, 0.5),
        "eye": lambda: lib.eye(2),
        "linspace": lambda: lib.linspace(0, 1, 3),
    }


@pytest.mark.parametrize("name", list(_creations(np)))
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_creation_follows_the_default_dtype_as_torch(torch, name, default):
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(getattr(torch, default))
        expected = str(_creations(torch)[name]().dtype).removeprefix("torch.")
    finally:
        torch.set_default_dtype(previous)
    minitrain.set_default_dtype(getattr(minitrain, default))
    assert minitrain.get_default_dtype() == np.dtype(default)
    assert _creations(minitrain)[name]().dtype == np.dtype(expected) == np.dtype(default)


def test_the_default_dtype_leaves_ints_and_given_dtypes_alone(torch):
    minitrain.set_default_dtype(minitrain.float64)
    assert minitrain.tensor([1, 2]).dtype == np.int64 == np.dtype(str(torch.tensor([1]).dtype)[6:])
    assert minitrain.arange(3).dtype == np.int64
    assert minitrain.zeros(2, dtype=minitrain.float32).dtype == np.float32
    assert minitrain.tensor(np.ones(2, np.float32)).dtype == np.float32  # arrays keep theirs


def test_the_default_dtype_starts_as_float32_as_torch(torch):
    assert minitrain.get_default_dtype() == np.float32
    assert str(torch.get_default_dtype()) == "torch.float32"


@pytest.mark.parametrize("dtype", [np.float16, np.int64, "int32", np.bool_])
def test_set_default_dtype_refuses_other_dtypes_naming_them(dtype):
    with pytest.raises(DTypeError, match="float32 and float64") as caught:
        minitrain.set_default_dtype(dtype)
    assert repr(dtype) in str(caught.value)
    assert minitrain.get_default_dtype() == np.float32


def test_set_default_dtype_refuses_bfloat16():
    with pytest.raises(DTypeError, match="bfloat16"):
        minitrain.set_default_dtype(minitrain.bfloat16)


def test_default_device_cpu_and_cuda():
    minitrain.set_default_device("cpu")
    assert minitrain.get_default_device() == minitrain.device("cpu")
    assert minitrain.zeros(2).device == minitrain.device("cpu")
    if minitrain.cuda.is_available():
        minitrain.set_default_device("cuda")
        assert minitrain.zeros(2).device.type == "cuda"
        assert minitrain.tensor([1.0]).device.type == "cuda"
        assert minitrain.randn(2).device.type == "cuda"
    else:
        with pytest.raises(DeviceError):
            minitrain.device("cuda") and minitrain.zeros(1, device="cuda")
        with pytest.raises(DeviceError):
            minitrain.set_default_device("cuda")
        assert minitrain.get_default_device() == minitrain.device("cpu")
    with pytest.raises(DeviceError):
        minitrain.set_default_device("tpu")


# -- Generator ---------------------------------------------------------------------------------


def _draws(generator):
    return [
        minitrain.randn(3, generator=generator).numpy(),
        minitrain.rand(2, 2, generator=generator).numpy(),
        minitrain.randint(0, 10, (5,), generator=generator).numpy(),
        minitrain.randperm(6, generator=generator).numpy(),
        minitrain.empty(4).normal_(generator=generator).numpy(),
        minitrain.empty(4).uniform_(2.0, 3.0, generator=generator).numpy(),
    ]


def test_generator_reproduces_its_stream_whatever_the_global_seed_as_torch(torch):
    minitrain.manual_seed(1)
    first = _draws(minitrain.Generator().manual_seed(7))
    minitrain.manual_seed(2)
    minitrain.randn(5)  # moves the global stream
    second = _draws(minitrain.Generator().manual_seed(7))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    # and torch's Generator has the same property (its numbers differ: they are torch's)
    torch.manual_seed(1)
    t1 = torch.randn(3, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(2)
    t2 = torch.randn(3, generator=torch.Generator().manual_seed(7))
    assert torch.equal(t1, t2)


def test_generator_draws_leave_the_global_stream_alone():
    minitrain.manual_seed(5)
    expected = minitrain.randn(4).numpy()
    minitrain.manual_seed(5)
    _draws(minitrain.Generator().manual_seed(0))
    np.testing.assert_array_equal(minitrain.randn(4).numpy(), expected)


def test_generator_seed_state_and_numpy_generator(torch):
    g = minitrain.Generator()
    assert g.manual_seed(11) is g
    assert g.initial_seed() == 11 == torch.Generator().manual_seed(11).initial_seed()
    state = g.get_state()
    a = minitrain.randn(4, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(minitrain.randn(4, generator=g).numpy(), a)
    g.manual_seed(11)
    assert isinstance(g.numpy_generator(), np.random.Generator)
    expected = np.random.default_rng(11).normal(size=4).astype(np.float32)
    np.testing.assert_array_equal(minitrain.randn(4, generator=g).numpy(), expected)
    new = g.seed()
    assert g.initial_seed() == new and isinstance(new, int)


def test_two_generators_are_independent():
    g, h = minitrain.Generator().manual_seed(3), minitrain.Generator().manual_seed(3)
    a = minitrain.randn(3, generator=g).numpy()
    minitrain.randn(100, generator=h)
    np.testing.assert_array_equal(
        minitrain.randn(3, generator=minitrain.Generator().manual_seed(3)).numpy(), a
    )
    assert not np.array_equal(minitrain.randn(3, generator=g).numpy(), a)


def test_generator_refusals():
    with pytest.raises(DTypeError, match="minitrain.Generator"):
        minitrain.randn(2, generator=np.random.default_rng(0))
    with pytest.raises(DTypeError, match="seed"):
        minitrain.Generator().manual_seed(1.5)
    with pytest.raises(DeviceError):
        minitrain.Generator(device="cuda")


# -- inference_mode ----------------------------------------------------------------------------


@pytest.mark.parametrize("lib_name", ["torch", "minitrain"])
def test_inference_mode_records_nothing_as_torch(request, lib_name):
    lib = request.getfixturevalue("torch") if lib_name == "torch" else minitrain
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        assert not lib.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and lib.is_grad_enabled()

    @lib.inference_mode()
    def called(v):
        return v * 2

    @lib.inference_mode
    def bare(v):
        return v * 2

    assert not called(x).requires_grad and not bare(x).requires_grad
    with lib.inference_mode(False):
        assert lib.is_grad_enabled()
        assert (x * 2).requires_grad
    with lib.no_grad(), lib.inference_mode(False):
        assert lib.is_grad_enabled()  # mode=False records again, as torch's

    @lib.inference_mode(False)
    def off(v):
        return v * 2

    with lib.no_grad():
        assert off(x).requires_grad


def test_inference_mode_refuses_a_non_bool():
    with pytest.raises(DTypeError, match="bool"):
        minitrain.inference_mode(3)


# -- backends, accelerator, compile ------------------------------------------------------------


def test_backends_switches_are_settable_and_answer_as_torch_on_this_machine(torch):
    cudnn = minitrain.backends.cudnn
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name)
    cudnn.benchmark, cudnn.deterministic = True, True
    assert cudnn.benchmark and cudnn.deterministic
    cudnn.benchmark, cudnn.deterministic = False, False
    assert minitrain.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    minitrain.backends.cuda.matmul.allow_tf32 = True
    assert minitrain.backends.cuda.matmul.allow_tf32
    minitrain.backends.cuda.matmul.allow_tf32 = False
    assert minitrain.backends.mps.is_available() is False
    assert minitrain.backends.mps.is_built() is False
    assert cudnn.is_available() == minitrain.cuda.is_available()


def test_accelerator(torch):
    assert minitrain.accelerator.is_available() == minitrain.cuda.is_available()
    if minitrain.cuda.is_available():
        assert minitrain.accelerator.current_accelerator().type == "cuda"
    else:
        assert minitrain.accelerator.current_accelerator() is None
        if not torch.cuda.is_available():
            assert torch.accelerator.current_accelerator() is None


def test_compile_takes_pytorchs_arguments_and_forms_without_a_warning():
    model = minitrain.nn.Linear(2, 1)

    def fn(v):
        return v + 1

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert minitrain.compile(model)._orig_mod is model
        assert minitrain.compile(model, mode="max-autotune", fullgraph=True)._orig_mod is model
        assert minitrain.compile(fn).__wrapped__ is fn
        assert minitrain.compile(backend="eager")(fn).__wrapped__ is fn
        assert minitrain.compile(fn, disable=True) is fn

        @minitrain.compile
        def bare(v):
            return v * 3

        @minitrain.compile(dynamic=True)
        def called(v):
            return v * 3

        assert [bare(2) for _ in range(3)] == [6] * 3 and called(2) == 6
        x = minitrain.tensor([1.0, 2.0])
        assert [called(x).tolist() for _ in range(3)] == [[3.0, 6.0]] * 3
    with pytest.raises(DTypeError, match="module or function"):
        minitrain.compile(3)


# -- bfloat16 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: minitrain.zeros(2, dtype=minitrain.bfloat16),
        lambda: minitrain.tensor([1.0], dtype=minitrain.bfloat16),
        lambda: minitrain.randn(2, dtype=minitrain.bfloat16),
        lambda: minitrain.ones(2).to(minitrain.bfloat16),
        lambda: minitrain.ones(2).to(dtype=minitrain.bfloat16),
    ],
)
def test_bfloat16_is_refused_never_float32(make):
    with pytest.raises(DTypeError, match="cannot compute in bfloat16"):
        make()


# -- amp ---------------------------------------------------------------------------------------


def _step_with(lib, scaler, weights):
    model = lib.nn.Linear(3, 1)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(weights[0]))
        model.bias.copy_(lib.tensor(weights[1]))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    loss = (model(x) ** 2).mean()
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss, scaled, model.weight.detach().numpy().copy()


def test_disabled_grad_scaler_passes_through_as_torch(torch):
    weights = ([[0.1, -0.2, 0.3]], [0.05])
    results = []
    for lib in (torch, minitrain):
        scaler = lib.amp.GradScaler("cpu", enabled=False)
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0
        loss, scaled, weight = _step_with(lib, scaler, weights)
        assert scaled is loss
        assert scaler.state_dict() == {}
        scaler.load_state_dict({})
        results.append(weight)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_cuda_grad_scaler_without_a_gpu_warns_and_passes_through():
    if minitrain.cuda.is_available():
        pytest.skip("a GPU is here: the scaler is enabled")
    with pytest.warns(UserWarning, match="disabling"):
        scaler = minitrain.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    loss = minitrain.tensor(2.0)
    assert scaler.scale(loss) is loss


def test_enabled_cpu_grad_scaler_scales_as_torch(torch):
    weights = ([[0.1, -0.2, 0.3]], [0.05])
    results = []
    for lib in (torch, minitrain):
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
        loss, scaled, weight = _step_with(lib, scaler, weights)
        np.testing.assert_allclose(float(scaled.item()), 8.0 * float(loss.item()), rtol=1e-6)
        assert scaler.get_scale() == 16.0  # grown after one clean step
        assert float(scaler.state_dict()["scale"]) == 16.0
        results.append(weight)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_grad_scaler_skips_a_step_with_an_inf_and_backs_off_as_torch(torch):
    for lib in (torch, minitrain):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        param = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        optimizer = lib.optim.SGD([param], lr=1.0)
        scaler.scale(lib.tensor(1.0))  # torch's scaler needs a scale() before step()
        param.grad = lib.tensor([float("inf"), 1.0])
        assert scaler.step(optimizer) is None
        scaler.update()
        np.testing.assert_array_equal(param.detach().numpy(), [1.0, 2.0])
        assert scaler.get_scale() == 2.0


def test_autocast_disabled_does_nothing_and_enabled_is_refused(torch):
    x = minitrain.ones(2, requires_grad=True)
    with minitrain.autocast("cpu", enabled=False):
        y = x * 2
    assert y.dtype == np.float32 and y.requires_grad
    with minitrain.amp.autocast(device_type="cuda", dtype=minitrain.float16, enabled=False):
        pass
    with minitrain.cuda.amp.autocast(enabled=False):
        pass
    for dtype in (minitrain.bfloat16, minitrain.float16, None):
        with pytest.raises(DTypeError, match="cannot autocast"):
            minitrain.autocast("cpu", dtype=dtype)
    with pytest.raises(DTypeError, match="float16"):
        minitrain.amp.autocast("cuda")
    with pytest.raises(DeviceError, match="device_type"):
        minitrain.autocast("tpu", enabled=False)
