"""The device API as PyTorch's: parsing devices and its errors, `minitrain.cuda`, `device=` on
every creation function, random numbers drawn on the device, moves between devices, numpy(),
item() and tolist() of a device tensor, and ops refusing inputs on two devices. The device cases
run on the strict stand-in for CuPy (tests/strict_device.py) and on a real GPU where one is at
hand (the `cuda_device` fixture); the cases without CuPy or without a GPU use fakes of them."""

from __future__ import annotations

import inspect
import sys
import types

import numpy as np
import pytest
import strict_device

import minitrain as mt
from minitrain import backend, creation
from minitrain.errors import ArgumentError, DeviceError, DTypeError


def _is_device_array(array) -> bool:
    return backend.cupy is not None and type(array) is backend.cupy.ndarray


def _missing_index() -> str:
    """A CUDA device one past the last GPU there is."""
    return f"cuda:{mt.cuda.device_count()}"


# Parsing: 'cpu', 'cuda', 'cuda:N', and what is not a device.


def test_device_specs_parse_as_pytorch_spells_them():
    assert mt.device("cpu") == backend.CPU and mt.device("cpu").index is None
    assert mt.device("cuda") == mt.device("cuda:0") == backend.Device("cuda", 0)
    assert mt.device("cuda:3").index == 3 and mt.device("cuda:3").type == "cuda"
    assert mt.device(mt.device("cuda:1")) == "cuda:1"
    assert str(mt.device("cuda:2")) == "cuda:2" and str(mt.device("cpu")) == "cpu"
    assert repr(mt.device("cuda:2")) == "device(type='cuda', index=2)"
    assert mt.device("cuda:0") != mt.device("cuda:1") and mt.device("cpu") != "cuda"


def test_a_device_is_unequal_to_what_is_not_a_device_rather_than_an_error():
    assert mt.device("cuda:0") != "tpu" and not mt.device("cpu") == "cpu:x"
    assert mt.device("cpu") != 0 and mt.device("cpu") not in ["gpu", None]


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "cuda:-1", "cuda:", "cpu:0", "CUDA", 0, None])
def test_what_is_not_a_device_is_a_device_error_naming_it(spec):
    with pytest.raises(DeviceError, match="expected 'cpu', 'cuda' or 'cuda:N'") as info:
        mt.device(spec)
    assert repr(spec) in str(info.value)


# Without CuPy, and with CuPy but no GPU: minitrain.cuda answers, and asking for 'cuda' says what
# is missing and what to install.


@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` fails, as if not installed
    monkeypatch.setattr(backend, "cupy", None)
    monkeypatch.setattr(backend, "cupyx", None)


def _fake_cupy(monkeypatch, count):
    """A CuPy that imports but finds `count` GPUs (an exception instead: no driver)."""

    def device_count():
        if isinstance(count, Exception):
            raise count
        return count

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=device_count))
    for name, module in {
        "cupy": cupy,
        "cupyx": types.ModuleType("cupyx"),
        "cupyx.scipy": types.ModuleType("cupyx.scipy"),
        "cupyx.scipy.special": types.ModuleType("cupyx.scipy.special"),
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(backend, "cupy", None)
    monkeypatch.setattr(backend, "cupyx", None)


def test_minitrain_cuda_answers_without_cupy(no_cupy):
    assert mt.cuda.is_available() is False
    assert mt.cuda.device_count() == 0
    for call, name in (
        (mt.cuda.current_device, "current_device"),
        (mt.cuda.synchronize, "synchronize"),
        (lambda: mt.cuda.synchronize(0), "synchronize"),
        (mt.cuda.init, "init"),
    ):
        with pytest.raises(DeviceError, match=f"cuda.{name}: .*pip install 'minitrain\\[cuda\\]'"):
            call()
    mt.cuda.manual_seed(3)  # nothing to seed: as in PyTorch, not an error
    mt.cuda.manual_seed_all(3)
    with pytest.raises(ArgumentError, match="cuda.manual_seed: seed must be non-negative"):
        mt.cuda.manual_seed(-1)
    with pytest.raises(DTypeError, match="cuda.manual_seed_all: seed must be an int"):
        mt.cuda.manual_seed_all(1.5)
    mt.manual_seed(3)  # the CPU's generator is seeded; the GPUs' once CuPy is there
    assert mt.cuda.is_initialized() is False  # init raised: nothing set up
    assert mt.device("cuda") == backend.Device("cuda", 0)  # naming a device needs no GPU


@pytest.mark.parametrize(
    "make",
    [
        lambda: mt.zeros(2, device="cuda"),
        lambda: mt.randn(2, device="cuda:0"),
        lambda: mt.tensor([1.0], device="cuda"),
        lambda: mt.arange(3, device=mt.device("cuda")),
        lambda: mt.ones(2).to("cuda"),
        lambda: mt.ones(2).cuda(),
        lambda: mt.nn.Linear(2, 2).to("cuda"),
        lambda: mt.load("never-read.npz", map_location="cuda"),
    ],
)
def test_asking_for_cuda_without_cupy_says_what_to_install(no_cupy, make):
    with pytest.raises(DeviceError, match="needs CuPy, which is not installed: pip install"):
        make()


def test_a_module_asked_onto_a_missing_gpu_is_left_as_it_was(no_cupy):
    model = mt.nn.Linear(3, 2)
    weight, before = model.weight, model.weight.array
    with pytest.raises(DeviceError):
        model.to("cuda")
    assert model.weight is weight and model.weight.array is before
    assert all(p.device == backend.CPU for p in model.parameters())


@pytest.mark.parametrize(
    "count, message",
    [
        (0, "CuPy is installed but finds no GPU"),
        (RuntimeError("cudaErrorInsufficientDriver"), "cannot reach a GPU .*InsufficientDriver.*"),
    ],
)
def test_cupy_without_a_gpu_is_a_device_error_saying_so(monkeypatch, count, message):
    _fake_cupy(monkeypatch, count)
    assert mt.cuda.is_available() is False and mt.cuda.device_count() == 0
    with pytest.raises(DeviceError, match=message):
        mt.zeros(2, device="cuda")
    with pytest.raises(DeviceError, match=f"cuda.current_device: .*{message}"):
        mt.cuda.current_device()
    assert backend.cupy is None  # nothing half-imported: the CPU path stays numpy's


# minitrain.cuda with a GPU.


def test_minitrain_cuda_with_a_gpu(cuda_device):
    mt.cuda.init()
    assert mt.cuda.is_initialized() is True
    assert mt.cuda.is_available() is True
    count = mt.cuda.device_count()
    assert count >= 1
    assert mt.cuda.current_device() == 0
    mt.cuda.synchronize()
    for device in (0, "cuda:0", cuda_device):
        mt.cuda.synchronize(device)
    with pytest.raises(DeviceError, match="cuda.synchronize: expected a CUDA device, got 'cpu'"):
        mt.cuda.synchronize("cpu")
    with pytest.raises(DeviceError, match=f"device 'cuda:{count}' does not exist: CuPy sees"):
        mt.cuda.synchronize(count)


def test_a_gpu_index_beyond_the_count_is_a_device_error_naming_it(cuda_device):
    missing = _missing_index()
    x = mt.ones(2, requires_grad=True)
    model = mt.nn.Linear(2, 2)
    weight = model.weight.array
    for make in (
        lambda: mt.zeros(2, device=missing),
        lambda: mt.randn(2, device=missing),
        lambda: mt.tensor([1.0], device=missing),
        lambda: x.to(missing),
        lambda: x.cuda(mt.cuda.device_count()),
        lambda: model.to(missing),
        lambda: mt.cuda.synchronize(missing),
    ):
        with pytest.raises(DeviceError, match=f"'{missing}' does not exist: CuPy sees"):
            make()
    assert x.grad is None and x.device == backend.CPU
    assert model.weight.array is weight


# device= on every creation function: the array is made on the device.

FACTORIES = {
    "tensor": lambda **kw: mt.tensor([[1.0, 2.0], [3.0, 4.0]], **kw),
    "as_tensor": lambda **kw: mt.as_tensor(np.arange(6.0).reshape(2, 3), **kw),
    "asarray": lambda **kw: mt.asarray([[1.0, 2.0]], **kw),
    "zeros": lambda **kw: mt.zeros(2, 3, **kw),
    "ones": lambda **kw: mt.ones((2, 3), dtype=np.float64, **kw),
    "empty": lambda **kw: mt.empty(2, 3, **kw),
    "full": lambda **kw: mt.full((2, 2), 1.5, **kw),
    "arange": lambda **kw: mt.arange(1, 7, 2, **kw),
    "linspace": lambda **kw: mt.linspace(0.0, 1.0, 5, **kw),
    "eye": lambda **kw: mt.eye(3, 2, dtype=np.int32, **kw),
    "randn": lambda **kw: mt.randn(3, 4, **kw),
    "rand": lambda **kw: mt.rand(3, 4, dtype=np.float64, **kw),
    "randint": lambda **kw: mt.randint(2, 9, (50,), **kw),
    "randperm": lambda **kw: mt.randperm(20, **kw),
    "zeros_like": lambda **kw: mt.zeros_like(mt.ones(2, 2), **kw),
    "ones_like": lambda **kw: mt.ones_like(mt.ones(2, dtype=np.int64), **kw),
    "empty_like": lambda **kw: mt.empty_like(mt.ones(2, 2), **kw),
    "full_like": lambda **kw: mt.full_like(mt.ones(2), 4.0, **kw),
    "randn_like": lambda **kw: mt.randn_like(mt.ones(3, 2), **kw),
    "rand_like": lambda **kw: mt.rand_like(mt.ones(3, 2), **kw),
    "sparse_coo_tensor": lambda **kw: mt.sparse_coo_tensor(
        mt.tensor([[0, 1, 1], [1, 0, 0]]), mt.tensor([1.0, 2.0, 3.0]), (2, 3), **kw
    ),
}
RANDOM = {"randn", "rand", "randint", "randperm", "randn_like", "rand_like"}
UNSET = {"empty", "empty_like"}  # values are whatever the memory held


def test_every_creation_function_takes_device_and_is_tested_here():
    public = {
        name
        for name, function in inspect.getmembers(creation, inspect.isfunction)
        if function.__module__ == creation.__name__ and not name.startswith("_")
    }
    assert public == set(FACTORIES)
    for name in public:
        assert "device" in inspect.signature(getattr(mt, name)).parameters, name


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_creation_functions_make_their_array_on_the_device(cuda_device, name):
    on_cpu = FACTORIES[name]()
    for device in ("cuda", "cuda:0", cuda_device):
        made = FACTORIES[name](device=device)
        assert _is_device_array(made.array), f"{name}: a {type(made.array).__name__}"
        assert made.device == cuda_device and made.is_cuda
        assert made.dtype == on_cpu.dtype and made.shape == on_cpu.shape
        if name not in RANDOM | UNSET:
            np.testing.assert_array_equal(made.cpu().numpy(), on_cpu.numpy())
    if "requires_grad" in inspect.signature(getattr(mt, name)).parameters:
        leaf = (
            FACTORIES[name](device="cuda", requires_grad=True) if made.dtype.kind == "f" else None
        )
        assert leaf is None or (leaf.requires_grad and leaf.is_leaf and leaf.is_cuda)


def test_like_functions_keep_the_device_of_their_tensor_unless_told(cuda_device):
    on_device = mt.ones(2, 3, device="cuda")
    assert mt.zeros_like(on_device).device == cuda_device
    assert mt.randn_like(on_device).device == cuda_device
    assert mt.full_like(on_device, 2.0, dtype=np.float64).dtype == np.float64
    assert mt.zeros_like(on_device, device="cpu").device == backend.CPU
    assert mt.ones_like(mt.ones(2), device="cuda").device == cuda_device


def test_random_values_fall_in_their_ranges_on_the_device(cuda_device):
    mt.manual_seed(0)
    uniform = mt.rand(2000, device="cuda").cpu().numpy()
    assert 0.0 <= uniform.min() and uniform.max() < 1.0 and abs(uniform.mean() - 0.5) < 0.03
    normal = mt.randn(2000, dtype=np.float64, device="cuda").cpu().numpy()
    assert normal.dtype == np.float64 and abs(normal.std() - 1.0) < 0.06
    assert mt.randn(4, dtype=np.float16, device="cuda").dtype == np.float16
    integers = mt.randint(-3, 4, (2000,), dtype=np.int32, device="cuda").cpu().numpy()
    assert integers.dtype == np.int32 and set(integers.tolist()) == set(range(-3, 4))
    assert sorted(mt.randperm(30, device="cuda").tolist()) == list(range(30))


# Random numbers for device tensors are drawn on the device, seeded by manual_seed as well.


def _cpu_draws() -> list:
    return mt.randn(5).tolist()


def test_device_draws_come_from_the_device_generator_not_the_cpus(cuda_device):
    mt.manual_seed(11)
    expected = _cpu_draws()
    mt.manual_seed(11)
    mt.randn(100, device="cuda")
    mt.rand(10, device="cuda")
    mt.randint(0, 5, (10,), device="cuda")
    mt.randperm(10, device="cuda")
    mt.nn.functional.dropout(mt.ones(50, device="cuda"), 0.5)
    mt.nn.init.normal_(mt.empty(4, 4, device="cuda"))
    mt.nn.init.kaiming_uniform_(mt.empty(4, 4, device="cuda"))
    assert _cpu_draws() == expected  # the CPU's generator did not move


@pytest.mark.parametrize("seed", [mt.manual_seed, mt.cuda.manual_seed, mt.cuda.manual_seed_all])
def test_seeding_makes_device_draws_repeat(cuda_device, seed):
    def draws():
        return (
            mt.randn(6, device="cuda").tolist(),
            mt.randint(0, 1000, (6,), device="cuda").tolist(),
            mt.nn.functional.dropout(mt.ones(64, device="cuda"), 0.5).tolist(),
            mt.nn.init.uniform_(mt.empty(6, device="cuda"), -1.0, 1.0).tolist(),
        )

    seed(5)
    first = draws()
    seed(5)
    assert draws() == first
    seed(6)
    assert draws() != first


def test_manual_seed_seeds_cupy_once_it_is_first_imported(monkeypatch):
    # manual_seed before CuPy is ever used: the seed waits, and CuPy's generators get it on import
    strict, strictx = strict_device.build()
    for name, module in {
        "cupy": strict,
        "cupyx": strictx,
        "cupyx.scipy": strictx.scipy,
        "cupyx.scipy.special": strictx.scipy.special,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(backend, "cupy", None)
    monkeypatch.setattr(backend, "cupyx", None)
    mt.manual_seed(21)
    drawn = mt.randn(5, device="cuda")
    assert backend.cupy is strict
    strict.random.seed(21)
    np.testing.assert_array_equal(
        drawn.array.get(), strict.random.standard_normal(5, dtype=np.float32).get()
    )


def test_device_dropout_and_init_draw_on_the_device(cuda_device):
    x = mt.ones(4000, device="cuda", requires_grad=True)
    dropped = mt.nn.functional.dropout(x, 0.25)
    assert _is_device_array(dropped.array)
    kept = dropped.cpu().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.04
    np.testing.assert_allclose(dropped.cpu().numpy()[kept], 1 / 0.75, rtol=1e-6)
    dropped.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), dropped.detach().cpu().numpy())
    weight = mt.nn.Parameter(mt.empty(64, 32, device="cuda"))
    memory = weight.array
    mt.nn.init.xavier_uniform_(weight)
    assert weight.array is memory  # filled in place
    bound = np.sqrt(6 / (64 + 32))
    values = weight.detach().cpu().numpy()
    assert np.abs(values).max() <= bound and values.std() > bound / 3
    host = np.random.default_rng(0)
    mt.nn.init.normal_(weight, generator=host)  # an explicit numpy generator draws on the host
    np.testing.assert_allclose(
        weight.detach().cpu().numpy(),
        np.random.default_rng(0).normal(0, 1, (64, 32)).astype(np.float32),
    )


def test_the_stand_ins_generator_is_cupys_own_and_seeds_as_cupys():
    strict, _ = strict_device.build()
    np.random.seed(0)
    expected = np.random.random_sample()
    np.random.seed(0)
    strict.random.seed(2**63 + 5)  # CuPy takes seeds up to 2**64 - 1
    first = strict.random.random(3, dtype=np.float32)
    assert type(first) is strict.ndarray and first.dtype == np.float32
    assert np.random.random_sample() == expected  # numpy's global generator untouched
    strict.random.seed(2**63 + 5)
    np.testing.assert_array_equal(strict.random.random(3, dtype=np.float32).get(), first.get())
    with pytest.raises(TypeError, match="only supports float32 and float64"):
        strict.random.standard_normal(3, dtype=np.float16)
    with pytest.raises(ValueError, match="between 0 and 2\\*\\*64 - 1"):
        strict.random.seed(2**64)


def test_the_stand_ins_asarray_returns_its_argument_as_cupys_does():
    # cupy.asarray / ascontiguousarray of a device array already of that dtype and layout is
    # the array itself, not a copy: code that writes to what asarray gave writes to its input
    strict, _ = strict_device.build()
    device_array = strict.asarray(np.arange(6.0).reshape(2, 3))
    assert strict.asarray(device_array) is device_array
    assert strict.ascontiguousarray(device_array) is device_array
    assert strict.asarray(device_array, dtype=np.float32) is not device_array
    assert strict.ascontiguousarray(device_array.T) is not device_array
    assert strict.array(device_array) is not device_array  # array copies by default
    host = np.zeros(3)
    assert type(strict.asarray(host)) is strict.ndarray  # from the host: a new device array


def test_seeds_beyond_cupys_range_seed_the_device_too(cuda_device):
    mt.manual_seed(2**64 + 9)  # numpy takes it; CuPy's generator gets it modulo 2**64
    first = mt.randn(4, device="cuda").tolist()
    mt.manual_seed(9)
    assert mt.randn(4, device="cuda").tolist() == first


# Moves: Tensor.to / cpu / cuda, recorded, gradients going back.


def test_to_moves_a_tensor_and_its_gradient_comes_back(cuda_device):
    x = mt.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to("cuda")
    assert _is_device_array(y.array) and y.is_cuda and not x.is_cuda
    assert y.requires_grad and y.grad_fn.name == "ToDeviceGrad"
    (y * mt.tensor([1.0, 2.0, 3.0], device="cuda")).sum().backward()
    assert x.grad.device == backend.CPU
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])

    w = mt.tensor([0.5, 1.5], requires_grad=True, device="cuda")
    (w.cpu() ** 2).sum().backward()
    assert w.grad.device == cuda_device
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [1.0, 3.0])


def test_to_cuda_and_cpu_spellings(cuda_device):
    x = mt.arange(4.0)
    for moved in (x.cuda(), x.cuda(0), x.cuda("cuda:0"), x.cuda(cuda_device), x.to(cuda_device)):
        assert moved.device == cuda_device
        np.testing.assert_array_equal(moved.cpu().numpy(), x.numpy())
    both = x.to("cuda", dtype=np.float64)
    assert both.device == cuda_device and both.dtype == np.float64
    keyword = x.to(device="cuda", dtype="float16")
    assert keyword.device == cuda_device and keyword.dtype == np.float16
    on_device = x.cuda()
    assert on_device.to("cuda") is on_device and on_device.cuda() is on_device
    assert x.cpu() is x and x.to("cpu") is x
    copied = on_device.cpu()
    assert type(copied.array) is np.ndarray and not np.shares_memory(copied.array, x.array)


def test_numpy_of_a_device_tensor_is_refused_with_pytorchs_advice(cuda_device):
    t = mt.tensor([[1.5, 2.0]], device="cuda")
    with pytest.raises(DeviceError, match=r"on cuda:0 to numpy; use Tensor.cpu\(\) to copy"):
        t.numpy()
    with pytest.raises(DeviceError, match=r"Tensor.cpu\(\)"):
        np.asarray(t)
    forced = t.numpy(force=True)
    assert type(forced) is np.ndarray
    np.testing.assert_array_equal(forced, [[1.5, 2.0]])
    assert type(t.cpu().numpy()) is np.ndarray


def test_item_tolist_and_conversions_copy_to_python(cuda_device):
    t = mt.tensor([[1.5, 2.0], [3.0, 4.0]], device="cuda")
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert type(t.tolist()[0][0]) is float
    total = t.sum()
    assert total.item() == 10.5 and type(total.item()) is float
    assert float(total) == 10.5 and int(total) == 10 and bool(total) is True
    assert type(mt.tensor([7], device="cuda").item()) is int
    assert "device='cuda:0'" in repr(t) and "1.5" in repr(t)


# Mixing devices in one op.


@pytest.mark.parametrize(
    "name, call",
    [
        ("add", lambda a, b: a + b),
        ("mul", lambda a, b: b * a),
        ("matmul", lambda a, b: a @ b.reshape(3, 1)),
        ("concat", lambda a, b: mt.cat([a, b.reshape(1, 3)])),
        ("where", lambda a, b: mt.where(a > 0, a, b)),
        ("cross_entropy", lambda a, b: mt.nn.functional.cross_entropy(a, b.long())),
    ],
)
def test_an_op_given_two_devices_is_a_device_error_naming_both(cuda_device, name, call):
    on_device = mt.tensor([[0.5, -1.0, 2.0]], requires_grad=True, device="cuda")
    on_cpu = mt.tensor([1.0, 2.0, 0.0])
    with mt.Tape() as tape:
        with pytest.raises(DeviceError) as info:
            call(on_device, on_cpu)
    message = str(info.value)
    assert name in message and "'cpu'" in message and "'cuda:0'" in message
    assert tape.nodes == []  # refused before anything was recorded
    assert on_device.grad is None


@pytest.mark.parametrize(
    "name, compare",
    [
        ("gt", lambda a, b: a > b),
        ("ge", lambda a, b: b >= a),
        ("eq", lambda a, b: a == b),
        ("ne", lambda a, b: a != b),
    ],
)
def test_a_comparison_given_two_devices_is_a_device_error_naming_both(cuda_device, name, compare):
    on_device = mt.tensor([0.5, -1.0, 2.0], device="cuda")
    on_cpu = mt.tensor([1.0, 2.0, 0.0])
    with pytest.raises(DeviceError) as info:
        compare(on_device, on_cpu)
    message = str(info.value)
    assert name in message and "'cpu'" in message and "'cuda:0'" in message
    assert (on_device > 0.0).device == cuda_device  # numbers are not another device


def test_a_zero_dim_cpu_tensor_is_refused_too_numbers_are_not(cuda_device):
    # PyTorch lets a 0-d CPU tensor join a CUDA one as a number; minitrain asks for a number
    # (or a tensor on the device): the rule has no exception to remember, and a Python or numpy
    # number costs nothing to pass
    x = mt.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(DeviceError, match=r"mul: inputs are on different devices: \['cpu'"):
        x * mt.tensor(2.0)
    for number in (2.0, 2, np.float32(2.0), mt.tensor(2.0).item()):
        product = x * number
        assert product.device == cuda_device
        np.testing.assert_array_equal(product.cpu().numpy(), [2.0, 4.0])
    assert (x * mt.tensor(2.0, device="cuda")).device == cuda_device
