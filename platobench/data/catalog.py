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
    """A dataset name's info and builder, `build(name, limit, **options)`; `licence` when the entry states
    it (users' datasets files must), else `LICENCES`."""

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


def _info(name: str, kind: str, source: str, revision: str, offline: bool, description: str) -> DatasetInfo:
    return DatasetInfo(name, kind, source, revision, offline, description)


_DEB_OC = "debian:openclipart-png+openclipart-svg"
_DEB_TUX = "debian:tuxpaint-stamps-default"
# Licence of each dataset's images and captions where it is known (`platobench data show` prints it).
LICENCES: dict[str, str] = {
    "openclipart-1024": "public domain (openclipart)",
    "openclipart": "public domain (openclipart)",
    "openclipart-desc": "public domain (openclipart)",
    "openclipart-categories": "public domain (openclipart)",
    "tuxpaint": "GPL-2 (Tux Paint stamps)",
    "tuxpaint-categories": "GPL-2 (Tux Paint stamps)",
    "fashion-mnist": "MIT (Zalando Research)",
    "wordnet": "WordNet 3.0 licence (Princeton University, BSD-like)",
    "openmoji": "CC-BY-SA-4.0 (OpenMoji)",
    "cldr-emoji": "Unicode-DFS-2016 (Unicode CLDR data files)",
    "kjv-web": "public domain (King James Version; World English Bible)",
}
CATALOG: dict[str, Entry] = {
    e.info.name: e
    for e in [
        Entry(
            _info(
                "openclipart-1024",
                "paired",
                _DEB_OC,
                "installed package version",
                True,
                "1024 clip-art images with cleaned, distinct titles (+ description where present); the "
                "offline default",
            ),
            _openclipart_paired(1024),
        ),
        Entry(
            _info(
                "openclipart",
                "paired",
                _DEB_OC,
                "installed package version",
                True,
                "every openclipart image under 400 KB with a descriptive title, one image per title "
                "(2,438 in bookworm's packages), seeded order",
            ),
            _openclipart_paired(None),
        ),
        Entry(
            _info(
                "openclipart-desc",
                "paired",
                _DEB_OC,
                "installed package version",
                True,
                "openclipart images with a cleaned description unlike their title (388 in bookworm's "
                "packages): captions [title, description] are two good views",
            ),
            _openclipart_paired(None, with_description=True),
        ),
        Entry(
            _info(
                "openclipart-categories",
                "class",
                _DEB_OC,
                "installed package version",
                True,
                "openclipart top-level categories (>= 40 images), up to 100 images each",
            ),
            _openclipart_categories,
        ),
        Entry(
            _info(
                "tuxpaint",
                "paired",
                _DEB_TUX,
                "installed package version",
                True,
                "Tux Paint cartoon stamps (PNG) with their English captions, one stamp per caption "
                "(644 in 2022.06.04-1); GPL-2",
            ),
            _tuxpaint_paired,
        ),
        Entry(
            _info(
                "tuxpaint-categories",
                "class",
                _DEB_TUX,
                "installed package version",
                True,
                "Tux Paint stamp folders with >= 20 stamps, up to 100 stamps each (8 classes, 510 stamps in "
                "2022.06.04-1); GPL-2",
            ),
            _tuxpaint_categories,
        ),
        Entry(
            _info(
                "fashion-mnist",
                "class",
                "debian:dataset-fashion-mnist",
                "installed package version",
                True,
                "Fashion-MNIST test split, 10 clothing classes, 28x28 grayscale",
            ),
            _fashion,
        ),
        Entry(
            _info(
                "wit-1024",
                "paired",
                "hub:minhuh/prh",
                WIT_1024.revision,
                False,
                "the PRH paper's 1024 Wikipedia image-text pairs (caption 0 by default)",
            ),
            _hub_paired(WIT_1024),
        ),
        Entry(
            _info(
                "coco-captions",
                "paired",
                f"hub:{COCO.repo}",
                COCO.revision,
                False,
                "MS-COCO 2014 Karpathy test split, 5,000 images x 5 captions",
            ),
            _hub_paired(COCO),
        ),
        Entry(
            _info(
                "flickr30k",
                "paired",
                f"hub:{FLICKR30K.repo}",
                FLICKR30K.revision,
                False,
                "Flickr30k Karpathy test split, 1,000 images x 5 captions",
            ),
            _hub_paired(FLICKR30K),
        ),
        Entry(
            _info(
                "imagenet-100",
                "class",
                f"hub:{IMAGENET_VAL.repo}",
                IMAGENET_VAL.revision,
                False,
                "ImageNet-1k validation images of the 100 CMC classes (gated on the hub)",
            ),
            _imagenet100,
        ),
        Entry(
            _info("cifar-10", "class", f"hub:{CIFAR10.repo}", CIFAR10.revision, False, "CIFAR-10 test split"),
            _hub_classes(CIFAR10, "cifar"),
        ),
        Entry(
            _info(
                "cifar-100",
                "class",
                f"hub:{CIFAR100.repo}",
                CIFAR100.revision,
                False,
                "CIFAR-100 test split, fine labels",
            ),
            _hub_classes(CIFAR100, "cifar"),
        ),
        Entry(
            _info(
                "cinic-10",
                "class",
                f"hub:{CINIC10.repo}",
                CINIC10.revision,
                False,
                "CINIC-10 test split (CIFAR-10 classes, ImageNet + CIFAR images)",
            ),
            _hub_classes(CINIC10, "cifar"),
        ),
        Entry(
            _info(
                "wordnet",
                "corpus",
                "debian:wordnet-base",
                "installed package version",
                True,
                "WordNet 3.0 synsets: lemma list, definition, each example sentence (109,309 of 117,659 "
                "in 1:3.0-37; 8,350 have < 2 views left once earlier synsets' views are removed)",
            ),
            corpora.wordnet,
        ),
        Entry(
            _info(
                "openmoji",
                "corpus",
                "npm:openmoji@17.0.0",
                "17.0.0",
                True,
                "OpenMoji emoji: annotation, Unicode tags, OpenMoji tags (2,185 of 4,495; skin-tone "
                "variants lack tags); `bash scripts/install_npm.sh` fetches it",
            ),
            corpora.openmoji,
        ),
        Entry(
            _info(
                "cldr-emoji",
                "corpus",
                "debian:unicode-cldr-core",
                "installed package version",
                True,
                "Unicode CLDR English emoji/symbol annotations: name, keywords (3,380 of 4,022 in 41)",
            ),
            corpora.cldr_emoji,
        ),
        Entry(
            _info(
                "kjv-web",
                "corpus",
                "debian:sword-text-kjv+sword-text-web",
                "installed package version",
                True,
                "Bible verses in both the KJV and the WEB: the two translations (30,505 of the 31,100 they share)",
            ),
            corpora.kjv_web,
        ),
    ]
}


# Datasets of users' datasets files in force (`platobench.data.datasets_file.using`): name -> entry.
USER_ENTRIES: dict[str, Entry] = {}


def entries() -> dict[str, Entry]:
    """Every dataset name `get_dataset` accepts now: the built-in ones, then those of datasets files in force."""
    return {**CATALOG, **USER_ENTRIES}


def licence_of(name: str) -> str:
    """The licence of dataset `name`'s data, or "see the source" when the catalogue does not record it."""
    entry = lookup(name)
    return entry.licence or LICENCES.get(name, "see the source")


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
