"""WebDataset tar shards (the format large image–caption sets ship in) read with the standard library.

A shard is a tar file whose members are grouped into samples by key: the member path up to the first "."
of its file name ("train/000123.jpg" and "train/000123.txt" are sample "train/000123"'s image and caption).
A sample's image is its first member with an image extension (`IMAGE_EXTENSIONS`); its captions are the
`.txt` member (one caption, UTF-8) or a field of its `.json` member (a string or a list of strings, as a
folder manifest's cell: `folder.texts_of`); a class set's label is its `.cls` member (an integer) or a `.json`
field. Sample ids are the keys, in shard order then member order. Images are read by seeking to their bytes
in the shard (no extraction, picklable for DataLoader workers). The content revision is
`webdataset:sha256:<16 hex>` of every shard's bytes, in order. Keys that repeat (within or across shards),
samples without an image, images that are not whole (`images.check_image`), captions that are blank or not
strings, and unreadable shards are errors naming them.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from platobench.data.folder import texts_of
from platobench.data.images import check_image, open_image
from platobench.errors import UserError
from platobench.files.digest import file_sha256
from platobench.files.ids import shown

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp", "bmp", "gif", "tif", "tiff")


@dataclass
class _Sample:
    image: tuple[int, int, int] | None = None  # (shard index, byte offset, size)
    members: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # extension -> location


class ShardImageLoader:
    """Opens image i by reading its bytes from its shard (shard paths, and (shard, offset, size) and key per
    sample); an image that cannot be decoded is a UserError naming the sample and shard."""

    def __init__(self, shards: Sequence[Path], places: Sequence[tuple[int, int, int]], keys: Sequence[str]) -> None:
        self.shards, self.places, self.keys = list(shards), list(places), list(keys)

    def __call__(self, i: int) -> Image.Image:
        data = _read_member(self.shards, self.places[i])
        return open_image(data, f"sample {shown(self.keys[i])}'s image in {self.shards[self.places[i][0]]}")


def _read_member(shards: Sequence[Path], place: tuple[int, int, int]) -> bytes:
    shard, offset, size = place
    with shards[shard].open("rb") as f:
        f.seek(offset)
        return f.read(size)


def _index(name: str, shards: Sequence[Path]) -> dict[str, _Sample]:
    """key -> its members' locations, keys in shard then member order; UserError for unreadable shards
    and repeated keys."""
    samples: dict[str, _Sample] = {}
    for s, shard in enumerate(shards):
        if not shard.is_file():
            raise UserError(f"dataset {name!r}: shard {shard} not found")
        try:
            with tarfile.open(shard, "r:") as tar:
                members = [m for m in tar.getmembers() if m.isfile()]
        except (tarfile.TarError, OSError) as exc:
            raise UserError(f"dataset {name!r}: shard {shard} is not a readable tar file ({exc})") from exc
        seen_here: set[str] = set()
        for m in members:
            folder, _, base = m.name.rpartition("/")
            stem, dot, ext = base.partition(".")
            if not dot or not stem:
                continue
            key = f"{folder}/{stem}" if folder else stem
            if key in samples and key not in seen_here:
                raise UserError(f"dataset {name!r}: sample key {shown(key)} is in two shards (second: {shard})")
            seen_here.add(key)
            sample = samples.setdefault(key, _Sample())
            ext = ext.lower()
            place = (s, m.offset_data, m.size)
            if ext in sample.members:
                raise UserError(f"dataset {name!r}: sample {shown(key)} has two .{ext} members in {shard}")
            sample.members[ext] = place
            if sample.image is None and ext in IMAGE_EXTENSIONS:
                sample.image = place
    if not samples:
        raise UserError(f"dataset {name!r}: its shards hold no samples")
    return samples


def _json_field(name: str, key: str, data: bytes, field_name: str) -> Any:
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"dataset {name!r}: sample {shown(key)}'s .json is not JSON ({exc})") from exc
    if not isinstance(value, dict) or field_name not in value:
        raise UserError(f"dataset {name!r}: sample {shown(key)}'s .json has no field {field_name!r}")
    return value[field_name]


class ShardRows:
    """The checked samples of WebDataset shards: ids, image places, caption views, raw labels, revision.

    `caption`: "txt" or "json:<field>"; `label`: None, "cls" or "json:<field>"."""

    def __init__(self, name: str, shards: Sequence[Path], *, caption: str | None, label: str | None) -> None:
        self.shards = list(shards)
        samples = _index(name, self.shards)
        no_image = [k for k, v in samples.items() if v.image is None]
        if no_image:
            raise UserError(f"dataset {name!r}: {len(no_image)} sample(s) have no image member (.{', .'.join(IMAGE_EXTENSIONS[:3])}, "
                            f"...; first: {', '.join(shown(k) for k in no_image[:5])})")
        self.ids = list(samples)
        self.places = [v.image for v in samples.values()]
        for key, place in zip(self.ids, self.places):
            check_image(_read_member(self.shards, place),
                         f"dataset {name!r}: sample {shown(key)}'s image in {self.shards[place[0]]}")
        self.views = [self._captions(name, k, v, caption) for k, v in samples.items()] if caption else None
        self.labels = [self._label(name, k, v, label) for k, v in samples.items()] if label else None
        digest = hashlib.sha256()
        for shard in self.shards:
            digest.update(file_sha256(shard).encode())
        self.revision = f"webdataset:sha256:{digest.hexdigest()[:16]}"

    def _member(self, name: str, key: str, sample: _Sample, ext: str) -> bytes:
        if ext not in sample.members:
            raise UserError(f"dataset {name!r}: sample {shown(key)} has no .{ext} member")
        return _read_member(self.shards, sample.members[ext])

    def _captions(self, name: str, key: str, sample: _Sample, caption: str) -> list[str]:
        """The sample's captions (none for a blank one: `folder.paired` names the sample), from its .txt
        member (UTF-8, a byte-order mark dropped) or a .json field (`folder.texts_of`)."""
        if caption == "txt":
            try:
                text = self._member(name, key, sample, "txt").decode("utf-8-sig").strip()
            except UnicodeDecodeError as exc:
                raise UserError(f"dataset {name!r}: sample {shown(key)}'s .txt is not UTF-8 ({exc.reason})") from exc
            return [text] if text else []
        field_name = caption.removeprefix("json:")
        value = _json_field(name, key, self._member(name, key, sample, "json"), field_name)
        return texts_of(value, f"dataset {name!r}: sample {shown(key)}'s .json field {field_name!r}")

    def _label(self, name: str, key: str, sample: _Sample, label: str) -> Any:
        if label == "cls":
            return self._member(name, key, sample, "cls").decode("utf-8", errors="replace").strip()
        return _json_field(name, key, self._member(name, key, sample, "json"), label.removeprefix("json:"))

    def loader(self, n: int | None = None) -> ShardImageLoader:
        """The image loader of the first `n` samples (None: all)."""
        return ShardImageLoader(self.shards, self.places[:n], self.ids[:n])
