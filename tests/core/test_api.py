"""The Python API (`platobench.evaluate`, `AlignmentProbe`, `AlignmentCallback`) on synthetic features seeded
under the exact cache keys `run` computes (wiring only, never results): `evaluate` equals the records on
disk and the command line, a probe scores a model's features exactly as its record does, from either side,
and the callback measures on schedule in eval mode."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from bench_fixtures import CHECK_N, CHECK_PAIR, TINY_SETTINGS, seed_features

import platobench
from platobench.cli import main
from platobench.data import get_dataset
from platobench.errors import UserError
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.leaderboard.boards import build_boards
from platobench.leaderboard.csv_table import CSV_COLUMNS, csv_text
from platobench.results import load_records
from platobench.zoo import load_zoo

TEXT, VISION = CHECK_PAIR.split(":")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A cache with both demo models' synthetic features (CHECK_N samples) -> (home, settings file)."""
    tmp = tmp_path_factory.mktemp("api")
    seed_features(tmp / "home", TEXT, CHECK_N, seed=1)
    seed_features(tmp / "home", VISION, CHECK_N, seed=2)
    settings = tmp / "tiny.yaml"
    settings.write_text(TINY_SETTINGS)
    return tmp / "home", settings


@pytest.fixture
def home(seeded: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PLATOBENCH_HOME", str(seeded[0]))
    return seeded[0]


def _layers(model: str) -> list[torch.Tensor]:
    """The seeded features of `model` as plain tensors, read from the cache."""
    spec = load_zoo().get(model)
    ds = get_dataset("openclipart-1024", limit=CHECK_N)
    key = feature_key(spec, ds, prompt="caption:0" if spec.modality == "text" else "image", device=torch.device("cpu"))
    entry = FeatureStore().get(key)
    assert entry is not None
    return [x.clone() for x in entry.cached_layers()]


def test_evaluate_equals_the_records_on_disk_and_the_cli(home: Path, seeded: tuple[Path, Path], tmp_path: Path) -> None:
    settings = seeded[1]
    results = platobench.evaluate(CHECK_PAIR, "tiny", settings_files=[settings], limit=CHECK_N, out=tmp_path / "r",
                                  progress=False)
    assert not results.failed and results.out == tmp_path / "r" and len(results.records) == 2
    on_disk = load_records(tmp_path / "r")
    assert sorted(r.model_dump_json() for r in results.records) == sorted(r.model_dump_json() for r in on_disk)
    table = results.to_pandas()
    assert list(table.columns) == list(CSV_COLUMNS) and len(table) == 2
    # the leaderboard's CSV of the same records, read back, is the same table (empty cells as absent values)
    # read as text and parsed by float(), which round-trips every repr (pandas' own parser may not)
    csv = pd.read_csv(io.StringIO(csv_text(build_boards(on_disk))), dtype=str, keep_default_na=False)
    for column in ("setting", "x", "y", "metric", "dataset_fingerprint"):
        assert list(table[column]) == list(csv[column])
    for column in ("score", "ci_lo", "ci_hi", "p_value", "layer_x", "layer_y", "rank"):
        parsed = [float(v) if v else float("nan") for v in csv[column]]
        np.testing.assert_array_equal(table[column].astype(float).to_numpy(), np.array(parsed))
    by_setting = {r.setting: r for r in on_disk}
    board = results.board("tiny-cka")
    assert list(board["score"]) == [by_setting["tiny-cka"].score]
    with pytest.raises(UserError, match="tiny-cka"):
        results.board("demo-mknn")
    # a second call reuses both records (inputs unchanged); the CLI reuses them too
    again = platobench.evaluate(CHECK_PAIR, ["tiny-mknn", "tiny-cka"], settings_files=[settings], limit=CHECK_N,
                                out=tmp_path / "r", progress=False)
    assert len(again.summary.up_to_date) == 2 and not again.summary.written
    assert main(["run", "--pairs", CHECK_PAIR, "--settings", "tiny", "--settings-file", str(settings), "--limit",
                 str(CHECK_N), "--out", str(tmp_path / "r"), "--json"]) == 0
    assert [r.model_dump_json() for r in load_records(tmp_path / "r")] == [r.model_dump_json() for r in on_disk]


def test_evaluate_without_out_keeps_nothing(home: Path, seeded: tuple[Path, Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    results = platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N, progress=False)
    assert results.out is None and len(results.records) == 1 and list(scratch.iterdir()) == []
    kept = platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N,
                               out=tmp_path / "kept", progress=False)
    assert kept.records[0].score == results.records[0].score


def test_evaluate_refuses_bad_specs_before_running(home: Path, seeded: tuple[Path, Path]) -> None:
    with pytest.raises(UserError, match="unknown setting"):
        platobench.evaluate(CHECK_PAIR, "no-such-setting", settings_files=[seeded[1]])
    with pytest.raises(UserError, match="list of strings"):
        platobench.evaluate(CHECK_PAIR, 3, settings_files=[seeded[1]])  # type: ignore[arg-type]


@pytest.fixture
def record(home: Path, seeded: tuple[Path, Path], tmp_path: Path):  # noqa: ANN201
    """The tiny-mknn record of CHECK_PAIR, written by `evaluate`."""
    (r,) = platobench.evaluate(CHECK_PAIR, "tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N,
                               out=tmp_path / "r", progress=False).records
    return r


@pytest.mark.parametrize("setting", ["tiny-mknn", "tiny-cka"])
def test_probe_scores_features_as_the_record_does(home: Path, seeded: tuple[Path, Path], tmp_path: Path,
                                                  setting: str) -> None:
    (rec,) = platobench.evaluate(CHECK_PAIR, setting, settings_files=[seeded[1]], limit=CHECK_N,
                                 out=tmp_path / "r", progress=False).records
    probe = platobench.AlignmentProbe(VISION, setting=setting, settings_files=[seeded[1]], limit=CHECK_N)
    assert probe.input == "caption:0" and len(probe) == CHECK_N
    assert probe.ids == get_dataset("openclipart-1024", limit=CHECK_N).ids
    got = probe.score(_layers(TEXT))
    assert got.score == rec.score and float(got) == rec.score  # bit for bit
    assert got.layers == rec.layers and got.n == CHECK_N and got.chance == rec.chance
    np.testing.assert_allclose(got.grid, np.array(rec.grid, dtype=float), atol=5e-9)
    # the text model as the reference, the vision model probed through its images: the same record
    reverse = platobench.AlignmentProbe(TEXT, setting=setting, settings_files=[seeded[1]], limit=CHECK_N)
    assert reverse.input == "image"
    back = reverse.score(torch.stack(_layers(VISION)))  # [L, N, D]
    assert back.score == rec.score and back.layers == rec.layers[::-1]
    np.testing.assert_array_equal(back.grid, got.grid.T)


def test_probe_scores_an_encode_fn_in_batches(home: Path, seeded: tuple[Path, Path], record) -> None:  # noqa: ANN001
    layers = _layers(TEXT)
    probe = platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N,
                                      batch_size=5)
    row_of = {c: i for i, c in enumerate(probe.inputs())}
    calls: list[int] = []

    def encode(batch: list[str]) -> list[torch.Tensor]:
        assert torch.is_grad_enabled() is False
        calls.append(len(batch))
        rows = [row_of[c] for c in batch]
        return [x[rows].double().numpy() for x in layers]  # numpy float64: converted to float32 as the cache stores

    got = probe.score(encode)
    assert calls == [5, 5, 5, 5, 4] and got.score == record.score and got.layers == record.layers


def test_probe_refuses_bad_input(home: Path, seeded: tuple[Path, Path]) -> None:
    files = [seeded[1]]
    probe = platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=files, limit=CHECK_N)
    with pytest.raises(UserError, match=r"expected \[24, D\]"):
        probe.score(torch.randn(CHECK_N - 1, 8))
    with pytest.raises(UserError, match="NaN"):
        probe.score(torch.full((CHECK_N, 8), float("nan")))
    with pytest.raises(UserError, match="constant"):
        probe.score(torch.ones(CHECK_N, 8))
    with pytest.raises(UserError, match="features must be"):
        probe.score("not features")
    with pytest.raises(UserError, match="unknown setting"):
        platobench.AlignmentProbe(VISION, setting="nope", settings_files=files)
    with pytest.raises(UserError, match="caption:<i>"):
        platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=files, limit=CHECK_N, input="text")
    with pytest.raises(UserError, match="caption index 7"):
        platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=files, limit=CHECK_N, input="caption:7")


def test_probe_refuses_a_zeroshot_setting(home: Path) -> None:
    with pytest.raises(UserError, match="paired setting"):
        platobench.AlignmentProbe(VISION, setting="zs-tuxpaint")


def test_probe_refuses_a_heldout_selection(home: Path) -> None:
    with pytest.raises(UserError, match="selects its layers held out"):
        platobench.AlignmentProbe(VISION, setting="demo-mknn-ho")


def test_callback_measures_every_n_steps_in_eval_mode(home: Path, seeded: tuple[Path, Path], record) -> None:  # noqa: ANN001
    from transformers import TrainerControl, TrainerState

    layers = _layers(TEXT)
    probe = platobench.AlignmentProbe(VISION, setting="tiny-mknn", settings_files=[seeded[1]], limit=CHECK_N)
    row_of = {c: i for i, c in enumerate(probe.inputs())}
    model = torch.nn.Dropout(0.5)
    modes: list[bool] = []

    def encode(m: torch.nn.Module, batch: list[str]) -> list[torch.Tensor]:
        modes.append(m.training)
        return [x[[row_of[c] for c in batch]] for x in layers]

    logged: list[dict[str, float]] = []
    callback = platobench.AlignmentCallback(probe, encode, every=3, log=logged.append)
    state, control = TrainerState(), TrainerControl()
    model.train()
    callback.on_train_begin(None, state, control, model=model)
    for step in range(1, 8):
        state.global_step = step
        callback.on_step_end(None, state, control, model=model)
    assert [h["step"] for h in callback.history] == [0, 3, 6]
    assert all(h["score"] == record.score for h in callback.history)
    assert modes and not any(modes) and model.training  # measured in eval mode, training mode restored
    assert [e["step"] for e in state.log_history] == [0, 3, 6]
    assert logged == [{"alignment/tiny-mknn": record.score}] * 3
    with pytest.raises(UserError, match="positive"):
        platobench.AlignmentCallback(probe, encode, every=0)


def test_the_package_version_is_the_one_pyproject_declares():
    import tomllib

    import platobench.api

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert platobench.__version__ == pyproject["project"]["version"]
    assert platobench.api.__version__ == platobench.__version__
