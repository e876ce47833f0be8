"""The conv and pooling family on a CUDA device (the strict stand-in for CuPy, and a real GPU
where one is at hand) beyond the registry samples: the layers, a batch in several chunks in
every column layout, the public kernels, and arguments on two devices refused."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, ops
from minitrain.errors import DeviceError

chunking = importlib.import_module("minitrain.ops.convolution.chunking")
columns_module = importlib.import_module("minitrain.ops.convolution.columns")

CPU = mt.device("cpu")


def _close(on_device, on_cpu, rtol=1e-7, atol=1e-10):
    """A device array (or Tensor) holds what the CPU's does, and lives on the device."""
    array = on_device.array if isinstance(on_device, mt.Tensor) else on_device
    assert type(array) is backend.cupy.ndarray
    want = on_cpu.array if isinstance(on_cpu, mt.Tensor) else on_cpu
    assert array.dtype == want.dtype and array.shape == want.shape
    np.testing.assert_allclose(backend.to_device(array, CPU), want, rtol=rtol, atol=atol)


def _step(layer, x_value, upstream, device):
    """The layer's output and the gradients of x and of each parameter on `device`."""
    x = mt.tensor(x_value, requires_grad=True, device=device)
    y = layer(x)
    y.backward(mt.tensor(upstream, device=device))
    return [y, x.grad] + [p.grad for p in layer.parameters()]


@pytest.mark.parametrize(
    "make, x_shape",
    [
        (lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), (3, 4, 11)),
        (lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2), (2, 4, 7, 6)),
        (lambda: nn.Conv2d(3, 5, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
         (2, 3, 9, 8)),
        (lambda: nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False), (2, 4, 5, 5)),  # depthwise
        (lambda: nn.Conv3d(2, 4, 2, stride=(1, 2, 1), padding=1, dilation=(2, 1, 1)),
         (2, 2, 5, 6, 4)),
        (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         (2, 4, 4, 5)),
    ],
    ids=["conv1d", "conv2d_same_groups", "conv2d_strided_dilated", "depthwise", "conv3d",
         "conv_transpose2d"],
)  # fmt: skip
def test_a_conv_layer_steps_on_the_device_as_on_the_cpu(cuda_device, make, x_shape):
    mt.manual_seed(3)
    layer = make().double()
    rng = np.random.default_rng(5)
    x_value = rng.standard_normal(x_shape)
    y_shape = layer(mt.tensor(x_value)).shape
    upstream = rng.standard_normal(y_shape)
    on_cpu = _step(layer, x_value, upstream, "cpu")
    layer.zero_grad()
    layer.to("cuda")
    assert all(p.device == cuda_device for p in layer.parameters())
    on_device = _step(layer, x_value, upstream, "cuda")
    for got, want in zip(on_device, on_cpu, strict=True):
        assert got.device == cuda_device
        _close(got, want)


# (wide, split): the compact layout, the wide one, and the wide one with the taps of the
# canonical dims before `split` taken by shifting (minitrain.ops.convolution.columns.Columns)
LAYOUTS = [(False, 0), (True, 0), (True, 2), (True, 3)]


def _conv_step(op, values, attrs, device):
    x, w, b = (mt.tensor(v, requires_grad=True, device=device) for v in values)
    y = op(x, w, b, **attrs)
    upstream = np.cos(np.arange(y.array.size)).reshape(y.shape)
    y.backward(mt.tensor(upstream, device=device))
    return y, x.grad, w.grad, b.grad


@pytest.mark.parametrize("layout", LAYOUTS, ids=["compact", "wide", "split_rows", "split_all"])
@pytest.mark.parametrize(
    "op, x_shape, w_shape, attrs",
    [
        (ops.conv, (3, 4, 6, 7), (6, 2, 3, 3), {"padding": ((1, 2), (0, 1)), "groups": 2}),
        (ops.conv, (3, 2, 4, 5, 3), (3, 2, 2, 3, 2), {"padding": 1, "dilation": (2, 1, 1)}),
        (ops.conv_transpose, (3, 4, 4, 3), (4, 3, 3, 2),
         {"padding": ((1, 0), (0, 1)), "groups": 2, "output_padding": (0, 1),
          "dilation": (1, 2)}),
    ],
    ids=["conv2d", "conv3d", "conv_transpose2d"],
)  # fmt: skip
def test_a_batch_in_chunks_in_every_layout_on_the_device(
    cuda_device, monkeypatch, op, x_shape, w_shape, attrs, layout
):
    # one image per chunk: each chunk's columns are views into the thread's buffers, read and
    # written through the layout's strided views
    rng = np.random.default_rng(7)
    filters = w_shape[1] * attrs.get("groups", 1) if op is ops.conv_transpose else w_shape[0]
    values = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    values.append(rng.standard_normal(filters))
    monkeypatch.setattr(
        chunking,
        "_layout",
        lambda window, spatial, *_: columns_module.Columns.of(window, spatial, *layout),
    )
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)
    monkeypatch.setattr(chunking, "_DEVICE_CHUNK_BYTES", 1)  # a GPU's bound, else one chunk
    on_cpu = _conv_step(op, values, attrs, "cpu")
    for got, want in zip(_conv_step(op, values, attrs, "cuda"), on_cpu, strict=True):
        _close(got, want)


def test_float32_stays_float32_on_the_device(cuda_device):
    rng = np.random.default_rng(2)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 6, 6), (4, 3, 3, 3), 4)]
    on_cpu = _conv_step(ops.conv, values, {"padding": 1}, "cpu")
    on_device = _conv_step(ops.conv, values, {"padding": 1}, "cuda")
    for got, want in zip(on_device, on_cpu, strict=True):
        assert got.dtype == np.float32
        _close(got, want, rtol=1e-5, atol=1e-5)


def _to_device(device, *arrays):
    return [backend.to_device(a, device) for a in arrays]


@pytest.mark.parametrize("need", [(True, True, True), (True, False, False), (False, True, True)])
def test_conv_grad_on_device_arrays_gives_device_arrays(cuda_device, need):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 4, 7, 5)), rng.standard_normal((6, 2, 3, 2))
    attrs = {"strides": (2, 1), "pads": (1, 1, 0, 1), "dilations": (1, 2), "group": 2}
    dy = rng.standard_normal((2, 6, 3, 5))
    want = ops.conv_grad(dy, x, w, need=need, **attrs)
    got = ops.conv_grad(*_to_device(cuda_device, dy, x, w), need=need, **attrs)
    for g, w_ in zip(got, want, strict=True):
        if w_ is None:
            assert g is None
        else:
            _close(g, w_)


def test_im2col_and_col2im_on_the_device(cuda_device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 6, 5))
    attrs = {"strides": (2, 1), "pads": (1, 0, 1, 2), "dilations": (1, 2)}
    col = ops.im2col(x, (3, 2), **attrs)
    (x_d,) = _to_device(cuda_device, x)
    _close(ops.im2col(x_d, (3, 2), **attrs), col)
    back = ops.col2im(col, x.shape, (3, 2), **attrs)
    (col_d,) = _to_device(cuda_device, col)
    _close(ops.col2im(col_d, x.shape, (3, 2), **attrs), back)


def test_pooling_gradient_kernels_on_the_device(cuda_device):
    rng = np.random.default_rng(8)
    x_shape = (2, 3, 7, 6)
    x = mt.tensor(rng.standard_normal(x_shape))
    y, indices = nn.functional.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    dy = rng.standard_normal(y.shape)
    want = ops.max_pool_grad(dy, indices.array, x_shape)
    _close(ops.max_pool_grad(*_to_device(cuda_device, dy, indices.array), x_shape), want)
    attrs = {"strides": 2, "pads": 1, "ceil_mode": True, "count_include_pad": True}
    dy = rng.standard_normal(ops.avg_pool(x, 3, 2, 1, ceil_mode=True).shape)
    (dy_d,) = _to_device(cuda_device, dy)
    want = ops.avg_pool_grad(dy, x_shape, 3, **attrs)
    _close(ops.avg_pool_grad(dy_d, x_shape, 3, **attrs), want)
    dy = rng.standard_normal((2, 3, 4, 5))
    (dy_d,) = _to_device(cuda_device, dy)
    _close(ops.adaptive_avg_pool_grad(dy_d, x_shape), ops.adaptive_avg_pool_grad(dy, x_shape))


def test_kernel_arguments_on_two_devices_are_refused(cuda_device):
    rng = np.random.default_rng(1)
    x, w, dy = (rng.standard_normal(s) for s in ((2, 3, 5, 5), (4, 3, 3, 3), (2, 4, 3, 3)))
    (x_d,) = _to_device(cuda_device, x)
    with pytest.raises(DeviceError, match=r"conv_grad: .*dY on cpu, X on cuda:0, W on cpu"):
        ops.conv_grad(dy, x_d, w)
    indices = np.zeros((2, 3, 2, 2), np.int64)
    (dy_d,) = _to_device(cuda_device, np.ones((2, 3, 2, 2)))
    with pytest.raises(DeviceError, match=r"max_pool_grad: .*dY on cuda:0, indices on cpu"):
        ops.max_pool_grad(dy_d, indices, (2, 3, 4, 4))
    with pytest.raises(DeviceError, match=r"max_unpool: .*input on cuda:0, indices on cpu"):
        ops.max_unpool(mt.tensor(dy_d), indices, 2)


def test_a_list_of_indices_goes_to_dys_device(cuda_device):
    dy = np.arange(4.0).reshape(1, 1, 2, 2)
    indices = [[[[0, 3], [8, 15]]]]
    want = ops.max_pool_grad(dy, indices, (1, 1, 4, 4))
    _close(ops.max_pool_grad(*_to_device(cuda_device, dy), indices, (1, 1, 4, 4)), want)
