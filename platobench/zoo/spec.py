"""`ModelSpec`: one validated model-zoo entry (what to load, from where, and how to pool it).

The schema follows MTEB's `ModelMeta` idea (a pydantic model with `extra="forbid"`): a typo in a YAML key
is an error, not a silently ignored setting. Layer convention (PRH, Huh et al. 2024): index 0 is the
embedding output (token/patch embeddings, or a CNN's stem), index i >= 1 the output of block (or stage) i;
`layers="all"` selects 0..num_layers.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic
from pydantic import (
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    field_validator,
    model_validator,
)

from platobench.files.ids import ID_RULE, MODEL_NAME_PATTERN, shown
from platobench.zoo.support import (
    BASELINE_SOURCES,
    LOADERS,
    MODALITY_OF_KIND,
    kind_support,
    loader_support,
)

# The Literals below list the names `platobench.zoo.support` declares (tests/zoo/test_loader_support.py
# checks that they agree); what each loader and kind supports is read from there. Loaders are open (a plugin
# registers its own in `support.LOADERS`): `loader` is any registered name, checked by `loader_support`.
Modality = Literal["text", "vision"]
Kind = Literal["causal_lm", "text_encoder", "vision_vit", "vision_cnn", "clip_text", "clip_image", "text_jepa"]
Pooling = Literal["avg", "last", "cls", "mean_patch"]
SourceType = Literal["hub", "timm", "openclip", "local", "packaged", "baseline", "python"]

PACKAGED_PREFIX = "packaged:"
BASELINE_FAMILY = "baseline"  # reserved to loader "baseline": the negative controls of every verdict

# Physical bounds of a zoo entry's counts (docs/models.md): the largest published models have ~100
# blocks, residual streams of ~3*10^4 and ~2*10^6 M parameters, so these leave room by orders of magnitude
# while keeping every count small enough to plan with (a typo of 10^12 blocks is refused by `zoo validate`).
MAX_NUM_LAYERS = 4096
MAX_WIDTH = 1 << 20
MAX_IMAGE_SIZE = 8192
MAX_PARAMS_M = 1e7
#: The highest explicit layer index: block MAX_NUM_LAYERS plus a loader's extra layers (a projection).
MAX_LAYER_INDEX = MAX_NUM_LAYERS + 1


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
    max_tokens: text models: truncate every input at this many tokens (special tokens included), as
        sentence-transformers does with its `max_seq_length` (all-MiniLM-L6-v2 256, all-mpnet-base-v2 384).
        None: the tokenizer's own limit (`model_max_length`, at most the model's `max_position_embeddings`
        and 8192). Encoders with a fixed context (open_clip: 77) ignore it; `truncation` says what is used.
    num_layers: number of blocks (transformer layers, or CNN stages), embeddings excluded; 0 only for a
        baseline whose single layer is a static feature, or a python encoder returning one layer (index 0).
    width: hidden size of the residual stream (final feature width for CNNs).
    params_m: parameter count in millions. license: SPDX id or the licence's name.
    trust_remote_code: the weights need Python code from their repository (a real boolean); it runs
        only for models named with `--trust-remote-code NAME` (see platobench.zoo.remote_code).
    trained_on: disclosure, the datasets the weights were trained or fine-tuned on, as the model card names
        them (None: not stated); a board whose dataset one of them names is marked (`flags.py`).
    fitted_on_eval: disclosure, the model was fitted on the data it is evaluated on (a TF-IDF vocabulary of
        the evaluation captions, a projection learnt on the board's images): true, false, or None (not
        stated). Every board marks it.
    The family `baseline/` is reserved to `loader: baseline` (the built-in negative controls that verdicts
    compare against), and those are the only entries of that loader.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    modality: Modality
    kind: Kind
    loader: str
    source: str = Field(min_length=1)
    revision: str | None = None
    pooling: Pooling
    layers: Literal["all"] | tuple[StrictInt, ...] = "all"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    quantization: Literal["none", "8bit", "4bit"] = "none"
    image_size: StrictInt | None = Field(default=None, gt=0, le=MAX_IMAGE_SIZE)
    max_tokens: StrictInt | None = Field(default=None, gt=0, le=1 << 20)
    num_layers: StrictInt | None = Field(default=None, ge=0, le=MAX_NUM_LAYERS)
    width: StrictInt | None = Field(default=None, gt=0, le=MAX_WIDTH)
    params_m: StrictFloat | None = Field(default=None, gt=0, le=MAX_PARAMS_M, allow_inf_nan=False)
    license: str | None = None
    trust_remote_code: StrictBool = False
    trained_on: tuple[Annotated[str, StringConstraints(min_length=1, max_length=200)], ...] | None = Field(
        default=None, max_length=200)
    fitted_on_eval: StrictBool | None = None
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
        if max(layers) > MAX_LAYER_INDEX:
            raise ValueError(f"layer index {max(layers)} is above {MAX_LAYER_INDEX}, the most a model can have "
                             f"(num_layers is at most {MAX_NUM_LAYERS}, plus one projection)")
        if len(set(layers)) != len(layers):
            raise ValueError(f"layer indices must be unique, got {list(layers)}")
        return tuple(sorted(layers))

    @model_validator(mode="after")
    def _check_consistency(self) -> ModelSpec:
        kind, support = kind_support(self.kind), loader_support(self.loader)
        if kind.modality != self.modality:
            raise ValueError(f"kind {self.kind!r} is a {kind.modality} model, but modality is {self.modality!r}")
        if self.kind not in support.kinds:
            allowed = ", ".join(sorted(support.kinds))
            raise ValueError(f"loader {self.loader!r} cannot build kind {self.kind!r} (it builds: {allowed})")
        if self.pooling not in kind.poolings:
            allowed = ", ".join(sorted(kind.poolings))
            raise ValueError(f"pooling {self.pooling!r} does not apply to kind {self.kind!r} (use one of: {allowed})")
        if self.pooling not in support.poolings:
            allowed = ", ".join(sorted(support.poolings & kind.poolings))
            raise ValueError(f"loader {self.loader!r} does not implement pooling {self.pooling!r} (use one of: {allowed})")
        source_type = self.source_type
        if source_type in {"hub", "timm", "openclip"} and not self.revision:
            raise ValueError(f"a {source_type} source needs a pinned 'revision' (a commit hash or a tag such as 'main')")
        if source_type in {"local", "packaged", "baseline", "python"} and self.revision is not None:
            raise ValueError(f"a {source_type} source has no hub revision; remove 'revision'")
        if support.sources and self.source not in support.sources:
            raise ValueError(f"unknown {support.source_type} {self.source!r} (known: {', '.join(support.sources)})")
        if (self.family == BASELINE_FAMILY) != (self.loader == "baseline"):
            raise ValueError(f"the family '{BASELINE_FAMILY}/' is reserved to the built-in negative controls (loader "
                             f"'baseline'), which verdicts compare every pair against; name this entry in another "
                             "family" if self.loader != "baseline" else
                             f"a 'baseline' loader entry must be named '{BASELINE_FAMILY}/...'")
        if self.num_layers == 0 and not support.no_blocks:
            static = ", ".join(s.loader for s in LOADERS.values() if s.no_blocks)
            raise ValueError(f"num_layers must be greater than 0 (only a static encoder with one layer has 0 blocks; "
                             f"loaders that allow it: {static})")
        if self.loader == "python" and (source_type != "python" or ":" not in self.source):
            raise ValueError(f"loader 'python' needs source 'module:function', got {self.source!r}")
        if self.loader == "features" and not is_local_path(self.source):
            raise ValueError(f"loader 'features' needs a file path as source ('./emb.safetensors' is relative to the "
                             f"zoo file; '/', '../' and '~' work too), got {self.source!r}")
        if self.image_size is not None and self.modality != "vision":
            raise ValueError("'image_size' applies only to vision models")
        if self.max_tokens is not None and not support.max_tokens:
            able = ", ".join(s.loader for s in LOADERS.values() if s.max_tokens)
            raise ValueError(f"loader {self.loader!r} does not truncate at 'max_tokens' (loaders that do: {able})")
        if self.quantization not in support.quantization:
            able = ", ".join(s.loader for s in LOADERS.values() if self.quantization in s.quantization)
            raise ValueError(f"quantization {self.quantization!r} is not supported by loader {self.loader!r} "
                             f"(loaders that support it: {able})")
        if self.dtype not in support.dtypes:
            raise ValueError(f"dtype {self.dtype!r} is not supported by loader {self.loader!r} "
                             f"(use one of: {', '.join(sorted(support.dtypes))})")
        top = self.top_layer
        if self.layers != "all" and top is not None and max(self.layers) > top:
            raise ValueError(
                f"layer {max(self.layers)} does not exist: the model has {self.num_layers} blocks "
                f"(valid indices 0..{top}{self._extra_layers_note()})"
            )
        return self

    def _extra_layers_note(self) -> str:
        """The suffix "; N: <name>" for each layer the loader returns after block `num_layers` (set)."""
        extra = loader_support(self.loader).extra_layers
        return "".join(f"; {self.num_layers + i}: {name}" for i, name in enumerate(extra, start=1))

    @property
    def top_layer(self) -> int | None:
        """Highest layer index features can have: `num_layers` plus the loader's declared extra layers
        (an open_clip tower's projected embedding); None while `num_layers` is unknown."""
        if self.num_layers is None:
            return None
        return self.num_layers + len(loader_support(self.loader).extra_layers)

    def extraction_problem(self) -> str | None:
        """Why features cannot be extracted with this entry (a field extraction needs is missing), or None.
        `zoo validate` reports it; extraction refuses the entry with it."""
        if self.num_layers is None:
            extra = loader_support(self.loader).extra_layers
            after = "".join(f"; index num_layers + {i} is the {name}" for i, name in enumerate(extra, start=1))
            return (
                "field 'num_layers': required to extract features (the number of blocks or stages, "
                f"embeddings excluded{after}; it keys the feature cache)"
            )
        return None

    @property
    def truncation(self) -> str:
        """Where text inputs are cut, in words (`zoo show`); "-" for vision models."""
        if self.modality != "text" or self.loader == "features":  # read from a file: nothing is tokenized
            return "-"
        if self.max_tokens is not None:
            return f"{self.max_tokens} tokens (max_tokens)"
        return "the tokenizer's model_max_length (at most max_position_embeddings and 8192)"

    @property
    def source_type(self) -> SourceType:
        """How `source` is to be read: hub | timm | openclip | local | packaged | baseline | python."""
        support = loader_support(self.loader)
        if support.sources:  # a closed set of names (baselines): never a path or a packaged asset
            return support.source_type  # type: ignore[return-value]  # declared as a SourceType
        if self.source.startswith(PACKAGED_PREFIX):
            return "packaged"
        if is_local_path(self.source):
            return "local"
        return support.source_type  # type: ignore[return-value]

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


__all__ = [
    "BASELINE_SOURCES", "MODALITY_OF_KIND", "PACKAGED_PREFIX", "Kind", "Modality", "ModelSpec", "Pooling",
    "SourceType", "is_local_path",
]
