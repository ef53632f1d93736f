"""Fashion-MNIST (Xiao et al. 2017, arXiv 1708.07747) from Debian's `dataset-fashion-mnist` package.

Images and labels are IDX files (LeCun's MNIST format: big-endian magic, dimensions, then uint8 data),
gzip-compressed, under /usr/share/datasets/fashion-mnist.
"""

from __future__ import annotations

import functools
import gzip
import struct
from pathlib import Path

import numpy as np
from PIL import Image

from platobench.data.base import ClassDataset
from platobench.data.debian import package_version, require_dir
from platobench.errors import UserError

DEFAULT_ROOT = Path("/usr/share/datasets/fashion-mnist")
PACKAGE = "dataset-fashion-mnist"
CLASS_NAMES = [
    "T-shirt",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
]
_FILES = {"train": "train", "test": "t10k"}


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (optionally .gz) as a uint8 array of the shape its header declares."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {data[:4].hex()})")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header declares {shape} but holds {body.size} bytes (truncated?)")
    return body.reshape(shape)


class _ArrayLoader:
    """Image i of a uint8 [N, 28, 28] array (picklable for DataLoader workers)."""

    def __init__(self, images: np.ndarray) -> None:
        self.images = images

    def __call__(self, i: int) -> Image.Image:
        return Image.fromarray(self.images[i], mode="L")


@functools.lru_cache(maxsize=2)
def _arrays(root: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    folder = require_dir(root, [PACKAGE], "Fashion-MNIST")
    stem = _FILES[split]
    images = read_idx(folder / f"{stem}-images-idx3-ubyte.gz")
    labels = read_idx(folder / f"{stem}-labels-idx1-ubyte.gz")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"Fashion-MNIST {split}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels


def fashion_mnist(
    name: str,
    templates: list[str],
    *,
    split: str = "test",
    limit: int | None = None,
    root: Path = DEFAULT_ROOT,
) -> ClassDataset:
    """The `split` ("test": 10,000 images, or "train": 60,000; the first `limit` when given), 28x28
    grayscale shown as RGB."""
    if split not in _FILES:
        raise UserError(f"split={split!r} for {name!r}: expected one of {sorted(_FILES)}")
    images, labels = _arrays(root, split)
    n = len(labels) if limit is None else min(limit, len(labels))
    version = package_version(PACKAGE) if root == DEFAULT_ROOT else "local"
    return ClassDataset(
        name,
        f"debian:{version or 'unpackaged'};split={split}",
        [f"{split}/{i:05d}" for i in range(n)],
        labels[:n].tolist(),
        CLASS_NAMES,
        templates,
        _ArrayLoader(images[:n]),
    )
