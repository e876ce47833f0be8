"""`python -m minitrain program.py`: a PyTorch program run on minitrain unchanged, its `import
torch` (and every `torch.<path>`) answered by minitrain (compat/torch_alias.py). Each case runs
in a fresh interpreter, so the hook never reaches this process's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.backends.cudnn as cudnn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import default_collate

cudnn.benchmark = True
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
data = TensorDataset(torch.randn(32, 3), torch.randint(0, 2, (32,)))
for epoch in range(3):
    for x, y in DataLoader(data, batch_size=8, shuffle=True):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print(torch.__name__, nn.__name__, F.__name__, sys.argv[1:], f"{loss:.4f}")
"""


def _run(*args, cwd, env_extra=None):
    env = {**os.environ, "PYTHONPATH": ROOT, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_pytorch_program_runs_on_minitrain_with_its_argv(tmp_path):
    program = tmp_path / "train.py"
    program.write_text(PROGRAM)
    done = _run("-m", "minitrain", str(program), "--epochs", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names, argv, loss = done.stdout.split("[")[0].split(), done.stdout, done.stdout.split()[-1]
    assert names == ["minitrain", "minitrain.nn", "minitrain.nn.functional"]
    assert "['--epochs', '3']" in argv and 0.0 <= float(loss) < 1.0


def test_a_module_runs_with_dash_m_and_its_directory_on_the_path(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    (tmp_path / "job.py").write_text("import torch, helper\nprint(torch.__name__, helper.VALUE)\n")
    done = _run("-m", "minitrain", "-m", "job", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["minitrain", "7"]


def test_a_path_minitrain_lacks_fails_naming_both(tmp_path):
    program = tmp_path / "missing.py"
    program.write_text("import torch.distributions.beta\n")
    done = _run("-m", "minitrain", str(program), cwd=tmp_path)
    assert done.returncode == 1
    assert "No module named 'torch.distributions': minitrain has no 'minitrain.distributions'" in (
        done.stderr
    )


def test_usage_without_a_program(tmp_path):
    done = _run("-m", "minitrain", cwd=tmp_path)
    assert done.returncode == 2 and "usage: python -m minitrain program.py" in done.stderr


def test_install_and_uninstall_in_a_process(tmp_path):
    script = textwrap.dedent(
        """
        from minitrain.compat import torch_alias
        torch_alias.install(); torch_alias.install()  # twice: one hook
        import torch.optim.lr_scheduler as schedulers
        import minitrain.optim.lr_scheduler
        assert schedulers is minitrain.optim.lr_scheduler and torch_alias.installed()
        torch_alias.uninstall()
        import sys
        assert not torch_alias.installed() and "torch" not in sys.modules
        print("ok")
        """
    )
    done = _run("-c", script, cwd=tmp_path, env_extra={"PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_install_refuses_where_pytorch_is_imported_already(tmp_path):
    pytest.importorskip("torch")
    script = "import torch\nfrom minitrain.compat import torch_alias\ntorch_alias.install()\n"
    done = _run("-c", script, cwd=tmp_path)
    assert done.returncode == 1 and "PyTorch is imported already" in done.stderr


SPAWNING = """
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Values(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.tensor(float(i))


def child(queue):
    import torch
    queue.put(torch.__name__)


if __name__ == "__main__":
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=child, args=(queue,))
    process.start()
    print(queue.get(timeout=120))
    process.join()
    loader = DataLoader(Values(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    print([batch.tolist() for batch in loader])
"""


def test_processes_started_by_spawn_import_minitrain_as_torch_too(tmp_path):
    # a spawned child imports the program again before it runs anything: the alias must be
    # there first, or it would load the real torch (or fail where there is none)
    program = tmp_path / "spawning.py"
    program.write_text(SPAWNING)
    done = _run("-m", "minitrain", str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["minitrain", "[[0.0, 1.0]]"]
