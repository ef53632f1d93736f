"""`loader: python`: encoders written by the user, named in a zoo entry as `source: module:name`.

The simple protocol (like MTEB's `encode`): `name` is a class (instantiated with no arguments) or an
object with a method

    encode(texts: list[str]) -> array [N, L, D]                    (modality: text)
    encode(images: list[PIL.Image.Image]) -> array [N, L, D]       (modality: vision; RGB, any size)

returning a numpy array or a torch tensor (any real dtype, any device): one row per input, L layers of width
D. The first layer is layer 0 (the embeddings' place), so the entry's `num_layers` is L - 1; a [N, D]
array is one layer (`num_layers: 0`); a list of L arrays [N, D_l] gives layers of different widths.
Optional: `token_lengths(texts) -> list[int]` orders texts into length buckets (default: characters);
the encoder does its own tokenisation and picks its own device. platobench batches the inputs, converts
the output to float32 on the CPU, keeps the layers the entry selects (`layers:`) and checks every call
(`SimpleEncodeError` subclasses, one line each): the output is not an array of real numbers (a tensor on
the meta device holds none), has another rank, another N, another L, a layer of width 0, NaN/inf, or
widths other than those of the probe call made at load time.

The internal protocol still works: `name` is a function called as (spec, device=, dtype=, home=) that
returns a `TextEncoder` / `VisionEncoder` (see platobench.encoders.base) or an object of the simple
protocol (a way to receive `--device`).

Importing the module runs it, so `load` refuses a model the user did not name with `--trust-code MODEL`
(or submit with `platobench submit FILE`; see platobench.zoo.python_code). The features' cache key is
computed without importing anything (platobench.encoders.python_source): it hashes the module's .py file,
the __init__.py of each package along its dotted name, and, followed with `ast` through `import` and
`from ... import` statements (relative ones included, transitively), every imported module whose .py file
lies outside the standard library, site-packages and platobench, so editing a helper module the encoder
imports changes the key. Modules loaded by `importlib.import_module` and data files are not hashed.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import PIL.Image
import torch

from platobench.encoders import layer_ids_of
from platobench.encoders.base import EncoderOutputError, TextEncoder, VisionEncoder, to_output
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.zoo.python_code import check_trusted
from platobench.zoo.spec import ModelSpec

PROBE_TEXTS = ("a red bird on a branch", "two people walking a dog in the park")


class SimpleEncodeError(EncoderOutputError):
    """A simple-protocol encoder's `encode` returned something unusable."""


class EncodeTypeError(SimpleEncodeError):
    """The output is not a numpy array / torch tensor (or a list of them) of real numbers."""


class EncodeRankError(SimpleEncodeError):
    """The output is not [N, L, D] or [N, D] (or a list of [N, D_l])."""


class EncodeBatchSizeError(SimpleEncodeError):
    """The output's first axis is not the number of inputs."""


class EncodeLayerCountError(SimpleEncodeError):
    """The output has another number of layers than num_layers + 1."""


class EncodeEmptyLayerError(SimpleEncodeError):
    """A layer has width 0 (no feature)."""


class EncodeNonFiniteError(SimpleEncodeError):
    """The output holds NaN or inf (after conversion to float32)."""


class EncodeWidthChangedError(SimpleEncodeError):
    """A layer's width differs from the one of the probe call made at load time."""


def probe_images() -> list[PIL.Image.Image]:
    """Two small RGB images (a grey square and a horizontal gradient) for the load-time probe call."""
    ramp = np.tile(np.linspace(0, 255, 48, dtype=np.uint8)[None, :, None], (32, 1, 3))
    return [PIL.Image.new("RGB", (32, 32), (128, 128, 128)), PIL.Image.fromarray(ramp, "RGB")]


def _as_tensor(model: str, value: Any, what: str) -> torch.Tensor:
    """A tensor (detached, any device) or anything numpy reads as real numbers (as float32) -> tensor."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise EncodeTypeError(f"model {model}: {what} has dtype {value.dtype}; expected real numbers")
        if value.is_meta:
            raise EncodeTypeError(f"model {model}: {what} is a tensor on the meta device (a shape without data: "
                                  "were the weights never loaded?); expected computed features")
        return value.detach()
    try:
        array = np.asarray(value)
    except Exception:  # whatever the conversion raises, the value is not an array
        array = None
    if array is None or array.dtype.kind not in "iuf":
        kind = type(value).__name__ if array is None else f"{type(value).__name__} of dtype {array.dtype}"
        raise EncodeTypeError(f"model {model}: {what} is a {kind}; expected a numpy array or torch tensor "
                              "[N, L, D] of real numbers")
    with np.errstate(over="ignore", invalid="ignore"):  # values past float32's range become inf: refused below
        return torch.from_numpy(array.astype(np.float32))


def output_layers(model: str, out: Any, n: int, num_layers: int) -> list[torch.Tensor]:
    """A simple encoder's output for `n` inputs -> the L = num_layers + 1 layers as float32 CPU [n, D_l]
    tensors; a `SimpleEncodeError` subclass names the first problem."""
    if isinstance(out, (list, tuple)):
        layers = [_as_tensor(model, o, f"layer {i} of encode's output") for i, o in enumerate(out)]
        bad = next((i for i, t in enumerate(layers) if t.ndim != 2), None)
        if bad is not None:
            raise EncodeRankError(f"model {model}: layer {bad} of encode's list has shape {tuple(layers[bad].shape)}; "
                                  "expected [N, D] per layer")
    else:
        array = _as_tensor(model, out, "encode's output")
        if array.ndim not in (2, 3):
            raise EncodeRankError(f"model {model}: encode returned shape {tuple(array.shape)} (rank {array.ndim}); "
                                  "expected [N, L, D] or [N, D]")
        layers = [array] if array.ndim == 2 else list(array.unbind(1))
    rows = {t.shape[0] for t in layers}
    if rows != {n}:
        raise EncodeBatchSizeError(f"model {model}: encode returned {sorted(rows)} rows for {n} inputs; "
                                   "expected one row per input, in order")
    if len(layers) != num_layers + 1:
        raise EncodeLayerCountError(
            f"model {model}: encode returned {len(layers)} layers but the entry's num_layers: {num_layers} needs "
            f"{num_layers + 1} (layer 0 plus num_layers); set num_layers: {len(layers) - 1}")
    empty = next((i for i, t in enumerate(layers) if t.shape[1] == 0), None)
    if empty is not None:
        raise EncodeEmptyLayerError(f"model {model}: layer {empty} of encode's output has width 0 (shape "
                                    f"{tuple(layers[empty].shape)}); every layer needs at least one feature")
    layers = [to_output(t) for t in layers]
    bad = next((i for i, t in enumerate(layers) if not torch.isfinite(t).all()), None)
    if bad is not None:
        raise EncodeNonFiniteError(f"model {model}: layer {bad} of encode's output holds NaN or inf "
                                   "(after conversion to float32)")
    return layers


class _Simple:
    """What both wrappers share: call the user's encode, check it, keep the entry's layers."""

    spec: ModelSpec
    layer_ids: list[int]
    widths: list[int]

    def _setup(self, spec: ModelSpec, user: Any, device: torch.device, probe: list[Any]) -> None:
        self.spec, self.user, self.device = spec, user, device
        self.layer_ids = layer_ids_of(spec)  # UserError while num_layers is missing
        self._num_layers = spec.num_layers or 0
        self._all_widths: list[int] | None = None
        with torch.no_grad():
            try:
                self.widths = [t.shape[1] for t in self.run(probe)]
            except (AttributeError, TypeError) as exc:  # typically a text encoder given images, or the reverse
                given = "strings" if spec.modality == "text" else "PIL images"
                other = "vision" if spec.modality == "text" else "text"
                raise UserError(
                    f"model {spec.name}: {spec.source} failed on the load-time probe call encode(<2 {given}>) "
                    f"with {type(exc).__name__}: {exc}; the entry declares modality {spec.modality} (kind "
                    f"{spec.kind}), so encode receives {given}: if it encodes {other} inputs, declare "
                    f"modality: {other} with a {other} kind"
                ) from exc

    def run(self, inputs: list[Any]) -> list[torch.Tensor]:
        """User encode on `inputs` -> one float32 CPU [len(inputs), D_l] tensor per entry of layer_ids."""
        layers = output_layers(self.spec.name, self.user.encode(inputs), len(inputs), self._num_layers)
        widths = [t.shape[1] for t in layers]
        if self._all_widths is None:
            self._all_widths = widths
        elif widths != self._all_widths:
            layer = next(i for i, (a, b) in enumerate(zip(widths, self._all_widths)) if a != b)
            raise EncodeWidthChangedError(
                f"model {self.spec.name}: layer {layer} has width {widths[layer]} in this call but "
                f"{self._all_widths[layer]} in the probe call; the width must not depend on the inputs")
        return [layers[i] for i in self.layer_ids]


class SimpleTextEncoder(_Simple, TextEncoder):
    """A user object with `encode(texts) -> [N, L, D]` as a TextEncoder; a "batch" is the texts themselves."""

    def __init__(self, spec: ModelSpec, user: Any, device: torch.device) -> None:
        self._setup(spec, user, device, list(PROBE_TEXTS))

    def tokenize(self, texts: list[str]) -> dict[str, Any]:  # type: ignore[override]
        return {"texts": list(texts)}

    def token_lengths(self, texts: list[str]) -> list[int]:
        if not hasattr(self.user, "token_lengths"):
            return [len(t) for t in texts]
        lengths = list(self.user.token_lengths(texts))
        if len(lengths) != len(texts) or not all(isinstance(x, (int, np.integer)) for x in lengths):
            raise SimpleEncodeError(f"model {self.spec.name}: token_lengths returned {shown(lengths)} for "
                                    f"{len(texts)} texts; expected one int per text")
        return [int(x) for x in lengths]

    def encode(self, batch: dict[str, Any]) -> list[torch.Tensor]:  # type: ignore[override]
        return self.run(batch["texts"])


class ImageBatch(list):
    """A batch of PIL images that, like a tensor, can be indexed by a list of row positions."""

    def __getitem__(self, index: Any) -> Any:  # type: ignore[override]
        if isinstance(index, (list, tuple)):
            return ImageBatch(list.__getitem__(self, i) for i in index)
        return list.__getitem__(self, index)


def keep_image(image: PIL.Image.Image) -> PIL.Image.Image:
    """The simple protocol's transform: the RGB image unchanged."""
    return image


def collate_images(images: Sequence[PIL.Image.Image]) -> ImageBatch:
    """DataLoader collate_fn of the simple protocol: the images as a list, not stacked pixels."""
    return ImageBatch(images)


class SimpleVisionEncoder(_Simple, VisionEncoder):
    """A user object with `encode(images) -> [N, L, D]` as a VisionEncoder; `transform` keeps the PIL image and
    `collate` makes the DataLoader batch lists of images."""

    transform = staticmethod(keep_image)
    collate = staticmethod(collate_images)

    def __init__(self, spec: ModelSpec, user: Any, device: torch.device) -> None:
        self._setup(spec, user, device, probe_images())

    def encode(self, pixels: ImageBatch) -> list[torch.Tensor]:  # type: ignore[override]
        return self.run(list(pixels))


def is_simple(obj: Any) -> bool:
    """True for an object of the simple protocol: a callable `encode`, and not an internal encoder (nor a
    string, whose `str.encode` is no feature encoder)."""
    if isinstance(obj, (str, bytes, TextEncoder, VisionEncoder)):
        return False
    return callable(getattr(obj, "encode", None))


def wrap(spec: ModelSpec, user: Any, device: torch.device) -> TextEncoder | VisionEncoder:
    """The simple-protocol object `user` as the internal encoder of `spec`'s modality (one probe call)."""
    cls = SimpleTextEncoder if spec.modality == "text" else SimpleVisionEncoder
    return cls(spec, user, device)


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None
         ) -> TextEncoder | VisionEncoder:
    """Import `spec.source` ("module:name") and build its encoder (see the module docstring); UserError
    before any import unless the user trusts the model (`--trust-code`)."""
    check_trusted(spec)
    module_name, _, attr = spec.source.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"model {spec.name}: cannot import {spec.source!r} ({exc})") from exc
    internal = inspect.isclass(target) and issubclass(target, (TextEncoder, VisionEncoder))
    if internal:
        _check_modality(spec, target)
    if inspect.isclass(target) and not internal:
        try:
            inspect.signature(target).bind()
        except (TypeError, ValueError) as exc:
            raise UserError(f"model {spec.name}: {spec.source} must be constructible with no arguments ({exc}); "
                            "or name a function (spec, device, dtype, home) that builds it") from exc
        return wrap(spec, target(), device)
    if not internal and is_simple(target):
        return wrap(spec, target, device)
    if not callable(target):
        raise UserError(f"model {spec.name}: {spec.source} is of type {type(target).__name__}; expected a class or object "
                        "with encode(...), or a function returning an encoder")
    encoder = target(spec, device=device, dtype=dtype, home=home)
    if is_simple(encoder):
        return wrap(spec, encoder, device)
    if not isinstance(encoder, (TextEncoder, VisionEncoder)):
        raise UserError(f"model {spec.name}: {spec.source} returned {type(encoder).__name__}, not an encoder "
                        "(a TextEncoder / VisionEncoder, or an object with encode(...))")
    _check_modality(spec, type(encoder))
    return encoder


def _check_modality(spec: ModelSpec, cls: type) -> None:
    """UserError when internal encoder class `cls` (a TextEncoder or VisionEncoder) is not of the entry's
    modality, before extraction calls methods the other modality's encoder lacks."""
    modality = "text" if issubclass(cls, TextEncoder) else "vision"
    if modality != spec.modality:
        raise UserError(
            f"model {spec.name}: {spec.source} builds {cls.__name__}, a {modality} encoder, but the entry "
            f"declares modality {spec.modality} (kind {spec.kind}); declare modality: {modality} with a "
            f"{modality} kind, or point source at a {spec.modality} encoder"
        )
