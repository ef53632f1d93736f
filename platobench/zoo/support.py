"""What each encoder loader supports, declared once: plain frozen data, importable without torch or pydantic.

`KINDS` holds the facts of a model kind (modality, the poolings that apply to its tokens, how plots draw
it); `LOADERS` (a `platobench.registry.Registry`) holds one `LoaderSupport` per zoo `loader` (its module, the
kinds it builds, the poolings it implements, layers it has beyond `num_layers`, quantisation, dtype policies,
how its `source` is read). The zoo schema
(`ModelSpec` validation, `top_layer`), `encoders.layer_ids_of` and the leaderboard plots read these tables;
`zoo list`/`--help` import them without loading any model code.

Pooling names: avg (mean over valid tokens, mask-aware, or a CNN's global average pool), last (last valid
token: causal LMs, CLIP's EOT token), cls (the [CLS]/class token), mean_patch (mean over patch tokens, CLS
and register tokens excluded).
"""

from __future__ import annotations

from dataclasses import dataclass

from platobench.dtypes import DTYPE_NAMES
from platobench.registry import Registry

#: The dtype policies a zoo entry can name ("auto" = bfloat16 on GPUs of compute capability >= 8, else float32).
DTYPE_POLICIES = ("auto", *DTYPE_NAMES)
#: Bitsandbytes quantisation modes a zoo entry can name ("none" = full weights).
QUANTIZATIONS = ("none", "8bit", "4bit")
#: Negative controls built by platobench.encoders.baselines (loader "baseline"): the source names which one.
BASELINE_SOURCES = (
    "random-init:minilm-l6", "random-init:efficientnet-lite0", "bag-of-words:wordllama", "caption-length",
    "colour-histogram",
)


@dataclass(frozen=True)
class KindSupport:
    """A model kind. modality: "text" | "vision". poolings: the poolings that apply to its tokens.
    family/marker/marker_size: how the leaderboard's size plot draws a language model of this kind (legend
    family name, matplotlib marker and size in points); None for kinds no size plot shows."""

    kind: str
    modality: str
    poolings: frozenset[str]
    family: str
    marker: str | None = None
    marker_size: int = 6


@dataclass(frozen=True)
class LoaderSupport:
    """What one loader (`loader:` in the zoo) supports, and where it lives.

    module: the module whose `load(spec, *, device, dtype, home)` builds the encoder (imported when a model
    of this loader is loaded, so declaring it here costs no torch import).

    kinds: the kinds it can build. poolings: the poolings it implements (an entry's pooling must also apply
    to its kind). extra_layers: names of the layers it returns after block `num_layers`, in index order
    (open_clip: the projected embedding, index num_layers + 1). quantization / dtypes: the `quantization`
    and `dtype` values it honours. no_blocks: `num_layers: 0` is allowed (a single static layer, index 0).
    source_type: how a `source` that is neither "packaged:<asset>" nor a path is read (hub | timm | openclip
    | python | baseline). sources: the closed set of sources it takes (every source is then read as
    `source_type`), or () for any. max_tokens: it truncates text at an entry's `max_tokens`.
    """

    loader: str
    module: str
    kinds: frozenset[str]
    poolings: frozenset[str]
    source_type: str
    extra_layers: tuple[str, ...] = ()
    quantization: frozenset[str] = frozenset({"none"})
    dtypes: frozenset[str] = frozenset(DTYPE_POLICIES)
    no_blocks: bool = False
    sources: tuple[str, ...] = ()
    max_tokens: bool = False


_TEXT_POOLINGS = frozenset({"avg", "last", "cls"})
_VIT_POOLINGS = frozenset({"cls", "mean_patch", "avg"})

# Order matters: it is the order of `zoo list --kind` choices.
KINDS: dict[str, KindSupport] = {k.kind: k for k in (
    KindSupport("causal_lm", "text", frozenset({"avg", "last"}), "LLMs", "o"),
    KindSupport("text_encoder", "text", frozenset({"avg", "cls"}), "text encoders", "s"),
    KindSupport("clip_text", "text", frozenset({"avg", "last"}), "CLIP text towers", "^"),
    KindSupport("text_jepa", "text", frozenset({"avg", "cls"}), "text JEPAs", "*", marker_size=8),
    KindSupport("vision_vit", "vision", _VIT_POOLINGS, "vision transformers"),
    KindSupport("vision_cnn", "vision", frozenset({"avg"}), "CNNs"),
    KindSupport("clip_image", "vision", _VIT_POOLINGS, "CLIP image towers"),
)}

#: Every loader by name: the built-ins below, and those plugins register (`platobench.registry`; a plugin
#: registers `LoaderSupport(loader=..., module="its_package.its_loader", ...)`).
LOADERS: Registry[LoaderSupport] = Registry("loader")
for _support in (
    LoaderSupport("hf_causal", "platobench.encoders.hf_causal", frozenset({"causal_lm"}), _TEXT_POOLINGS, "hub",
                  quantization=frozenset(QUANTIZATIONS), max_tokens=True),
    LoaderSupport("hf_text", "platobench.encoders.hf_text", frozenset({"text_encoder", "text_jepa"}), _TEXT_POOLINGS,
                  "hub", quantization=frozenset(QUANTIZATIONS), max_tokens=True),
    LoaderSupport("hf_vision", "platobench.encoders.hf_vision", frozenset({"vision_vit"}), _VIT_POOLINGS, "hub"),
    LoaderSupport("timm", "platobench.encoders.timm_vision", frozenset({"vision_vit", "vision_cnn"}), _VIT_POOLINGS,
                  "timm"),
    LoaderSupport("openclip", "platobench.encoders.openclip", frozenset({"clip_text", "clip_image"}),
                  _TEXT_POOLINGS | _VIT_POOLINGS, "openclip", extra_layers=("projected embedding",)),
    LoaderSupport("efficientnet_lite", "platobench.encoders.efficientnet_lite", frozenset({"vision_cnn"}),
                  frozenset({"avg"}), "hub"),
    LoaderSupport("baseline", "platobench.encoders.baselines", frozenset({"text_encoder", "vision_cnn"}),
                  frozenset({"avg", "cls"}), "baseline", no_blocks=True, sources=BASELINE_SOURCES),
    # The user's own code: any kind, pooled (or not) by that code.
    LoaderSupport("python", "platobench.encoders.python_loader", frozenset(KINDS), _TEXT_POOLINGS | _VIT_POOLINGS,
                  "python", no_blocks=True),
    # Embeddings computed elsewhere, read from a local file (platobench.encoders.precomputed): any kind,
    # pooled by whoever computed them; float32 whatever the device.
    LoaderSupport("features", "platobench.encoders.precomputed", frozenset(KINDS), _TEXT_POOLINGS | _VIT_POOLINGS,
                  "local", no_blocks=True, dtypes=frozenset({"auto", "float32"})),
):
    LOADERS.register(_support.loader, _support)

MODALITY_OF_KIND: dict[str, str] = {k.kind: k.modality for k in KINDS.values()}


def loader_support(loader: str) -> LoaderSupport:
    """The declaration of `loader`; ValueError naming the known loaders for any other name."""
    if loader not in LOADERS:
        raise ValueError(f"unknown loader {loader!r} (known: {', '.join(LOADERS.names())})")
    return LOADERS.get(loader)


def kind_support(kind: str) -> KindSupport:
    """The declaration of `kind`; ValueError naming the known kinds for any other name."""
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})") from None


__all__ = [
    "BASELINE_SOURCES", "DTYPE_POLICIES", "KINDS", "LOADERS", "MODALITY_OF_KIND", "QUANTIZATIONS", "KindSupport",
    "LoaderSupport", "kind_support", "loader_support",
]
