"""Dataset catalogue, base classes, templates, Fashion-MNIST, ImageNet-100 classes, hub loading, CLI."""

from __future__ import annotations

import gzip
import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from platobench.cli import main
from platobench.data import (
    ClassDataset,
    PairedDataset,
    fashion_mnist,
    fingerprint,
    get_dataset,
    get_templates,
    hub,
    ids_hash,
    list_datasets,
    template_sets,
    tuxpaint,
    wordnet,
)
from platobench.data.catalog import licence_of
from platobench.data.imagenet import imagenet100
from platobench.errors import UserError


def blank(i: int) -> Image.Image:
    return Image.new("L", (2, 2), i)


def test_catalogue_names_and_kinds():
    infos = {i.name: i for i in list_datasets()}
    assert {
        "openclipart-1024",
        "openclipart-desc",
        "wit-1024",
        "coco-captions",
        "flickr30k",
        "fashion-mnist",
        "openclipart-categories",
        "imagenet-100",
        "cifar-10",
        "cifar-100",
        "cinic-10",
        "tuxpaint",
        "tuxpaint-categories",
    } <= set(infos)
    assert infos["wit-1024"].source == "hub:minhuh/prh" and infos["wit-1024"].revision == "wit_1024"
    assert infos["openclipart-1024"].offline and not infos["wit-1024"].offline
    assert infos["fashion-mnist"].kind == "class" and infos["coco-captions"].kind == "paired"
    assert infos["tuxpaint"].kind == "paired" and infos["tuxpaint-categories"].kind == "class"
    assert infos["tuxpaint"].offline and infos["tuxpaint"].source == "debian:tuxpaint-stamps-default"
    assert "GPL-2" in infos["tuxpaint"].description


def test_licences():
    assert licence_of("tuxpaint") == licence_of("tuxpaint-categories") == "GPL-2 (Tux Paint stamps)"
    assert "public domain" in licence_of("openclipart-1024")
    assert licence_of("coco-captions") == "see the source"
    with pytest.raises(UserError, match="unknown dataset"):
        licence_of("nope-set")


def test_unknown_name_suggests_close_ones():
    with pytest.raises(UserError, match=r"unknown dataset 'openclipart-1000'.*did you mean openclipart-1024"):
        get_dataset("openclipart-1000")


@pytest.mark.parametrize("limit", [0, -3, 2.5, True])
def test_bad_limit_is_refused(limit):
    with pytest.raises(UserError, match="limit="):
        get_dataset("fashion-mnist", limit=limit)


def test_unknown_option_lists_accepted_ones():
    with pytest.raises(UserError, match=r"no option colour \(accepted: split, templates\)"):
        get_dataset("fashion-mnist", colour="red")


def test_fingerprint_depends_on_name_revision_and_order():
    base = fingerprint("d", "r1", ["a", "b"])
    assert base != fingerprint("d", "r1", ["b", "a"])
    assert base != fingerprint("d", "r2", ["a", "b"])
    assert base != fingerprint("e", "r1", ["a", "b"])
    assert fingerprint("d", "r1", ["a,b"]) != fingerprint("d", "r1", ["a", "b"])
    assert ids_hash(["a", "b"]) != ids_hash(["ab"])


def test_paired_dataset_contract():
    ds = PairedDataset("p", "r", ["x", "y"], [["one", "uno"], ["two"]], blank)
    assert len(ds) == 2 and ds.captions() == ["one", "two"] and ds.caption_views(0) == ["one", "uno"]
    assert ds.image(1).mode == "RGB"
    with pytest.raises(UserError, match="caption index 1 does not exist for 1 of 2 samples"):
        ds.captions(1)
    with pytest.raises(IndexError):
        ds.image(2)
    with pytest.raises(UserError, match="has no samples"):
        PairedDataset("p", "r", [], [], blank)
    with pytest.raises(ValueError, match="empty caption"):
        PairedDataset("p", "r", ["x"], [[" "]], blank)
    with pytest.raises(ValueError, match="not unique"):
        PairedDataset("p", "r", ["x", "x"], [["a"], ["b"]], blank)


def test_transparent_pixels_become_white():
    rgba = Image.new("RGBA", (2, 1), (0, 0, 0, 0))
    rgba.putpixel((1, 0), (10, 20, 30, 255))
    ds = PairedDataset("p", "r", ["x"], [["c"]], lambda i: rgba)
    assert ds.image(0).getpixel((0, 0)) == (255, 255, 255) and ds.image(0).getpixel((1, 0)) == (10, 20, 30)


def test_class_dataset_validation():
    with pytest.raises(ValueError, match="exactly one"):
        ClassDataset("c", "r", ["x"], [0], ["cat"], ["no slot"], blank)
    with pytest.raises(ValueError, match="outside"):
        ClassDataset("c", "r", ["x"], [1], ["cat"], ["a {}."], blank)
    ds = ClassDataset("c", "r", ["x"], [0], ["cat"], ["a {} in {braces}"], blank)
    assert ds.prompts(0) == ["a cat in {braces}"]


def test_template_sets():
    assert len(get_templates("openai-imagenet")) == 80
    assert get_templates("single") == ["a photo of a {}."]
    for name in template_sets():
        assert all(t.count("{}") == 1 for t in get_templates(name)), name
    with pytest.raises(UserError, match="templates='nope'"):
        get_templates("nope")


def write_idx(path: Path, array: np.ndarray, truncate: int = 0) -> None:
    header = struct.pack(">HBB", 0, 8, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(np.uint8).tobytes()
    with gzip.open(path, "wb") as fh:
        fh.write(data[: len(data) - truncate])


def test_idx_reader_roundtrip_and_truncation(tmp_path):
    images = np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.array([2, 0, 9]))
    assert np.array_equal(fashion_mnist.read_idx(tmp_path / "t10k-images-idx3-ubyte.gz"), images)
    ds = fashion_mnist.fashion_mnist("fm", ["a photo of a {}."], root=tmp_path)
    assert ds.labels == [2, 0, 9] and ds.ids == ["test/00000", "test/00001", "test/00002"]
    assert np.array_equal(np.asarray(ds.image(1))[..., 0], images[1])
    assert np.array_equal(np.asarray(pickle.loads(pickle.dumps(ds)).image(2))[..., 1], images[2])
    write_idx(tmp_path / "bad.gz", images, truncate=10)
    with pytest.raises(ValueError, match="truncated"):
        fashion_mnist.read_idx(tmp_path / "bad.gz")
    with pytest.raises(UserError, match="dataset-fashion-mnist"):
        fashion_mnist.fashion_mnist("fm", ["{}"], root=tmp_path / "missing")


@pytest.mark.skipif(
    not fashion_mnist.DEFAULT_ROOT.is_dir(), reason="Debian dataset-fashion-mnist not installed"
)
def test_real_fashion_mnist():
    ds = get_dataset("fashion-mnist")
    assert len(ds) == 10_000 and len(ds.class_names) == 10
    assert ds.labels[:5] == [
        9,
        2,
        1,
        1,
        6,
    ]  # the published first test labels: ankle boot, pullover, trouser x2, shirt
    assert np.bincount(ds.labels).tolist() == [1000] * 10
    assert ds.image(0).size == (28, 28) and ds.image(0).mode == "RGB"
    assert np.bincount(get_dataset("fashion-mnist", limit=7).labels).tolist() == [7] * 10  # a class set's limit is per class


def test_imagenet100_classes():
    classes = imagenet100()
    assert len(set(classes.wnids)) == 100 and len(set(classes.in1k_labels)) == 100
    assert (
        classes.wnids[0] == "n02869837"
        and classes.in1k_labels[0] == 452
        and classes.names[0] == "poke bonnet"
    )


@pytest.mark.skipif(not wordnet.DEFAULT_DIR.is_dir(), reason="Debian wordnet-base not installed")
def test_wordnet_glosses():
    glosses = imagenet100().glosses()
    assert glosses[0] == "a hat tied under the chin"
    assert len(glosses) == 100 and all(glosses)
    with pytest.raises(UserError, match="expected 'n' followed by 8 digits"):
        wordnet.noun_glosses(["x123"])
    with pytest.raises(UserError, match="not a noun synset"):
        wordnet.noun_glosses(["n00000001"])


@pytest.fixture
def local_hub(tmp_path, monkeypatch):
    """A parquet folder shaped like a hub dataset (datasets' cache redirected into tmp)."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "caption": datasets.Sequence(datasets.Value("string")),
            "img_id": datasets.Value("string"),
            "split": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["x", "y", "z"]),
        }
    )
    rows = {
        "image": [Image.new("RGB", (4, 4), (i * 40, 0, 0)) for i in range(5)],
        "caption": [[f"cap {i} a", f"cap {i} b"] for i in range(5)],
        "img_id": [f"id{i}" for i in range(5)],
        "split": ["test", "train", "test", "test", "val"],
        "label": [0, 1, 2, 1, 0],
    }
    folder = tmp_path / "repo"
    (folder / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(rows, features=features).to_parquet(
        str(folder / "data" / "test-00000-of-00001.parquet")
    )
    return str(folder)


def test_hub_paired_columns_ids_and_filter(local_hub):
    spec = hub.HubSpec(
        local_hub,
        "main",
        "test",
        image="image",
        captions="caption",
        id_columns=("nope", "img_id"),
        where=("split", "test"),
    )
    ds = hub.paired("t", spec)
    assert ds.ids == ["id0", "id2", "id3"] and ds.captions(1) == ["cap 0 b", "cap 2 b", "cap 3 b"]
    assert ds.image(1).getpixel((0, 0)) == (80, 0, 0)
    assert pickle.loads(pickle.dumps(ds)).image(1).getpixel((0, 0)) == (80, 0, 0)
    assert hub.paired("t", spec, limit=2).ids == ["id0", "id2"]
    with pytest.raises(UserError, match="has no column 'text'"):
        hub.paired("t", hub.HubSpec(local_hub, "main", "test", image="image", captions="text"))


def test_hub_classes_names_and_remap(local_hub):
    spec = hub.HubSpec(local_hub, "main", "test", image="image", label="label")
    ds = hub.classes("c", spec, ["a {}."])
    assert ds.class_names == ["x", "y", "z"] and ds.labels == [0, 1, 2, 1, 0] and ds.ids[0] == "test/000000"
    kept = hub.classes("c", spec, ["a {}."], keep_labels=[2, 1])
    assert kept.class_names == ["z", "y"] and kept.labels == [1, 0, 1]
    assert kept.ids == ["test/000001", "test/000002", "test/000003"]


def test_hub_offline_error_names_dataset_and_revision(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    monkeypatch.setattr(datasets.config, "HF_HUB_CACHE", tmp_path / "hub-cache", raising=False)
    with pytest.raises(UserError) as err:
        get_dataset("wit-1024")
    message = str(err.value)
    assert "hub dataset minhuh/prh (revision wit_1024, split train) is not in the local cache" in message
    assert "HF_HUB_OFFLINE" in message and "openclipart-1024" in message


def test_cli_data_list_and_show(capsys):
    assert main(["data", "list", "--json"]) == 0
    names = [d["name"] for d in json.loads(capsys.readouterr().out)]
    assert "openclipart-1024" in names and "wit-1024" in names
    assert main(["data", "show", "nope-set"]) == 2
    assert "unknown dataset 'nope-set'" in capsys.readouterr().err
    assert main(["data", "show", "fashion-mnist", "--option", "split"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


@pytest.mark.skipif(
    not fashion_mnist.DEFAULT_ROOT.is_dir(), reason="Debian dataset-fashion-mnist not installed"
)
def test_cli_data_show_json(capsys):
    assert main(["data", "show", "fashion-mnist", "--limit", "4", "--samples", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 40 and out["kind"] == "class" and len(out["samples"]) == 2  # 4 per class
    assert out["samples"][0] == {"id": "test/00000", "label": 9, "class": "ankle boot"}
    assert out["licence"].startswith("MIT") and out["source"] == "debian:dataset-fashion-mnist"


@pytest.mark.skipif(not tuxpaint.DEFAULT_ROOT.is_dir(), reason="Debian tuxpaint-stamps-default not installed")
def test_cli_data_show_paired_quality_counts(capsys):
    assert main(["data", "show", "tuxpaint", "--limit", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 50 and out["distinct_captions"] == 50 and out["duplicate_images"] == 0
    assert out["licence"].startswith("GPL-2") and out["source"] == "debian:tuxpaint-stamps-default"
    assert main(["data", "show", "tuxpaint", "--limit", "5", "--no-image-check"]) == 0
    text = capsys.readouterr().out
    assert "distinct_captions 5" in text and "duplicate_images  not checked" in text and "GPL-2" in text
