"""Prepared weights are re-verified before every load: a changed, missing or added file under
`<home>/models/<asset>/` is refused by name with the command that converts it again, a file whose
mtime alone changed is re-hashed once and then served from the digest cache, and every loader reaches
the prepared folders through `packaged.prepare` (which verifies)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from platobench import cli
from platobench.encoders import packaged
from platobench.encoders.sources import local_path
from platobench.errors import UserError
from platobench.zoo import load_zoo

ASSET = "minilm-l6"  # the fastest asset to prepare: a copied folder, no conversion
WEIGHTS = "model.safetensors"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A prepared minilm-l6 in a temporary home (the real home is never the default either)."""
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "default-home"))
    packaged.prepare(ASSET, tmp_path / "home")
    return tmp_path / "home"


def scale_weights(path: Path, factor: float = 1.05) -> None:
    """Every float tensor of a safetensors file times `factor`: same keys, shapes, dtypes and file size."""
    size = path.stat().st_size
    with safe_open(str(path), "np") as weights:
        metadata = weights.metadata()
        tensors = {k: weights.get_tensor(k) for k in weights.keys()}
    scaled = {k: np.asarray(v * factor, dtype=v.dtype) if v.dtype.kind == "f" else v for k, v in tensors.items()}
    save_file(scaled, str(path), metadata=metadata)
    assert path.stat().st_size == size


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `packaged.sha256_of` reads from now on."""
    seen: list[Path] = []
    real = packaged.sha256_of

    def counting(path: Path, chunk: int = 1 << 20) -> str:
        seen.append(Path(path))
        return real(path, chunk)

    monkeypatch.setattr(packaged, "sha256_of", counting)
    return seen


def test_prepare_records_the_digest_of_every_prepared_file(home):
    folder = packaged.prepared_dir(ASSET, home)
    files = json.loads((folder / packaged.MARKER).read_text())["files"]
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                     if p.is_file() and p.name not in (packaged.MARKER, packaged.VERIFIED))
    assert sorted(files) == on_disk and WEIGHTS in files
    assert files[WEIGHTS] == packaged.ASSETS[ASSET].sha256 == packaged.sha256_of(folder / WEIGHTS)


def test_scaled_weights_are_refused_by_every_load_naming_the_file(home, capsys):
    folder = packaged.prepared_dir(ASSET, home)
    scale_weights(folder / WEIGHTS)
    message = rf"{re.escape(str(folder / WEIGHTS))} has sha256 [0-9a-f]{{64}}, prepare recorded {packaged.ASSETS[ASSET].sha256}"
    command = f"platobench prepare --force {ASSET} --home {home}"
    with pytest.raises(UserError, match=message) as caught:
        packaged.prepare(ASSET, home)
    assert command in str(caught.value) and isinstance(caught.value, packaged.PreparedModifiedError)
    with pytest.raises(UserError, match=message):  # what every zoo loader calls
        local_path(load_zoo().get("demo/minilm-l6"), home)
    assert cli.main(["prepare", ASSET, "--home", str(home)]) == 2
    out, err = capsys.readouterr()
    assert "ready" not in out and "already prepared" not in err
    assert str(folder / WEIGHTS) in err and command in err
    assert cli.main(["prepare", "--list", ASSET, "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    assert re.search(rf"^{ASSET} +modified ", out, re.M) and str(folder / WEIGHTS) in err
    assert cli.main(["prepare", "--force", ASSET, "--home", str(home)]) == 0  # the command the message names
    assert packaged.sha256_of(folder / WEIGHTS) == packaged.ASSETS[ASSET].sha256
    assert packaged.prepare(ASSET, home) == folder


def test_touched_mtime_is_rehashed_once_then_cached(home, monkeypatch):
    folder = packaged.prepared_dir(ASSET, home)
    hashed = count_hashes(monkeypatch)
    assert packaged.verify_prepared(ASSET, home) and hashed == []  # prepare left the cache filled
    stat = (folder / WEIGHTS).stat()
    os.utime(folder / WEIGHTS, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert packaged.prepare(ASSET, home) == folder  # same content: accepted
    assert hashed == [folder / WEIGHTS]  # only the touched file was read again
    assert packaged.verify_prepared(ASSET, home) and packaged.prepare(ASSET, home) == folder
    assert hashed == [folder / WEIGHTS]  # and from then on served from the cache


def test_tampering_that_restores_the_mtime_is_still_caught(home):
    folder = packaged.prepared_dir(ASSET, home)
    packaged.prepare(ASSET, home)
    stat = (folder / WEIGHTS).stat()
    scale_weights(folder / WEIGHTS)
    os.utime(folder / WEIGHTS, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # size and mtime as before
    with pytest.raises(UserError, match="has sha256"):
        packaged.prepare(ASSET, home)


def test_a_torn_digest_cache_only_costs_one_full_hash(home, monkeypatch):
    folder = packaged.prepared_dir(ASSET, home)
    (folder / packaged.VERIFIED).write_text('{"model.safetensors": {"st')  # a write cut by a kill
    hashed = count_hashes(monkeypatch)
    assert packaged.prepare(ASSET, home) == folder
    files = json.loads((folder / packaged.MARKER).read_text())["files"]
    assert sorted(p.relative_to(folder).as_posix() for p in hashed) == sorted(files)
    assert packaged.verify_prepared(ASSET, home) and len(hashed) == len(files)


@pytest.mark.parametrize(("change", "why"), [
    (lambda folder: (folder / "adapter_config.json").write_text("{}"), "adapter_config.json was not written by prepare"),
    (lambda folder: (folder / "tokenizer.json").unlink(), "tokenizer.json is missing"),
    (lambda folder: (folder / packaged.MARKER).write_text("{not json"), "marker .* is unreadable"),
], ids=["added", "missing", "marker"])
def test_added_missing_files_and_a_broken_marker_are_refused(home, change, why):
    change(packaged.prepared_dir(ASSET, home))
    with pytest.raises(UserError, match=why):
        packaged.prepare(ASSET, home)


def test_a_folder_prepared_before_file_digests_is_converted_again(home, capsys):
    folder = packaged.prepared_dir(ASSET, home)
    marker = json.loads((folder / packaged.MARKER).read_text())
    del marker["files"]
    (folder / packaged.MARKER).write_text(json.dumps(marker))
    scale_weights(folder / WEIGHTS)  # nothing recorded to compare with: it must not be trusted
    assert cli.main(["prepare", "--list", ASSET, "--home", str(home)]) == 0
    assert re.search(rf"^{ASSET} +outdated ", capsys.readouterr().out, re.M)
    assert cli.main(["prepare", ASSET, "--home", str(home)]) == 0
    assert "verifying sha256 and converting ... done" in capsys.readouterr().err
    assert packaged.sha256_of(folder / WEIGHTS) == packaged.ASSETS[ASSET].sha256
    assert "files" in json.loads((folder / packaged.MARKER).read_text())


def test_only_packaged_reaches_into_the_prepared_folders():
    """A loader that built `<home>/models/<asset>` itself would skip the verification in `prepare`."""
    root = Path(packaged.__file__).resolve().parents[1]
    allowed = {root / "encoders" / "packaged.py", root / "encoders" / "commands.py", root / "paths.py"}
    for path in sorted(root.rglob("*.py")):
        if path in allowed:
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(prepared_dir|models_dir)\b|[\"']models[\"']\s*\)?\s*/", text), path


@pytest.mark.slow
def test_the_reported_case_scaled_efficientnet_does_not_load(tmp_path):
    """The issue's case: efficientnet-lite0's converted weights times 1.05 loaded and scored."""
    from platobench.encoders import load_encoder

    folder = packaged.prepare("efficientnet-lite0", tmp_path)
    scale_weights(folder / WEIGHTS)
    with pytest.raises(UserError, match=rf"{re.escape(str(folder / WEIGHTS))} has sha256 .*"
                                        rf"platobench prepare --force efficientnet-lite0 --home {re.escape(str(tmp_path))}"):
        load_encoder(load_zoo().get("demo/efficientnet-lite0"), home=tmp_path)
