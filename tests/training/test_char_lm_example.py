"""The character language model example (examples/train_char_lm.py) at its tiny size: its
validation loss falls below the unigram entropy of the text, and its checkpoint reloads into a
fresh model that gives the same loss."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import minitrain as mt

_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples")
sys.path.insert(0, _EXAMPLES)
try:
    import train_char_lm
finally:
    sys.path.remove(_EXAMPLES)


@pytest.mark.parametrize("arch", ["gpt", "lstm"])
def test_tiny_char_lm_beats_the_unigram_entropy_and_its_checkpoint_reloads(tmp_path, arch):
    config = train_char_lm.Config(**{**train_char_lm.TINY, "arch": arch})
    result = train_char_lm.main(config, out=str(tmp_path))

    entropy, history = result["unigram_entropy"], result["history"]
    assert 3.0 < entropy < 3.5  # English characters: about 4.7 bits
    assert history[0]["val"] > entropy  # it starts near log(vocabulary size) = log(103) ...
    assert result["val_loss"] < entropy - 0.3  # ... and learns what follows what
    assert [row["step"] for row in history] == [0, 50, 100, 150]
    assert (tmp_path / "curves.png").stat().st_size > 0

    state = mt.load(result["checkpoint"])
    assert set(state) == {"model", "optimizer", "config", "vocabulary"}
    assert train_char_lm.Config(**state["config"]) == config
    restored = train_char_lm.build_model(len(state["vocabulary"]), config)
    restored.load_state_dict(state["model"])  # strict
    assert restored.head.weight is restored.token_embedding.weight  # still tied
    train_text, val_text = train_char_lm.load_texts()
    vocabulary = train_char_lm.Vocabulary(train_text + val_text)
    assert vocabulary.chars == state["vocabulary"]
    val_loss = train_char_lm.evaluate(restored, vocabulary.encode(val_text), config)
    assert val_loss == pytest.approx(result["val_loss"], rel=1e-6)

    for sample in result["samples"]:
        assert sample.startswith("The ") and len(sample) == len("The ") + 300


@pytest.mark.parametrize("arch", ["gpt", "lstm"])
def test_compiled_training_gives_the_eager_loss_curve(tmp_path, arch):
    sizes = {**train_char_lm.TINY, "arch": arch, "steps": 20, "eval_every": 10}
    eager = train_char_lm.main(train_char_lm.Config(**sizes), out=str(tmp_path / "eager"))
    compiled = train_char_lm.main(
        train_char_lm.Config(**sizes, compile=True), out=str(tmp_path / "compiled")
    )
    assert len(compiled["history"]) == len(eager["history"]) == 3
    for ours, theirs in zip(compiled["history"], eager["history"], strict=True):
        assert ours["train"] == pytest.approx(theirs["train"], rel=1e-5)
        assert ours["val"] == pytest.approx(theirs["val"], rel=1e-5)


def test_learning_rate_warms_up_then_decays_by_a_cosine():
    config = train_char_lm.Config(steps=100, warmup=10, min_lr_ratio=0.1)
    factors = [train_char_lm.learning_rate_factor(step, config) for step in range(101)]
    np.testing.assert_allclose(factors[:10], np.arange(1, 11) / 10)
    assert factors[10] == 1.0 and factors[100] == pytest.approx(0.1)
    assert factors[55] == pytest.approx(0.55)  # half way down the cosine
    assert np.all(np.diff(factors[10:]) <= 0)


def test_command_line_sizes_override_the_tiny_preset():
    config, out = train_char_lm.parse_arguments(["--tiny", "--steps", "7", "--out", "somewhere"])
    assert config == train_char_lm.Config(**{**train_char_lm.TINY, "steps": 7})
    assert out == "somewhere"
    assert train_char_lm.parse_arguments([])[0] == train_char_lm.Config()
