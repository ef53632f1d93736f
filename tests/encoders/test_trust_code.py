"""`loader: python` entries: their module runs only with `--trust-code MODEL` (or a `submit` that names them),
nothing imports it before (planning hashes its files by path), and the cache key follows every local
module it imports (platobench.encoders.python_source)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_fixtures import TINY_SETTINGS

from platobench.cli import build_parser, main
from platobench.errors import UserError
from platobench.features import extract as ex
from platobench.zoo import ModelSpec, python_code, remote_code

NAME = "mine/evil-py"
VISION = "demo/dinov2-s-imgfocus"
ENCODER = "import numpy as np\nclass Enc:\n    def encode(self, texts):\n        return np.ones((len(texts), 3)) * [[len(t), 1.0, 2.0] for t in texts]\n"
ZOO = (f"version: 1\nmodels:\n  - name: {NAME}\n    modality: text\n    kind: text_encoder\n    loader: python\n"
       "    source: evilpkg.enc:Enc\n    pooling: avg\n    num_layers: 0\n")


@pytest.fixture
def evil(tmp_path, monkeypatch) -> Iterator[tuple[Path, Path]]:
    """A folder on the Python path (and the current folder) with `evilpkg/__init__.py` that writes a marker
    when imported, `evilpkg/enc.py` (a simple-protocol text encoder) and `evil.yaml` naming it."""
    marker = tmp_path / "imported"
    (tmp_path / "evilpkg").mkdir()
    (tmp_path / "evilpkg" / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    (tmp_path / "evilpkg" / "enc.py").write_text(ENCODER)
    (tmp_path / "evil.yaml").write_text(ZOO)
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS.replace("openclipart-1024", "tuxpaint"))
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for name in ("evilpkg", "evilpkg.enc"):  # imported by an earlier test: the marker is written on import
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path, marker
    for name in ("evilpkg", "evilpkg.enc"):
        sys.modules.pop(name, None)


def spec_of(source: str, name: str = NAME) -> ModelSpec:
    return ModelSpec(name=name, modality="text", kind="text_encoder", loader="python", source=source,
                     pooling="avg", num_layers=0)


# ---------------------------------------------------------------------------------------------- opt-in


def test_dry_run_imports_nothing_of_the_encoder(evil, capsys):
    tmp, marker = evil
    code = main(["run", "--dry-run", "--zoo", "evil.yaml", "--pairs", f"{NAME}:{VISION}", "--settings", "tiny",
                 "--settings-file", "tiny.yaml", "--limit", "24", "--out", str(tmp / "results")])
    assert code == 0, capsys.readouterr().err
    assert not marker.exists()
    assert ex.model_revision(spec_of("evilpkg.enc:Enc")).startswith("python:evilpkg.enc:Enc@sha256:")
    assert not marker.exists()


def test_loading_without_opt_in_is_refused_and_the_opt_in_loads_it(evil, capsys):
    tmp, marker = evil
    argv = ["extract", "--zoo", "evil.yaml", "--model", NAME, "--dataset", "tuxpaint", "--limit", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"model {NAME} runs Python code from its module evilpkg.enc" in err
    assert f"rerun with --trust-code {NAME} if you trust it" in err
    assert not marker.exists()
    assert main([*argv, "--trust-code", "other/*"]) == 2 and not marker.exists()
    assert main([*argv, "--trust-code", "mine/*"]) == 0
    assert marker.exists()


def test_library_callers_opt_in_with_allowed(evil):
    import torch

    from platobench.encoders import load_encoder

    _, marker = evil
    spec = spec_of("evilpkg.enc:Enc")
    with pytest.raises(UserError, match=f"rerun with --trust-code {NAME} if you trust it"):
        load_encoder(spec)
    with remote_code.allowed([NAME]), pytest.raises(UserError, match="--trust-code"):
        load_encoder(spec)  # trusting remote code is not trusting a python entry
    assert not marker.exists()
    with python_code.allowed(["MINE/EVIL-PY"]):
        assert python_code.allowed_patterns() == (NAME,)
        encoder = load_encoder(spec, device=torch.device("cpu"))
    assert encoder.widths == [3] and marker.exists()
    assert python_code.allowed_patterns() == ()


LOADING_COMMANDS = [
    ["extract", "--model", "m/x", "--dataset", "d"],
    ["run", "--pairs", "demo", "--settings", "demo"],
    ["submit", "sub.yaml"],
    ["check"],
    ["jepa", "compare", "--data", "d", "--vision", "v"],
    ["jepa", "curve", "--corpus", "c", "--vision", "v"],
    ["jepa", "scaling", "--corpus", "c", "--vision", "v"],
    ["stitch"],
    ["scaling-n"],
]


@pytest.mark.parametrize("argv", LOADING_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_every_command_that_loads_zoo_models_takes_both_opt_ins(argv):
    args = build_parser().parse_args([*argv, "--trust-code", NAME, "--trust-code", "x/*",
                                      "--trust-remote-code", "y/*"])
    assert args.trust_code == [NAME, "x/*"] and args.trust_remote_code == ["y/*"]
    assert build_parser().parse_args(argv).trust_code == []


def test_bad_trust_code_value_is_a_user_error(capsys):
    assert main(["extract", "--model", "a/b", "--dataset", "d", "--trust-code", "../../etc"]) == 2
    assert "--trust-code '../../etc': expected a model name" in capsys.readouterr().err


def test_submit_trusts_the_encoders_it_names_only(evil, monkeypatch):
    from platobench.bench import submit

    tmp, marker = evil
    seen = []
    monkeypatch.setattr(submit, "mock_pass", lambda spec, *a, **k: seen.append(python_code.allowed_patterns())
                        or submit.MockReport(spec.name, 2, [0], [3], 0.0, 0.0, 0.0))
    assert main(["submit", "evil.yaml", "--mock-only", "--settings", "tiny", "--settings-file", "tiny.yaml"]) == 0
    assert main(["submit", "evil.yaml", "--mock-only", "--settings", "tiny", "--settings-file", "tiny.yaml",
                 "--trust-code", "x/*"]) == 0
    assert seen == [(NAME,), ("x/*", NAME)]
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------- cache key


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_key_follows_imported_helper_modules_not_unrelated_files(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path / "pbk_enc.py", "import json, os.path\nimport numpy\nfrom pbk_helper_feats import feats\n"
                                   "class Enc:\n    def encode(self, texts):\n        return feats(texts)\n")
    write(tmp_path / "pbk_helper_feats.py", "import pbk_deep\ndef feats(texts):\n    return pbk_deep.scale\n")
    write(tmp_path / "pbk_deep.py", "scale = 1\n")
    write(tmp_path / "pbk_unrelated.py", "x = 1\n")
    spec = spec_of("pbk_enc:Enc")
    before = ex.model_revision(spec)
    assert before.startswith("python:pbk_enc:Enc@sha256:") and len(before.rpartition(":")[2]) == 16
    write(tmp_path / "pbk_unrelated.py", "x = 2\n")
    write(tmp_path / "notes.txt", "anything")
    assert ex.model_revision(spec) == before
    write(tmp_path / "pbk_helper_feats.py", "import pbk_deep\ndef feats(texts):\n    return 2 * pbk_deep.scale\n")
    edited = ex.model_revision(spec)
    assert edited != before
    write(tmp_path / "pbk_deep.py", "scale = 2\n")  # imported by the helper: transitively
    assert ex.model_revision(spec) != edited


def test_key_follows_relative_imports_and_package_inits(tmp_path, monkeypatch):
    from platobench.encoders.python_source import key_files

    monkeypatch.syspath_prepend(str(tmp_path))
    pkg = tmp_path / "pbk_pkg"
    write(pkg / "__init__.py", "")
    write(pkg / "sub" / "__init__.py", "from . import tools\n")
    write(pkg / "sub" / "enc.py", "from .helpers import f\nfrom ..common import g\nfrom . import tools as t\n"
                                  "def make():\n    import pbk_lazy\n")
    write(pkg / "sub" / "helpers.py", "f = 1\n")
    write(pkg / "sub" / "tools.py", "t = 1\n")
    write(pkg / "common.py", "g = 1\n")
    write(pkg / "unused.py", "u = 1\n")
    write(tmp_path / "pbk_lazy.py", "z = 1\n")
    found = key_files("pbk_pkg.sub.enc")
    assert sorted(found) == ["pbk_lazy", "pbk_pkg", "pbk_pkg.common", "pbk_pkg.sub", "pbk_pkg.sub.enc",
                             "pbk_pkg.sub.helpers", "pbk_pkg.sub.tools"]
    assert found["pbk_pkg.sub"] == (pkg / "sub" / "__init__.py", b"from . import tools\n")
    spec = spec_of("pbk_pkg.sub.enc:make")
    before = ex.model_revision(spec)
    write(pkg / "unused.py", "u = 2\n")
    assert ex.model_revision(spec) == before
    for path in (pkg / "__init__.py", pkg / "common.py", tmp_path / "pbk_lazy.py"):
        path.write_text(path.read_text() + "# edited\n")
        assert ex.model_revision(spec) != before, path
        before = ex.model_revision(spec)


def test_key_never_hashes_stdlib_site_packages_or_platobench(tmp_path, monkeypatch):
    from platobench.encoders.python_source import key_files

    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path / "pbk_uses_libs.py", "import json, numpy, torch\nfrom platobench.encoders.base import TextEncoder\n")
    assert list(key_files("pbk_uses_libs")) == ["pbk_uses_libs"]
    with pytest.raises(UserError, match="cannot find module 'pbk_missing'"):
        ex.model_revision(spec_of("pbk_missing:make"))
    write(tmp_path / "__init__.py", "")
    with pytest.raises(UserError, match=r"cannot find module '\.\.pbk_uses_libs'"):
        ex.model_revision(spec_of("..pbk_uses_libs:make"))  # not a module name: never a folder's __init__
