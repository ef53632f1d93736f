"""Statistics computed once per stack (`CachedLayers`) and saved beside feature entries
(`features.statistics`): scores bit for bit those of plain layer lists, each statistic computed once,
kept per layer selection, and a saved value used only when it is what these exact layers under this torch
give (an edited, foreign or linked file is never read)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save as st_save

from platobench.data import ids_hash
from platobench.features import statistics as fstats
from platobench.features.store import CacheLinkError, FeatureKey, FeatureStore
from platobench.files.atomic import WriteError
from platobench.metrics import layer_grid
from platobench.metrics import preprocess as pp
from platobench.metrics.cached_layers import CachedLayers, take_layers
from platobench.metrics.stats import permutation_null, subsample_ci

N = 64
IDS = [f"s{i:03d}" for i in range(N)]
WIDTHS = (48, 24, 40)


def layers(seed: int, widths=WIDTHS) -> list[torch.Tensor]:
    """Heavy-tailed features (a few large dimensions per layer, as in real models) [N, D_l]."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for w in widths:
        x = torch.randn(N, w, generator=g)
        x[:, : max(1, w // 10)] *= 20
        out.append(x)
    return out


@pytest.fixture
def count_quantiles(monkeypatch):
    """How often the per-sample prh quantiles are computed from the layers."""
    calls = []
    real = pp._row_quantiles

    def counted(stack, q):
        calls.append(len(stack))
        return real(stack, q)

    monkeypatch.setattr(pp, "_row_quantiles", counted)
    return calls


def _bits(t: torch.Tensor) -> bytes:
    return t.contiguous().numpy().tobytes()


@pytest.mark.parametrize("metric,params", [("mutual_knn", {"k": 5}), ("cka", {"kernel": "linear"})])
def test_cached_layers_give_the_plain_lists_grid_and_compute_the_quantiles_once(metric, params, count_quantiles):
    xs, ys = layers(0), layers(1, (32, 16))
    plain = layer_grid(metric, xs, ys, preprocess="prh", **params)
    assert sorted(count_quantiles) == [2, 3]
    cx, cy = CachedLayers(xs), CachedLayers(ys)
    for _ in range(3):
        assert _bits(layer_grid(metric, cx, cy, preprocess="prh", **params)) == _bits(plain)
    assert sorted(count_quantiles) == [2, 2, 3, 3]  # once per cached stack, then reused


def test_intervals_and_nulls_over_cached_layers_equal_those_over_lists(count_quantiles):
    xs, ys = layers(2), layers(3, (32, 16))
    kw = {"preprocess": "prh", "seed": 7, "k": 5}
    ci = subsample_ci("mutual_knn", xs, ys, n_sub=6, **kw)
    null = permutation_null("mutual_knn", xs, ys, n_perm=5, **kw)
    count_quantiles.clear()
    cx, cy = CachedLayers(xs), CachedLayers(ys)
    assert subsample_ci("mutual_knn", cx, cy, n_sub=6, **kw) == ci
    again = permutation_null("mutual_knn", cx, cy, n_perm=5, **kw)
    assert (again.observed, again.mean, again.std, again.p_value) == (null.observed, null.mean, null.std, null.p_value)
    assert sorted(count_quantiles) == [2, 3]


def test_a_selection_of_layers_is_its_own_statistic(count_quantiles):
    cx = CachedLayers(layers(4))
    sub = take_layers(cx, [0, 2])
    assert isinstance(sub, CachedLayers) and sub.positions == (0, 2)
    assert take_layers(list(cx), [0, 2])[1] is cx[2]
    whole = pp.LayerStack(cx, "X").prh_row_quantiles()
    part = pp.LayerStack(sub, "X").prh_row_quantiles()
    assert count_quantiles == [3, 2]
    assert not torch.equal(whole, part)
    assert _bits(part) == _bits(pp.LayerStack([cx[0], cx[2]], "X").prh_row_quantiles())
    assert _bits(pp.LayerStack(cx.take([0, 2]), "X").prh_row_quantiles()) == _bits(part)  # now cached
    assert count_quantiles == [3, 2, 2]


def test_cached_layers_are_read_only_and_check_their_positions():
    cx = CachedLayers(layers(5))
    assert len(cx) == 3 and isinstance(cx[0:2], list) and not hasattr(cx, "append")
    with pytest.raises(ValueError, match="2 positions for 3 layers"):
        CachedLayers(list(cx), positions=[0, 1])


# ------------------------------------------------------------------------------------ saved beside an entry


def _entry(store: FeatureStore, seed: int = 0):
    key = FeatureKey(model="demo/tiny", model_revision="abc", dtype="float32", pooling="mean", layers=(0, 1, 2),
                     dataset="toy", dataset_revision="r1", ids_hash=ids_hash(IDS), prompt="caption:0",
                     extractor_version="1")
    xs = layers(seed)
    with store.writer(key, IDS, (0, 1, 2), WIDTHS) as w:
        for a, b in w.pending(32):
            w.write_chunk(a, [x[a:b] for x in xs])
        return w.finalize(), key


def _files(entry) -> list:
    folder = entry.path / fstats.FOLDER
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_an_entry_saves_its_statistics_once_and_later_runs_read_them(tmp_path, count_quantiles):
    store = FeatureStore(tmp_path)
    entry, key = _entry(store)
    ys = layers(9, (32, 16))
    want = layer_grid("mutual_knn", list(entry.layers), ys, preprocess="prh", k=5)
    count_quantiles.clear()
    got = layer_grid("mutual_knn", entry.cached_layers(), ys, preprocess="prh", k=5)
    assert _bits(got) == _bits(want) and count_quantiles == [2, 3]  # ys (a list) first
    (saved,) = _files(entry)
    with safe_open(saved, framework="pt") as fh:
        meta = fh.metadata()
    assert meta["entry"] == entry.digest and json.loads(meta["positions"]) == [0, 1, 2]
    assert meta["torch"] == torch.__version__
    assert json.loads(meta["layer_sha256"]) == [f["sha256"] for f in entry.manifest["files"]]
    again = store.get(key)  # another process, later: nothing recomputed
    got = layer_grid("mutual_knn", again.cached_layers(), ys, preprocess="prh", k=5)
    assert _bits(got) == _bits(want) and count_quantiles == [2, 3, 2]
    assert store.verify(entry.digest) == [] and again.verify() == []


def _save_with(path, value: torch.Tensor, **meta_over) -> None:
    with safe_open(path, framework="pt") as fh:
        meta = fh.metadata()
    meta.update(meta_over)
    path.write_bytes(st_save({"value": value}, metadata=meta))


@pytest.mark.parametrize("damage", ["value", "value and its checksum", "torch", "format", "layer file", "shape"])
def test_a_saved_statistic_that_is_not_what_these_layers_give_is_recomputed(tmp_path, count_quantiles, damage):
    store = FeatureStore(tmp_path)
    entry, key = _entry(store)
    cached = entry.cached_layers()
    true = pp.LayerStack(cached, "X").prh_row_quantiles()
    (saved,) = _files(entry)
    edited = true.clone()
    edited[3] *= 2
    if damage == "value":
        _save_with(saved, edited)
    elif damage == "value and its checksum":  # an edit that keeps the file consistent: still its layers' value?
        _save_with(saved, edited, value_sha256=fstats._value_sha256(edited))
    elif damage == "torch":
        _save_with(saved, edited, torch="1.0.0", value_sha256=fstats._value_sha256(edited))
    elif damage == "format":
        _save_with(saved, edited, format="0", value_sha256=fstats._value_sha256(edited))
    elif damage == "layer file":
        sha = json.loads(fh_meta(saved)["layer_sha256"])
        sha[1] = "0" * 64
        _save_with(saved, edited, layer_sha256=json.dumps(sha), value_sha256=fstats._value_sha256(edited))
    else:
        _save_with(saved, true[:-1], value_sha256=fstats._value_sha256(true[:-1]))
    count_quantiles.clear()
    got = pp.LayerStack(store.get(key).cached_layers(), "X").prh_row_quantiles()
    if damage == "value and its checksum":
        # a consistent file is trusted as the store trusts its manifests' checksums: it is this torch's
        # statistic of these layer files, saved by this module (an edit that keeps every checksum is not
        # a damage the store can see, for features or statistics alike)
        assert torch.equal(got, edited) and count_quantiles == []
        return
    assert _bits(got) == _bits(true) and count_quantiles == [3]
    assert _bits(fstats.EntryStatistics(entry).load(("prh_row_quantiles", 0.95, (0, 1, 2)))) == _bits(true)


def fh_meta(path) -> dict:
    with safe_open(path, framework="pt") as fh:
        return fh.metadata()


def test_an_entry_that_cannot_be_written_keeps_no_statistics_and_still_scores(tmp_path, count_quantiles,
                                                                              monkeypatch):
    """A read-only shared cache or a full disk: `atomic_write_bytes` fails, the statistic is computed each
    time and nothing fails."""
    store = FeatureStore(tmp_path)
    entry, _ = _entry(store)

    def refuse(path, data):
        raise WriteError(f"cannot write {path}: Read-only file system")

    monkeypatch.setattr(fstats, "atomic_write_bytes", refuse)
    a = pp.LayerStack(entry.cached_layers(), "X").prh_row_quantiles()
    b = pp.LayerStack(entry.cached_layers(), "X").prh_row_quantiles()
    assert _bits(a) == _bits(b) and count_quantiles == [3, 3] and _files(entry) == []


def test_a_linked_statistics_folder_is_never_read_or_written_through(tmp_path, count_quantiles):
    store = FeatureStore(tmp_path / "store")
    entry, key = _entry(store)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (entry.path / fstats.FOLDER).symlink_to(elsewhere, target_is_directory=True)
    pp.LayerStack(entry.cached_layers(), "X").prh_row_quantiles()  # the entry object was loaded before the link
    assert list(elsewhere.iterdir()) == [] and count_quantiles == [3]
    with pytest.raises(CacheLinkError, match="statistics"):
        store.get(key)
