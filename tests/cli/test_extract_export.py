"""`platobench extract --export FILE` (issue 55, item 12): a missing folder is created, not a safetensors
traceback, and the file gets the mode the umask allows (docs/safety.md), not safetensors' private 0600.
The features come from a seeded cache (no model runs)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_fixtures import CHECK_N, seed_features

from platobench.cli import main

MODEL = "demo/minilm-l6"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    seed_features(tmp_path / "home", MODEL, CHECK_N)
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def umask() -> Iterator[None]:
    """Tests set the umask they need; the process's is restored after."""
    saved = os.umask(0o022)
    yield
    os.umask(saved)


def _ids(path: Path) -> list[str]:
    """The sample ids an exported file holds."""
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        return json.loads(f.metadata()["ids"])


def _export(path: Path) -> int:
    return main(["extract", "--model", MODEL, "--dataset", "openclipart-1024", "--limit", str(CHECK_N),
                 "--export", str(path), "--json"])


def test_export_creates_a_missing_folder(home: Path, tmp_path: Path, umask: None) -> None:
    target = tmp_path / "new" / "folder" / "minilm.safetensors"
    assert _export(target) == 0
    assert target.is_file() and len(_ids(target)) == CHECK_N
    assert sorted(p.name for p in target.parent.iterdir()) == ["minilm.safetensors"]  # no temporary left


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_an_exported_file_gets_the_umasks_mode(home: Path, tmp_path: Path, umask: None, mask: int) -> None:
    os.umask(mask)
    target = tmp_path / "minilm.safetensors"
    assert _export(target) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_an_overwritten_export_keeps_its_mode(home: Path, tmp_path: Path, umask: None) -> None:
    target = tmp_path / "minilm.safetensors"
    target.write_bytes(b"old")
    target.chmod(0o640)
    assert _export(target) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and len(_ids(target)) == CHECK_N


def test_a_full_disk_is_one_error_line_naming_the_file(home: Path, tmp_path: Path, umask: None,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import safetensors.torch
    from safetensors import SafetensorError

    def full(*args: object, **kwargs: object) -> None:
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    target = tmp_path / "minilm.safetensors"
    assert _export(target) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"platobench extract: error: cannot write {target}: ") and "No space left" in err[-1]
    assert list(tmp_path.glob("*.safetensors*")) == [] and list(tmp_path.glob(".minilm*")) == []
