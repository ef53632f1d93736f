"""The Python API's guards (issue 55, items 9, 10 and 12): the probe checks what an encode function returns
as `loader: python` encoders are checked (width 0, a width that changes between batches) and runs it
under the encoder guard (`sys.exit()` fails the call, not the process); the callback logs a measurement
that has no value as NaN and goes on, and restores each module's own train/eval mode; `evaluate` takes a
single path or name where it takes lists. Synthetic features seeded under `run`'s cache keys."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch
from bench_fixtures import CHECK_N, CHECK_PAIR, TINY_SETTINGS, seed_features

import platobench
from platobench.errors import UserError

TEXT, VISION = CHECK_PAIR.split(":")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A cache with both demo models' synthetic features (CHECK_N samples) -> (home, settings file)."""
    tmp = tmp_path_factory.mktemp("guards")
    seed_features(tmp / "home", TEXT, CHECK_N, seed=1)
    seed_features(tmp / "home", VISION, CHECK_N, seed=2)
    settings = tmp / "tiny.yaml"
    settings.write_text(TINY_SETTINGS)
    return tmp / "home", settings


@pytest.fixture
def probe(seeded: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> platobench.AlignmentProbe:
    """A probe of the vision model under tiny-mknn, read in batches of 10 (three batches)."""
    monkeypatch.setenv("PLATOBENCH_HOME", str(seeded[0]))
    return platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N,
                                     batch_size=10)


def _features(batch: list[str], width: int = 8) -> torch.Tensor:
    """Deterministic features [len(batch), width] that vary across the samples."""
    rows = [torch.Generator().manual_seed(sum(map(ord, text))) for text in batch]
    return torch.stack([torch.randn(width, generator=g) for g in rows])


# --- item 9: the probe's checks and guard ---------------------------------------------------------------------


def test_probe_refuses_a_layer_of_width_zero(probe: platobench.AlignmentProbe) -> None:
    with pytest.raises(UserError, match=r"layer 1 has width 0"):
        probe.score([torch.randn(CHECK_N, 8), torch.zeros(CHECK_N, 0)])
    with pytest.raises(UserError, match=r"layer 0 has width 0"):
        probe.score(lambda batch: torch.zeros(len(batch), 0))


def test_probe_refuses_an_encode_fn_whose_width_changes(probe: platobench.AlignmentProbe) -> None:
    calls = []

    def shrinking(batch: list[str]) -> list[torch.Tensor]:
        calls.append(len(batch))
        return [_features(batch), _features(batch, 8 - len(calls))]

    with pytest.raises(UserError, match=r"layer 1 has width 6 in batch 2 but 7 in batch 1"):
        probe.score(shrinking)
    assert calls == [10, 10]  # refused at the batch that changed, not after the last one


def test_probe_refuses_features_that_are_not_real_numbers(probe: platobench.AlignmentProbe) -> None:
    with pytest.raises(UserError, match="dtype torch.bool"):
        probe.score(torch.ones(CHECK_N, 8, dtype=torch.bool))
    with pytest.raises(UserError, match="meta device"):
        probe.score(torch.empty(CHECK_N, 8, device="meta"))
    with pytest.raises(UserError, match="real numbers"):
        probe.score([["a"] * 8] * CHECK_N)


def test_sys_exit_in_an_encode_fn_fails_the_call_not_the_process(probe: platobench.AlignmentProbe) -> None:
    from platobench.encoders.guard import EncoderExitError

    def leaving(batch: list[str]) -> torch.Tensor:
        sys.exit(3)

    with pytest.raises(EncoderExitError, match=r"encode of batch 1 \(10 inputs\) called sys.exit\(3\)"):
        probe.score(leaving)
    assert probe.score(_features).n == CHECK_N  # the probe still works


# --- item 10: the callback ------------------------------------------------------------------------------------


def _train(callback: platobench.AlignmentCallback, model: torch.nn.Module, steps: int) -> list[dict]:
    """The callback's hooks as `Trainer.train` calls them for `steps` steps -> the trainer's log history."""
    from transformers import TrainerControl, TrainerState

    state, control = TrainerState(), TrainerControl()
    callback.on_train_begin(None, state, control, model=model)
    for step in range(1, steps + 1):
        state.global_step = step
        callback.on_step_end(None, state, control, model=model)
    return state.log_history


def test_callback_logs_a_nan_measurement_and_goes_on(probe: platobench.AlignmentProbe) -> None:
    model = torch.nn.Linear(2, 2)

    def encode(m: torch.nn.Module, batch: list[str]) -> torch.Tensor:
        x = _features(batch)
        return x * float("nan") if len(callback.history) == 1 else x  # step 2's measurement: NaN features

    logged: list[dict[str, float]] = []
    callback = platobench.AlignmentCallback(probe, encode, every=2, log=logged.append)
    with pytest.warns(UserWarning, match=r"alignment/tiny-mknn at step 2 is NaN: .*NaN or infinite"):
        history = _train(callback, model, 4)
    scores = [h["score"] for h in callback.history]
    assert [h["step"] for h in callback.history] == [0, 2, 4]
    assert math.isnan(scores[1]) and not math.isnan(scores[0]) and scores[0] == scores[2]
    assert callback.history[1]["layers"] is None
    assert [e["step"] for e in history] == [0, 2, 4] and math.isnan(history[1]["alignment/tiny-mknn"])
    assert len(logged) == 3 and math.isnan(logged[1]["alignment/tiny-mknn"])


def test_callback_still_stops_on_a_broken_encode(probe: platobench.AlignmentProbe) -> None:
    callback = platobench.AlignmentCallback(probe, lambda m, batch: torch.randn(len(batch) + 1, 4), every=1)
    with pytest.raises(UserError, match="expected"):
        _train(callback, torch.nn.Linear(2, 2), 1)


def test_callback_restores_each_modules_own_mode(probe: platobench.AlignmentProbe) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.1))
    model.train()
    model[1].eval()  # the user froze the BatchNorm's statistics
    seen: list[list[bool]] = []

    def encode(m: torch.nn.Module, batch: list[str]) -> torch.Tensor:
        seen.append([x.training for x in m.modules()])
        return m(_features(batch))

    _train(platobench.AlignmentCallback(probe, encode, every=1), model, 1)
    assert seen and not any(any(modes) for modes in seen)  # measured in eval mode
    assert [x.training for x in model.modules()] == [True, True, False, True]


# --- item 12: evaluate's arguments ------------------------------------------------------------------------------


def test_evaluate_takes_one_path_or_name_where_it_takes_lists(seeded: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(seeded[0]))
    settings = seeded[1]
    for given in (str(settings), settings):
        results = platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=given, limit=CHECK_N,
                                      progress=False, trust_code="demo/minilm-l6", trust_remote_code="demo/*")
        assert not results.failed and len(results.records) == 1
    with pytest.raises(UserError, match="settings_files must be a path or a list of paths, got int"):
        platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=3)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="trust_code must be a model name or a list of them, got bytes"):
        platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=[settings], trust_code=b"x")  # type: ignore[arg-type]


def test_evaluate_reads_one_datasets_file_given_as_a_string(seeded: tuple[Path, Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(seeded[0]))
    with pytest.raises(UserError, match=r"missing\.yaml: datasets file not found"):  # read as one path, not 'm', 'i', ...
        platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=[seeded[1]],
                            datasets_files=str(tmp_path / "missing.yaml"))


def test_probe_takes_one_settings_file_given_as_a_string(seeded: tuple[Path, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATOBENCH_HOME", str(seeded[0]))
    probe = platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=str(seeded[1]), limit=CHECK_N)
    assert len(probe) == CHECK_N
