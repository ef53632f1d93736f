"""The dataset catalogue: every name `get_dataset` accepts, where it comes from, and how it is built.

Hub revisions: `minhuh/prh@wit_1024` is the PRH paper's own pin (a branch of the dataset repo). The other
hub sets name the branch they are read from; pin them to a commit sha once one is verified with network.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from platobench.data import corpora, fashion_mnist, hub, openclipart, tuxpaint
from platobench.data.base import ClassDataset, DatasetInfo, PairedDataset
from platobench.data.imagenet import imagenet100
from platobench.data.templates import get_templates
from platobench.data.text_corpus import TextCorpus
from platobench.errors import UserError
from platobench.registry import Registry

Dataset = PairedDataset | ClassDataset | TextCorpus

WIT_1024 = hub.HubSpec("minhuh/prh", "wit_1024", "train", image="image", captions="text")
COCO = hub.HubSpec(
    "nlphuji/mscoco_2014_5k_test_image_text_retrieval",
    "main",
    "test",
    image="image",
    captions="caption",
    id_columns=("cocoid", "image_id", "imgid", "filename"),
)
FLICKR30K = hub.HubSpec(
    "nlphuji/flickr30k",
    "main",
    "test",
    image="image",
    captions="caption",
    id_columns=("img_id", "filename"),
    where=("split", "test"),
)
CIFAR10 = hub.HubSpec("uoft-cs/cifar10", "main", "test", image="img", label="label")
CIFAR100 = hub.HubSpec("uoft-cs/cifar100", "main", "test", image="img", label="fine_label")
CINIC10 = hub.HubSpec("flwrlabs/cinic10", "main", "test", image="image", label="label")
IMAGENET_VAL = hub.HubSpec("ILSVRC/imagenet-1k", "main", "validation", image="image", label="label")


@dataclass(frozen=True)
class Entry:
    """A dataset name's info and builder, `build(name, limit, **options)`, and the licence of its data
    (None: not recorded, "see the source"; users' datasets files must state it)."""

    info: DatasetInfo
    build: Callable[..., Dataset]
    licence: str | None = None


def _openclipart_paired(n: int | None, with_description: bool = False):
    def build(name: str, limit: int | None, seed: int = 0, max_bytes: int = openclipart.MAX_BYTES):
        size = limit if n is None or (limit is not None and limit < n) else n
        return openclipart.paired(
            name, n=size, with_description=with_description, seed=seed, max_bytes=max_bytes
        )

    return build


def _openclipart_categories(
    name: str, limit: int | None, templates: str = "openclipart", seed: int = 0, per_class: int = 100
):
    return openclipart.categories(name, get_templates(templates), seed=seed, per_class=per_class, limit=limit)


def _tuxpaint_paired(name: str, limit: int | None, seed: int = 0):
    return tuxpaint.paired(name, n=limit, seed=seed)


def _tuxpaint_categories(
    name: str,
    limit: int | None,
    templates: str = "tuxpaint",
    seed: int = 0,
    per_class: int = tuxpaint.PER_CLASS,
    min_per_class: int = tuxpaint.MIN_PER_CLASS,
):
    return tuxpaint.categories(
        name,
        get_templates(templates),
        seed=seed,
        per_class=per_class,
        min_per_class=min_per_class,
        limit=limit,
    )


def _fashion(name: str, limit: int | None, split: str = "test", templates: str = "fashion-mnist"):
    return fashion_mnist.fashion_mnist(name, get_templates(templates), split=split, limit=limit)


def _hub_paired(spec: hub.HubSpec):
    def build(name: str, limit: int | None):
        return hub.paired(name, spec, limit=limit)

    return build


def _hub_classes(spec: hub.HubSpec, default_templates: str):
    def build(name: str, limit: int | None, templates: str = default_templates):
        return hub.classes(name, spec, get_templates(templates), limit=limit)

    return build


def _imagenet100(
    name: str, limit: int | None, templates: str = "openai-imagenet", descriptions: str = "none"
):
    if descriptions not in ("none", "wordnet"):
        raise UserError(f"descriptions={descriptions!r} for {name!r}: expected 'none' or 'wordnet'")
    classes = imagenet100()
    return hub.classes(
        name,
        IMAGENET_VAL,
        get_templates(templates),
        keep_labels=classes.in1k_labels,
        class_names=classes.names,
        class_descriptions=classes.glosses() if descriptions == "wordnet" else None,
        limit=limit,
    )


_DEB_OC = "debian:openclipart-png+openclipart-svg"
_DEB_TUX = "debian:tuxpaint-stamps-default"

#: Every built-in dataset by name (a plugin registers its own `Entry` here; users' datasets files add theirs
#: to `USER_ENTRIES` while in force). `licence`: of the images and captions, where known (`data show`).
DATASETS: Registry[Entry] = Registry("dataset")
for _entry in (
    Entry(
        DatasetInfo(name="openclipart-1024", kind="paired", source=_DEB_OC, revision="installed package version",
                    offline=True,
                    description="1024 clip-art images with cleaned, distinct titles (+ description where present); the "
                                "offline default"),
        _openclipart_paired(1024), licence="public domain (openclipart)",
    ),
    Entry(
        DatasetInfo(name="openclipart", kind="paired", source=_DEB_OC, revision="installed package version",
                    offline=True,
                    description="every openclipart image under 400 KB with a descriptive title, one image per title "
                                "(2,438 in bookworm's packages), seeded order"),
        _openclipart_paired(None), licence="public domain (openclipart)",
    ),
    Entry(
        DatasetInfo(name="openclipart-desc", kind="paired", source=_DEB_OC, revision="installed package version",
                    offline=True,
                    description="openclipart images with a cleaned description unlike their title (388 in bookworm's "
                                "packages): captions [title, description] are two good views"),
        _openclipart_paired(None, with_description=True), licence="public domain (openclipart)",
    ),
    Entry(
        DatasetInfo(name="openclipart-categories", kind="class", source=_DEB_OC, revision="installed package version",
                    offline=True,
                    description="openclipart top-level categories (>= 40 images), up to 100 images each"),
        _openclipart_categories, licence="public domain (openclipart)",
    ),
    Entry(
        DatasetInfo(name="tuxpaint", kind="paired", source=_DEB_TUX, revision="installed package version",
                    offline=True,
                    description="Tux Paint cartoon stamps (PNG) with their English captions, one stamp per caption "
                                "(644 in 2022.06.04-1); GPL-2"),
        _tuxpaint_paired, licence="GPL-2 (Tux Paint stamps)",
    ),
    Entry(
        DatasetInfo(name="tuxpaint-categories", kind="class", source=_DEB_TUX, revision="installed package version",
                    offline=True,
                    description="Tux Paint stamp folders with >= 20 stamps, up to 100 stamps each (8 classes, 510 stamps in "
                                "2022.06.04-1); GPL-2"),
        _tuxpaint_categories, licence="GPL-2 (Tux Paint stamps)",
    ),
    Entry(
        DatasetInfo(name="fashion-mnist", kind="class", source="debian:dataset-fashion-mnist", revision="installed package version",
                    offline=True,
                    description="Fashion-MNIST test split, 10 clothing classes, 28x28 grayscale"),
        _fashion, licence="MIT (Zalando Research)",
    ),
    Entry(
        DatasetInfo(name="wit-1024", kind="paired", source="hub:minhuh/prh", revision=WIT_1024.revision,
                    offline=False,
                    description="the PRH paper's 1024 Wikipedia image-text pairs (caption 0 by default)"),
        _hub_paired(WIT_1024),
    ),
    Entry(
        DatasetInfo(name="coco-captions", kind="paired", source=f"hub:{COCO.repo}", revision=COCO.revision,
                    offline=False,
                    description="MS-COCO 2014 Karpathy test split, 5,000 images x 5 captions"),
        _hub_paired(COCO),
    ),
    Entry(
        DatasetInfo(name="flickr30k", kind="paired", source=f"hub:{FLICKR30K.repo}", revision=FLICKR30K.revision,
                    offline=False,
                    description="Flickr30k Karpathy test split, 1,000 images x 5 captions"),
        _hub_paired(FLICKR30K),
    ),
    Entry(
        DatasetInfo(name="imagenet-100", kind="class", source=f"hub:{IMAGENET_VAL.repo}", revision=IMAGENET_VAL.revision,
                    offline=False,
                    description="ImageNet-1k validation images of the 100 CMC classes (gated on the hub)"),
        _imagenet100,
    ),
    Entry(
        DatasetInfo(name="cifar-10", kind="class", source=f"hub:{CIFAR10.repo}", revision=CIFAR10.revision,
                    offline=False,
                    description="CIFAR-10 test split"),
        _hub_classes(CIFAR10, "cifar"),
    ),
    Entry(
        DatasetInfo(name="cifar-100", kind="class", source=f"hub:{CIFAR100.repo}", revision=CIFAR100.revision,
                    offline=False,
                    description="CIFAR-100 test split, fine labels"),
        _hub_classes(CIFAR100, "cifar"),
    ),
    Entry(
        DatasetInfo(name="cinic-10", kind="class", source=f"hub:{CINIC10.repo}", revision=CINIC10.revision,
                    offline=False,
                    description="CINIC-10 test split (CIFAR-10 classes, ImageNet + CIFAR images)"),
        _hub_classes(CINIC10, "cifar"),
    ),
    Entry(
        DatasetInfo(name="wordnet", kind="corpus", source="debian:wordnet-base", revision="installed package version",
                    offline=True,
                    description="WordNet 3.0 synsets: lemma list, definition, each example sentence (109,309 of 117,659 "
                                "in 1:3.0-37; 8,350 have < 2 views left once earlier synsets' views are removed)"),
        corpora.wordnet, licence="WordNet 3.0 licence (Princeton University, BSD-like)",
    ),
    Entry(
        DatasetInfo(name="openmoji", kind="corpus", source="npm:openmoji@17.0.0", revision="17.0.0",
                    offline=True,
                    description="OpenMoji emoji: annotation, Unicode tags, OpenMoji tags (2,185 of 4,495; skin-tone "
                                "variants lack tags); `bash scripts/install_npm.sh` fetches it"),
        corpora.openmoji, licence="CC-BY-SA-4.0 (OpenMoji)",
    ),
    Entry(
        DatasetInfo(name="cldr-emoji", kind="corpus", source="debian:unicode-cldr-core", revision="installed package version",
                    offline=True,
                    description="Unicode CLDR English emoji/symbol annotations: name, keywords (3,380 of 4,022 in 41)"),
        corpora.cldr_emoji, licence="Unicode-DFS-2016 (Unicode CLDR data files)",
    ),
    Entry(
        DatasetInfo(name="kjv-web", kind="corpus", source="debian:sword-text-kjv+sword-text-web", revision="installed package version",
                    offline=True,
                    description="Bible verses in both the KJV and the WEB: the two translations (30,505 of the 31,100 they share)"),
        corpora.kjv_web, licence="public domain (King James Version; World English Bible)",
    ),
):
    DATASETS.register(_entry.info.name, _entry)


# Datasets of users' datasets files in force (`platobench.data.datasets_file.using`): name -> entry.
USER_ENTRIES: dict[str, Entry] = {}


def entries() -> dict[str, Entry]:
    """Every dataset name `get_dataset` accepts now: the built-in ones, then those of datasets files in force."""
    return {**dict(DATASETS.items()), **USER_ENTRIES}


def licence_of(name: str) -> str:
    """The licence of dataset `name`'s data, or "see the source" when the catalogue does not record it."""
    entry = lookup(name)
    return entry.licence or "see the source"


def options_of(name: str) -> list[str]:
    """The keyword options dataset `name` accepts besides `limit`."""
    params = inspect.signature(lookup(name).build).parameters
    return [p for p in params if p not in ("name", "limit")]


def lookup(name: str) -> Entry:
    """The catalogue entry, or a UserError suggesting close names."""
    known = entries()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"unknown dataset {name!r}{hint} (`platobench data list` shows all {len(known)}; a "
                        "dataset of your own goes in a datasets file, passed with --datasets-file)")
    return known[name]


def build(name: str, limit: int | None, options: dict[str, Any]) -> Dataset:
    """Build dataset `name`, first `limit` samples of its order; unknown options are refused."""
    entry = lookup(name)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise UserError(f"limit={limit!r}: expected a positive integer")
    unknown = sorted(set(options) - set(options_of(name)))
    if unknown:
        accepted = ", ".join(options_of(name)) or "none"
        raise UserError(f"dataset {name!r} has no option {', '.join(unknown)} (accepted: {accepted})")
    return entry.build(name, limit, **options)
