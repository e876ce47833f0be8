"""What PyTorch programs import and call at their edges (issue 33): the set-up module paths
(`import torch.backends.cudnn as cudnn`), `torch.onnx` imported and not used, `torch.normal`,
PyTorch's `size=` keyword of the creation functions, and torch.multiprocessing with modules in
shared memory (Hogwild)."""

from __future__ import annotations

import importlib
import multiprocessing

import numpy as np
import pytest

import minitrain
import minitrain.multiprocessing as mp
from minitrain.errors import ArgumentError, DTypeError, ShapeError


@pytest.mark.parametrize(
    "path", ["backends", "backends.cudnn", "backends.cuda", "backends.mps", "amp", "cuda.amp",
             "accelerator", "onnx", "multiprocessing"]
)  # fmt: skip
def test_set_up_paths_import_as_modules(path):
    imported = importlib.import_module(f"minitrain.{path}")
    owner, _, name = f"minitrain.{path}".rpartition(".")
    assert imported is getattr(importlib.import_module(owner), name)


def test_cudnn_imported_as_a_module_is_the_attribute_programs_set():
    import minitrain.backends.cudnn as cudnn

    before = cudnn.benchmark
    try:
        cudnn.benchmark = True
        assert minitrain.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = before


def test_onnx_export_says_it_is_not_built_and_writes_nothing(tmp_path):
    import minitrain.onnx

    target = tmp_path / "model.onnx"
    with pytest.raises(NotImplementedError, match="minitrain.onnx.export: exporting to ONNX"):
        minitrain.onnx.export(minitrain.nn.Linear(2, 2), (minitrain.ones(1, 2),), str(target))
    assert not target.exists() and minitrain.onnx.is_in_onnx_export() is False


# torch.normal


def test_normal_of_tensors_broadcasts_them_and_keeps_their_dtype():
    minitrain.manual_seed(0)
    mean = minitrain.zeros(4000, 1, dtype=np.float64) + 3.0
    std = minitrain.tensor([0.5, 2.0], dtype=np.float64)
    drawn = minitrain.normal(mean, std)
    assert drawn.shape == (4000, 2) and drawn.dtype == np.float64 and not drawn.requires_grad
    values = drawn.numpy()
    # within 5 standard errors: a seeded draw that a wrong mean or std would fail by far
    standard_error = np.array([0.5, 2.0]) / np.sqrt(4000)
    assert (np.abs(values.mean(axis=0) - 3.0) < 5 * standard_error).all()
    np.testing.assert_allclose(values.std(axis=0), [0.5, 2.0], rtol=0.06)
    number_std = minitrain.normal(2 * minitrain.ones(4, 2), 1)  # a tutorial's call
    assert number_std.shape == (4, 2) and number_std.dtype == np.float32
    assert minitrain.normal(0.0, minitrain.ones(3)).shape == (3,)


def test_normal_of_numbers_needs_a_size_and_follows_the_generator():
    generator = minitrain.Generator().manual_seed(5)
    first = minitrain.normal(1.0, 2.0, (3, 4), generator=generator)
    generator.manual_seed(5)
    again = minitrain.normal(1.0, 2.0, size=(3, 4), generator=generator)
    assert first.shape == (3, 4) and first.dtype == np.float32
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert minitrain.normal(0.0, 1.0, (2,), dtype=np.float64).dtype == np.float64
    with pytest.raises(ArgumentError, match="normal: with a number for both mean and std"):
        minitrain.normal(0.0, 1.0)
    with pytest.raises(ArgumentError, match=r"normal: expects std >= 0.0"):
        minitrain.normal(minitrain.zeros(2), -1.0)
    with pytest.raises(DTypeError, match="normal: mean and std must be floating point"):
        minitrain.normal(minitrain.tensor([1, 2]), minitrain.tensor([1, 1]))


def test_normal_matches_torchs_shapes_and_dtypes(torch):
    cases = [
        (lambda lib: lib.normal(2 * lib.ones(4, 2), 1)),
        (lambda lib: lib.normal(lib.zeros(3, 1), lib.ones(1, 5))),
        (lambda lib: lib.normal(0.0, 1.0, (2, 3))),
        (lambda lib: lib.normal(mean=lib.arange(1.0, 11.0), std=lib.arange(1, 0, -0.1))),
    ]
    for call in cases:
        ours, theirs = call(minitrain), call(torch)
        assert ours.shape == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype)[6:]
    with pytest.raises(RuntimeError):
        torch.normal(torch.zeros(2), -1.0)
    with pytest.raises(RuntimeError):  # ours is a RuntimeError too
        minitrain.normal(minitrain.zeros(2), -1.0)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_takes_pytorchs_size_keyword(name, torch):
    make = getattr(minitrain, name)
    assert make(size=(3, 4)).shape == make(3, 4).shape == (3, 4)
    assert make(size=[2]).shape == (2,)
    with pytest.raises(ArgumentError, match=f"{name}: give the shape positionally or as size="):
        make(2, size=(3,))
    assert make(size=(3, 4)).shape == tuple(getattr(torch, name)(size=(3, 4)).shape)


# torch.multiprocessing and shared memory


def _add_rank(rank, weight):
    with minitrain.no_grad():
        weight.data.add_(float(rank + 1))


def _fail(rank):
    raise SystemExit(3 if rank == 1 else 0)


def test_a_module_in_shared_memory_sees_its_forked_workers_updates():
    model = minitrain.nn.Linear(3, 2)
    assert not model.weight.is_shared()
    before = model.weight.numpy().copy()
    assert model.share_memory() is model
    assert model.weight.is_shared() and model.bias.is_shared()
    np.testing.assert_array_equal(model.weight.numpy(), before)  # the values moved, unchanged
    context = mp.get_context("fork")
    workers = [context.Process(target=_add_rank, args=(rank, model.weight)) for rank in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0]
    np.testing.assert_array_equal(model.weight.numpy(), before + 1.0 + 2.0)
    assert model.weight.requires_grad and model.weight.share_memory_() is model.weight


def test_memory_not_shared_stays_the_parents_own():
    weight = minitrain.zeros(3)
    worker = mp.get_context("fork").Process(target=_add_rank, args=(0, weight))
    worker.start()
    worker.join()
    np.testing.assert_array_equal(weight.numpy(), [0.0, 0.0, 0.0])


def test_spawn_runs_each_rank_and_names_the_one_that_failed():
    weight = minitrain.zeros(2).share_memory_()
    assert mp.spawn(_add_rank, args=(weight,), nprocs=2, start_method="fork") is None
    np.testing.assert_array_equal(weight.numpy(), [3.0, 3.0])
    with pytest.raises(mp.ProcessExitedException, match="process 1 of 2 exited with code 3"):
        mp.spawn(_fail, nprocs=2, start_method="fork")
    with pytest.raises(RuntimeError):  # PyTorch's class is a RuntimeError too
        mp.spawn(_fail, nprocs=2, start_method="fork")
    assert multiprocessing.active_children() == []


def test_multiprocessing_re_exports_pythons_names():
    for name in ("Process", "Queue", "Pool", "get_context", "set_start_method", "cpu_count"):
        assert getattr(mp, name) is getattr(multiprocessing, name)


def test_pinning_is_a_no_op_on_the_cpu():
    x = minitrain.ones(2)
    assert x.pin_memory() is x and x.is_pinned() is False


# Sparse tensors held dense, mT, torch.serialization, torch.nn.modules paths


def test_sparse_coo_tensor_is_the_dense_tensor_of_its_entries():
    indices = minitrain.tensor([[0, 0, 1, 2], [1, 1, 0, 2]])
    made = minitrain.sparse_coo_tensor(indices, minitrain.tensor([1.0, 2.0, 3.0, 4.0]), (3, 3))
    expected = np.zeros((3, 3), np.float32)
    expected[0, 1], expected[1, 0], expected[2, 2] = 3.0, 3.0, 4.0  # a repeated index sums
    np.testing.assert_array_equal(made.numpy(), expected)
    inferred = minitrain.sparse_coo_tensor(indices, minitrain.ones(4), dtype=np.int64)
    assert inferred.shape == (3, 3) and inferred.dtype == np.int64
    assert made.to_sparse() is made and made.to_dense() is made and made.coalesce() is made
    np.testing.assert_array_equal(
        minitrain.spmm(made, minitrain.ones(3, 2)).numpy(), expected @ np.ones((3, 2))
    )
    with pytest.raises(ShapeError, match="within size"):
        minitrain.sparse_coo_tensor(indices, minitrain.ones(4), (2, 2))
    with pytest.raises(ShapeError, match="one value per index column"):
        minitrain.sparse_coo_tensor(indices, minitrain.ones(3), (3, 3))
    with pytest.raises(DTypeError, match="indices must be an integer"):
        minitrain.sparse_coo_tensor(minitrain.ones(2, 2), minitrain.ones(2), (3, 3))


def test_sparse_coo_tensor_matches_torchs_dense_form(torch):
    indices = [[0, 0, 1, 2], [1, 1, 0, 2]]
    values = [1.0, 2.0, 3.0, 4.0]
    ours = minitrain.sparse_coo_tensor(minitrain.tensor(indices), minitrain.tensor(values), (3, 4))
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), (3, 4))
    np.testing.assert_array_equal(ours.numpy(), theirs.to_dense().numpy())
    np.testing.assert_array_equal(
        minitrain.spmm(ours.T, minitrain.ones(3, 2)).numpy(),
        torch.spmm(theirs.t(), torch.ones(3, 2)).numpy(),
    )


def test_mT_swaps_the_last_two_dims_as_torch(torch):  # noqa: N802
    values = np.arange(24.0).reshape(2, 3, 4)
    x = minitrain.tensor(values, requires_grad=True)
    assert x.mT.shape == (2, 4, 3)
    np.testing.assert_array_equal(x.mT.numpy(), torch.tensor(values).mT.numpy())
    (x.mT * minitrain.tensor(np.arange(24.0).reshape(2, 4, 3))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(24.0).reshape(2, 4, 3).swapaxes(1, 2))
    with pytest.raises(ShapeError, match="mT: takes a tensor of at least 2 dims"):
        _ = minitrain.ones(3).mT


def test_serialization_keeps_pytorchs_safe_globals_list(tmp_path):
    from minitrain import serialization

    assert serialization.load is minitrain.load and serialization.save is minitrain.save
    serialization.clear_safe_globals()
    with serialization.safe_globals([dict, minitrain.nn.Linear]):
        assert serialization.get_safe_globals() == [dict, minitrain.nn.Linear]
        minitrain.save({"w": minitrain.ones(2)}, tmp_path / "w.pt")
        assert minitrain.load(tmp_path / "w.pt")["w"].tolist() == [1.0, 1.0]
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([dict])
    assert serialization.get_safe_globals() == [dict]
    serialization.clear_safe_globals()
    with pytest.raises(DTypeError, match="add_safe_globals: expected a list"):
        serialization.add_safe_globals(dict)
    with pytest.raises(minitrain.errors.CheckpointError, match="state_dict"):  # still refused
        minitrain.save(minitrain.nn.Linear(2, 2), tmp_path / "model.pt")


def test_classes_at_their_torch_nn_modules_paths():
    from minitrain.nn.modules import activation, linear

    assert activation.MultiheadAttention is minitrain.nn.MultiheadAttention
    out_proj = linear.NonDynamicallyQuantizableLinear(4, 2)
    assert isinstance(out_proj, minitrain.nn.Linear) and out_proj(minitrain.ones(3, 4)).shape == (
        3,
        2,
    )


def test_a_refused_normal_leaves_the_generator_where_it_was():
    minitrain.manual_seed(0)
    with pytest.raises(ArgumentError, match="std >= 0.0"):
        minitrain.normal(0.0, -1.0, size=(3,))
    with pytest.raises(ShapeError, match=r"normal: mean of shape \(3,\) and std of shape \(2,\)"):
        minitrain.normal(minitrain.zeros(3), minitrain.ones(2))
    after_refusals = minitrain.randn(4).numpy()
    minitrain.manual_seed(0)
    np.testing.assert_array_equal(after_refusals, minitrain.randn(4).numpy())
    assert minitrain.normal(minitrain.zeros(2), 1.0).dtype == np.float32  # a number takes theirs


def test_size_is_torchs_size_and_the_Tensor_class_reads_it_as_sizes(torch):  # noqa: N802
    x = minitrain.ones(2, 3)
    assert isinstance(x.size(), minitrain.Size) and x.size() == (2, 3)
    assert x.size().numel() == 6 and minitrain.Size([4, 5]).numel() == 20
    made = minitrain.Tensor(x.size())  # the legacy idiom torch.Tensor(x.size()).normal_()
    assert made.shape == (2, 3) and made.dtype == np.float32
    assert minitrain.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a plain tuple is values
    assert tuple(torch.Tensor(torch.Size([2, 3])).shape) == made.shape
    assert torch.Tensor((2, 3)).tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(minitrain.tensor(1.0))
