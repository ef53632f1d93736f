"""Silent wrong results of the metric API and `platobench score`: degenerate (constant) features,
float under/overflow, layer order of safetensors files, and unreadable feature files."""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from platobench.bench.metric_commands import load_feature_file
from platobench.cli import main
from platobench.errors import UserError
from platobench.metrics import cca, kernel, knn, layer_grid, list_metrics, preprocess, procrustes, score
from platobench.metrics.validation import DegenerateFeaturesError, UndefinedScoreError

METRICS = [m.id for m in list_metrics()]
MODES = ["none", "l2", "prh", "prh_exact"]


def feats(n: int, d: int, seed: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(dtype)


X, Y = feats(40, 8, 0), feats(40, 8, 1)
Y[:, :4] += 2 * X[:, :4]  # a shared signal: scores well above chance


# --- degenerate features ---------------------------------------------------------------------------

@pytest.mark.parametrize("metric", METRICS)
def test_constant_features_are_refused_naming_the_side(metric):
    ones = np.ones((40, 8), np.float32)
    with pytest.raises(DegenerateFeaturesError, match=r"^X "):
        score(metric, ones, ones)
    with pytest.raises(DegenerateFeaturesError, match=r"^Y "):
        score(metric, X, ones * 3)
    with pytest.raises(DegenerateFeaturesError, match=r"Xs\[1\]"):
        layer_grid(metric, [X, ones], [Y])
    assert issubclass(DegenerateFeaturesError, UserError)


@pytest.mark.parametrize("mode", ["prh", "prh_exact", "l2"])
def test_all_zero_rows_are_refused_after_preprocessing(mode):
    with pytest.raises(DegenerateFeaturesError, match="X "):
        score("mutual_knn", np.zeros((40, 8), np.float32), Y, preprocess=mode)


def test_rows_identical_after_l2_are_refused_naming_the_mode():
    """Positive multiples of one vector differ as given but coincide once rows are l2-normalised."""
    scaled = np.arange(1, 41, dtype=np.float32)[:, None] * np.ones((1, 8), np.float32)
    assert score("cka", scaled, Y) == pytest.approx(score("cka", scaled, Y))  # fine without l2
    with pytest.raises(DegenerateFeaturesError, match="preprocess 'l2'"):
        score("mutual_knn", scaled, Y, preprocess="l2")


def test_the_degenerate_check_looks_past_the_first_rows():
    """The first rows settle most layers; identical ones make it read the column ranges: a single later
    row that differs keeps the layer, rows that differ by rounding only do not (prepared or not)."""
    from platobench.metrics.api import check_varies

    row = feats(1, 8, 4)
    x = np.repeat(row, 40, axis=0)
    x[30] += 1
    check_varies(torch.from_numpy(x), "X")
    near = np.repeat(row, 40, axis=0) * (1 + np.float32(1e-7) * (np.arange(40) % 2)[:, None].astype(np.float32))
    with pytest.raises(DegenerateFeaturesError, match="X is degenerate"):
        check_varies(torch.from_numpy(near), "X")
    with pytest.raises(DegenerateFeaturesError, match="preprocess 'l2'"):
        score("mutual_knn", near * np.arange(1, 41, dtype=np.float32)[:, None], Y, preprocess="l2")


def test_cknna_with_a_non_positive_self_hsic_is_undefined():
    x = np.array([[-3, -3], [0, 0], [-1, -1], [-1, -1], [-1, -1], [-2, -2]], np.float64)
    y = np.array([[-1, 0], [0, 0], [0, 0], [0, 0], [0, 1], [0, -1]], np.float64)
    with pytest.raises(UndefinedScoreError, match="cknna"):
        score("cknna", x, y, k=2)
    assert issubclass(UndefinedScoreError, UserError)


# --- scale: power-of-two rescaling is exact ---------------------------------------------------------

@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("exponent", [-100, 100])
def test_float32_scores_do_not_depend_on_the_scale(metric, exponent):
    """X * 2^-100: products underflow in float32 (all neighbours used to tie); X * 2^100 overflowed."""
    factor = np.float32(2.0**exponent)
    for mode in MODES:
        assert score(metric, X * factor, Y, preprocess=mode) == score(metric, X, Y, preprocess=mode), mode


def test_float32_times_1e30_smaller_keeps_the_mutual_knn_score():
    """1e-30 is not a power of two: rounding may move a near tie, nothing more."""
    assert score("mutual_knn", X * np.float32(1e-30), Y) == pytest.approx(score("mutual_knn", X, Y), abs=0.01)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("exponent", [-1000, 1000])
def test_float64_beyond_float32_range_keeps_its_score(metric, exponent):
    x64, y64 = X.astype(np.float64), Y.astype(np.float64)
    for mode in MODES:
        assert score(metric, x64 * 2.0**exponent, y64, preprocess=mode) == score(metric, x64, y64, preprocess=mode)
    assert score(metric, x64 * 1e300 if exponent > 0 else x64 * 1e-300, y64) == pytest.approx(
        score(metric, x64, y64), abs=1e-9)


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("mode", MODES)
def test_rescaling_changes_no_bit_of_a_normal_score(metric, mode, monkeypatch):
    """Committed records must not move: the power-of-two rescaling is exact in binary floating point."""
    xs = [torch.from_numpy(X), torch.from_numpy(feats(40, 5, 2) * 30)]
    ys = [torch.from_numpy(Y).double(), torch.from_numpy(feats(40, 12, 3) / 7)]
    rescaled = layer_grid(metric, xs, ys, preprocess=mode)
    for module in (knn, kernel, procrustes, cca):
        monkeypatch.setattr(module, "pow2_unit", _identity)
    monkeypatch.setattr(preprocess, "pow2_exponent", lambda peak: 0)  # the l2 / prh layers' powers of two
    assert torch.equal(rescaled, layer_grid(metric, xs, ys, preprocess=mode))


# --- safetensors layer order ------------------------------------------------------------------------

def _layers(n_layers: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(30, 6, generator=g) for _ in range(n_layers)]


@pytest.mark.parametrize("pattern", ["layer.{}", "layers.{}", "{}", "h.{}"])
def test_safetensors_layers_are_read_in_numeric_order(tmp_path, pattern):
    layers = _layers(12, 0)
    path = tmp_path / "x.safetensors"
    save_file({pattern.format(i): t for i, t in enumerate(layers)}, str(path))
    loaded = load_feature_file(path)
    assert all(torch.equal(a, b) for a, b in zip(loaded, layers, strict=True))


def test_score_command_finds_the_copied_layer(tmp_path, capsys):
    layers = _layers(12, 0)
    save_file({f"layer.{i}": t for i, t in enumerate(layers)}, str(tmp_path / "x.safetensors"))
    save_file({"layer.0": layers[2].clone()}, str(tmp_path / "y.safetensors"))
    assert main(["score", "--metric", "cka", "--x", str(tmp_path / "x.safetensors"),
                 "--y", str(tmp_path / "y.safetensors")]) == 0
    assert "cka = 1.000000 (layers 2, 0; best" in capsys.readouterr().out


@pytest.mark.parametrize("keys", [
    ["layer.0", "h.1"],          # two patterns
    ["layer.0", "layer.x"],      # no index
    ["layer.1", "layer.01"],     # repeated index
    ["layer.0.mlp", "layer.1.mlp"],
])
def test_safetensors_keys_that_do_not_give_an_order_are_refused(tmp_path, keys):
    path = tmp_path / "x.safetensors"
    save_file({k: torch.randn(5, 3) for k in keys}, str(path))
    with pytest.raises(UserError, match=f"x.safetensors.*{keys[1]}"):
        load_feature_file(path)


# --- unreadable feature files -----------------------------------------------------------------------

def _write_bad(path, kind: str) -> None:
    if kind == "object":
        np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    elif kind == "text":
        path.write_text("1 2 3\n4 5 6\n")
    elif kind == "npz":
        np.savez(path.with_suffix(".tmp"), a=np.ones((4, 3)))
        path.with_suffix(".tmp.npz").rename(path)
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"layer.0": np.ones((4, 3))}))
    elif kind == "empty":
        np.save(path, np.zeros((0, 3), np.float32))
    elif kind == "empty_layers":
        np.save(path, np.zeros((0, 4, 3), np.float32))
    elif kind == "1d":
        np.save(path, np.ones(5, np.float32))
    elif kind == "4d":
        np.save(path, np.ones((2, 3, 4, 5), np.float32))
    elif kind == "strings":
        np.save(path, np.array([["a", "b"], ["c", "d"]]))
    elif kind == "complex":
        np.save(path, np.ones((4, 3), np.complex64))
    elif kind == "truncated":
        np.save(path, np.ones((40, 30), np.float32))
        path.write_bytes(path.read_bytes()[:200])
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("a.txt", "hello")
    elif kind == "st_3d":
        save_file({"layer.0": torch.ones(2, 3, 4)}, str(path))
    elif kind == "st_rows":
        save_file({"layer.0": torch.ones(4, 3), "layer.1": torch.ones(5, 3)}, str(path))
    elif kind == "st_empty":
        save_file({}, str(path))


@pytest.mark.parametrize("name,kind", [
    ("a.npy", "object"), ("a.npy", "text"), ("a.npy", "npz"), ("a.npy", "pickle"), ("a.npy", "empty"),
    ("a.npy", "empty_layers"), ("a.npy", "1d"), ("a.npy", "4d"), ("a.npy", "strings"), ("a.npy", "complex"),
    ("a.npy", "truncated"), ("a.npy", "zip"), ("a.safetensors", "pickle"), ("a.safetensors", "text"),
    ("a.safetensors", "st_3d"), ("a.safetensors", "st_rows"), ("a.safetensors", "st_empty"),
    ("missing.npy", None), ("a.txt", "text"),
])
def test_unreadable_feature_files_raise_a_user_error_naming_the_file(tmp_path, name, kind):
    path = tmp_path / name
    if kind is not None:
        _write_bad(path, kind)
    with pytest.raises(UserError, match=name.replace(".", r"\.")):
        load_feature_file(path)


def test_big_endian_npy_is_read(tmp_path):
    path = tmp_path / "be.npy"
    np.save(path, X.astype(">f4"))
    (layer,) = load_feature_file(path)
    assert torch.equal(layer, torch.from_numpy(X))


def test_score_command_reports_a_bad_file_as_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.npy"
    bad.write_text("not an array")
    good = tmp_path / "good.npy"
    np.save(good, X)
    assert main(["score", "--metric", "mutual_knn", "--x", str(bad), "--y", str(good)]) == 2
    err = capsys.readouterr().err
    assert "bad.npy" in err and err.count("\n") == 1


def test_score_command_leaves_out_a_constant_layer_as_run_does(tmp_path, capsys):
    """A layer constant across the samples (a ViT's CLS token before the first block) is left out and named,
    as `run` leaves it out of a record's grid; a fixed selection still names the models' own layers, and
    naming the constant one, or a file of constant layers only, is an error."""
    x, y, flat = tmp_path / "x.npy", tmp_path / "y.npy", tmp_path / "flat.npy"
    np.save(x, np.stack([np.ones_like(X), X, X[::-1].copy()]))
    np.save(y, Y)
    np.save(flat, np.stack([np.ones_like(X), np.zeros_like(X)]))
    assert main(["score", "--metric", "mutual_knn", "--x", str(x), "--y", str(y), "--grid", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    alone = score("mutual_knn", X, Y)
    assert out["excluded_layers"] == {"x": [0], "y": []} and out["grid"][0] == [None]
    assert out["grid"][1] == [alone] and (out["selection"]["x_layer"], out["score"]) == (1, alone)
    assert main(["score", "--metric", "mutual_knn", "--x", str(x), "--y", str(y), "--selection", "fixed:2,0",
                 "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["selection"]["x_layer"] == 2 and fixed["score"] == score("mutual_knn", X[::-1].copy(), Y)
    assert main(["score", "--metric", "mutual_knn", "--x", str(x), "--y", str(y)]) == 0
    assert "left out: layer(s) 0 of " in capsys.readouterr().out
    assert main(["score", "--metric", "mutual_knn", "--x", str(x), "--y", str(y), "--selection", "fixed:0,0"]) == 2
    assert "names layer 0" in capsys.readouterr().err
    assert main(["score", "--metric", "mutual_knn", "--x", str(flat), "--y", str(y)]) == 2
    err = capsys.readouterr().err
    assert "flat.npy" in err and "every layer" in err and "constant" in err
