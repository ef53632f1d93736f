"""`ModelSpec`: one validated model-zoo entry (what to load, from where, and how to pool it).

The schema follows MTEB's `ModelMeta` idea (a pydantic model with `extra="forbid"`): a typo in a YAML key
is an error, not a silently ignored setting. Layer convention (PRH, Huh et al. 2024): index 0 is the
embedding output (token/patch embeddings, or a CNN's stem), index i >= 1 the output of block (or stage) i;
`layers="all"` selects 0..num_layers.
"""

from __future__ import annotations

from typing import Literal

import pydantic
from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from platobench.files.ids import ID_RULE, MODEL_NAME_PATTERN, shown
from platobench.zoo.kinds import MODALITY_OF_KIND

Modality = Literal["text", "vision"]
Kind = Literal["causal_lm", "text_encoder", "vision_vit", "vision_cnn", "clip_text", "clip_image", "text_jepa"]
Loader = Literal["hf_causal", "hf_text", "hf_vision", "timm", "openclip", "efficientnet_lite", "baseline", "python"]
Pooling = Literal["avg", "last", "cls", "mean_patch"]
SourceType = Literal["hub", "timm", "openclip", "local", "packaged", "baseline", "python"]

PACKAGED_PREFIX = "packaged:"
# Negative controls built by platobench.encoders.baselines (loader "baseline"): the source names which one.
BASELINE_SOURCES = (
    "random-init:minilm-l6", "random-init:efficientnet-lite0", "bag-of-words:wordllama", "caption-length",
    "colour-histogram",
)

# Which kinds each loader can build ("python" is a user function and may build any kind).
KINDS_OF_LOADER: dict[str, frozenset[str]] = {
    "hf_causal": frozenset({"causal_lm"}),
    "hf_text": frozenset({"text_encoder", "text_jepa"}),
    "hf_vision": frozenset({"vision_vit"}),
    "timm": frozenset({"vision_vit", "vision_cnn"}),
    "openclip": frozenset({"clip_text", "clip_image"}),
    "efficientnet_lite": frozenset({"vision_cnn"}),
    "baseline": frozenset({"text_encoder", "vision_cnn"}),
    "python": frozenset(MODALITY_OF_KIND),
}
# Pooling of one layer's tokens into a vector. avg: mean over valid tokens (mask-aware) or, for CNNs,
# global average pooling; last: last valid token (causal LMs; CLIP's EOT token); cls: the [CLS]/class
# token; mean_patch: mean over patch tokens, CLS and register tokens excluded.
POOLINGS_OF_KIND: dict[str, frozenset[str]] = {
    "causal_lm": frozenset({"avg", "last"}),
    "text_encoder": frozenset({"avg", "cls"}),
    "text_jepa": frozenset({"avg", "cls"}),
    "clip_text": frozenset({"avg", "last"}),
    "vision_vit": frozenset({"cls", "mean_patch", "avg"}),
    "clip_image": frozenset({"cls", "mean_patch", "avg"}),
    "vision_cnn": frozenset({"avg"}),
}


def is_local_path(source: str) -> bool:
    """True for sources written as a filesystem path (absolute, ./, ../ or ~)."""
    return source.startswith(("/", "./", "../", "~")) or source in {".", ".."}


class ModelSpec(pydantic.BaseModel):
    """One model of the zoo. Immutable and hashable; unknown keys are rejected.

    name: timm-style "family/arch.tag", lowercase (e.g. "qwen2.5/qwen2.5-7b", "demo/minilm-l6").
    source: hub id | timm model name (with pretrained tag) | open_clip "ARCH/PRETRAINED" | local path |
        "packaged:<asset>" (offline pip weights, prepared under the cache root) | "module:function" (python) |
        one of BASELINE_SOURCES (loader "baseline": random-init architectures and static features).
    revision: pinned hub commit or tag; required for hub/timm/open_clip sources, None only for
        local, packaged, baseline and python sources.
    layers: "all" (embeddings + every block, PRH) or explicit indices (0 = embeddings).
    dtype: "auto" = bfloat16 on GPUs of compute capability >= 8, float32 otherwise (CPU included).
    image_size: override of the processor's input size in px (PRH runs DINOv2 lvd142m at 518).
    num_layers: number of blocks (transformer layers, or CNN stages), embeddings excluded; 0 only for a
        baseline whose single layer is a static feature, or a python encoder returning one layer (index 0).
    width: hidden size of the residual stream (final feature width for CNNs).
    params_m: parameter count in millions. license: SPDX id or the licence's name.
    trust_remote_code: the weights need Python code from their repository (a real boolean); it runs
        only for models named with `--trust-remote-code NAME` (see platobench.zoo.remote_code).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    modality: Modality
    kind: Kind
    loader: Loader
    source: str = Field(min_length=1)
    revision: str | None = None
    pooling: Pooling
    layers: Literal["all"] | tuple[StrictInt, ...] = "all"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    quantization: Literal["none", "8bit", "4bit"] = "none"
    image_size: StrictInt | None = Field(default=None, gt=0)
    num_layers: StrictInt | None = Field(default=None, ge=0)
    width: StrictInt | None = Field(default=None, gt=0)
    params_m: StrictFloat | None = Field(default=None, gt=0)
    license: str | None = None
    trust_remote_code: StrictBool = False
    notes: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not MODEL_NAME_PATTERN.match(name):
            raise ValueError(f"{shown(name)} is not a model name 'family/arch.tag' (each part: {ID_RULE}; no '__' or '--')")
        return name

    @field_validator("layers")
    @classmethod
    def _check_layers(cls, layers: Literal["all"] | tuple[int, ...]) -> Literal["all"] | tuple[int, ...]:
        if layers == "all":
            return layers
        if not layers:
            raise ValueError("an explicit layer list must not be empty (use 'all' for every layer)")
        if any(i < 0 for i in layers):
            raise ValueError(f"layer indices must be >= 0 (0 = embeddings), got {list(layers)}")
        if len(set(layers)) != len(layers):
            raise ValueError(f"layer indices must be unique, got {list(layers)}")
        return tuple(sorted(layers))

    @model_validator(mode="after")
    def _check_consistency(self) -> ModelSpec:
        if MODALITY_OF_KIND[self.kind] != self.modality:
            raise ValueError(
                f"kind {self.kind!r} is a {MODALITY_OF_KIND[self.kind]} model, but modality is {self.modality!r}"
            )
        if self.kind not in KINDS_OF_LOADER[self.loader]:
            allowed = ", ".join(sorted(KINDS_OF_LOADER[self.loader]))
            raise ValueError(f"loader {self.loader!r} cannot build kind {self.kind!r} (it builds: {allowed})")
        if self.pooling not in POOLINGS_OF_KIND[self.kind]:
            allowed = ", ".join(sorted(POOLINGS_OF_KIND[self.kind]))
            raise ValueError(f"pooling {self.pooling!r} does not apply to kind {self.kind!r} (use one of: {allowed})")
        source_type = self.source_type
        if source_type in {"hub", "timm", "openclip"} and not self.revision:
            raise ValueError(f"a {source_type} source needs a pinned 'revision' (a commit hash or a tag such as 'main')")
        if source_type in {"local", "packaged", "baseline", "python"} and self.revision is not None:
            raise ValueError(f"a {source_type} source has no hub revision; remove 'revision'")
        if self.loader == "baseline" and self.source not in BASELINE_SOURCES:
            raise ValueError(f"unknown baseline {self.source!r} (known: {', '.join(BASELINE_SOURCES)})")
        if self.num_layers == 0 and self.loader not in {"baseline", "python"}:
            raise ValueError("num_layers must be greater than 0 (only a static baseline or a python encoder "
                             "with one layer has 0 blocks)")
        if self.loader == "python" and (source_type != "python" or ":" not in self.source):
            raise ValueError(f"loader 'python' needs source 'module:function', got {self.source!r}")
        if self.image_size is not None and self.modality != "vision":
            raise ValueError("'image_size' applies only to vision models")
        if self.quantization != "none" and self.loader not in {"hf_causal", "hf_text"}:
            raise ValueError(f"quantization is only supported by the transformers text loaders, not {self.loader!r}")
        top = self.top_layer
        if self.layers != "all" and top is not None and max(self.layers) > top:
            raise ValueError(
                f"layer {max(self.layers)} does not exist: the model has {self.num_layers} blocks "
                f"(valid indices 0..{top})"
            )
        return self

    @property
    def top_layer(self) -> int | None:
        """Highest layer index features can have: `num_layers`, plus one for an open_clip tower's projected
        embedding; None while `num_layers` is unknown."""
        if self.num_layers is None:
            return None
        return self.num_layers + (1 if self.loader == "openclip" else 0)

    def extraction_problem(self) -> str | None:
        """Why features cannot be extracted with this entry (a field extraction needs is missing), or None.
        `zoo validate` reports it; extraction refuses the entry with it."""
        if self.num_layers is None:
            return (
                "field 'num_layers': required to extract features (the number of blocks or stages, "
                "embeddings excluded; it keys the feature cache)"
            )
        return None

    @property
    def source_type(self) -> SourceType:
        """How `source` is to be read: hub | timm | openclip | local | packaged | baseline | python."""
        if self.loader == "baseline":
            return "baseline"
        if self.source.startswith(PACKAGED_PREFIX):
            return "packaged"
        if is_local_path(self.source):
            return "local"
        if self.loader == "python":
            return "python"
        if self.loader == "timm":
            return "timm"
        if self.loader == "openclip":
            return "openclip"
        return "hub"

    @property
    def packaged_asset(self) -> str | None:
        """The asset id of a "packaged:<asset>" source (e.g. "minilm-l6"), else None."""
        return self.source[len(PACKAGED_PREFIX):] if self.source.startswith(PACKAGED_PREFIX) else None

    @property
    def family(self) -> str:
        """The part of the name before '/' (e.g. "qwen2.5")."""
        return self.name.split("/", 1)[0]

    def layer_ids(self, num_blocks: int) -> list[int]:
        """Resolve `layers` for a model with `num_blocks` blocks: indices into the [embeddings, block 1, ...,
        block num_blocks] stack. Raises ValueError for an index that does not exist."""
        if self.layers == "all":
            return list(range(num_blocks + 1))
        bad = [i for i in self.layers if i > num_blocks]
        if bad:
            raise ValueError(f"{self.name}: layers {bad} do not exist (valid indices 0..{num_blocks})")
        return list(self.layers)
