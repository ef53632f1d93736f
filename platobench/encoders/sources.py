"""Where a spec's weights come from: a pinned hub revision, a local folder, or a prepared packaged asset.

Hub access respects `HF_HUB_OFFLINE` (read at call time, so `HF_HUB_OFFLINE=1 platobench ...` works
even after huggingface_hub was imported) and turns a missing cache entry into a UserError that names the
model and the command that downloads it. Code shipped with the weights runs only for a zoo entry that asks
for it (`trust_remote_code: true`) and that the user named with `--trust-remote-code NAME`
(`platobench.zoo.remote_code`); the check comes before any file of the model is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from platobench.encoders import packaged
from platobench.errors import UserError
from platobench.hub import hub_offline
from platobench.zoo.remote_code import OPTION, remote_code_flag
from platobench.zoo.spec import ModelSpec


def local_path(spec: ModelSpec, home: Path | None) -> Path | None:
    """The folder (or file) holding the weights of a local or packaged spec; None for hub-style sources.

    Packaged assets are prepared on first use (see `packaged.prepare`)."""
    if spec.source_type == "packaged":
        return packaged.prepare(spec.packaged_asset or "", home)
    if spec.source_type == "local":
        path = Path(spec.source).expanduser()
        if not path.exists():
            raise UserError(f"model {spec.name}: local source {path} does not exist")
        return path
    return None


def pretrained_args(spec: ModelSpec, home: Path | None) -> tuple[str, dict[str, Any]]:
    """(path or hub id, keyword arguments) for a transformers `from_pretrained` call of this spec.
    UserError when the entry asks to run repository code and the user did not name the model."""
    trust = remote_code_flag(spec)
    path = local_path(spec, home)
    if path is not None:
        return str(path), {"trust_remote_code": trust}
    return spec.source, {"revision": spec.revision, "local_files_only": hub_offline(), "trust_remote_code": trust}


def download_hint(repo_id: str, revision: str | None) -> str:
    """The shell command that puts `repo_id` at `revision` into the local Hugging Face cache."""
    rev = f" --revision {revision}" if revision else ""
    return f"hf download {repo_id}{rev}  (older huggingface_hub: huggingface-cli download {repo_id}{rev})"


@contextmanager
def hub_errors(spec: ModelSpec, repo_id: str | None = None) -> Iterator[None]:
    """Turn a failed hub fetch (not cached while offline, no network, unknown repo), and transformers'
    refusal to run a model's repository code, into a UserError."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        yield
    except (OSError, HfHubHTTPError) as exc:  # before ValueError: huggingface_hub < 1.0's not-cached error is both
        if spec.source_type not in {"hub", "timm", "openclip"}:
            raise
        repo = repo_id or spec.source
        state = "HF_HUB_OFFLINE is set and it is not cached" if hub_offline() else "it could not be fetched"
        raise UserError(
            f"model {spec.name}: cannot load {repo} at revision {spec.revision} ({state}). "
            f"Download it with: {download_hint(repo, spec.revision)}. Cause: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc
    except ValueError as exc:
        if "trust_remote_code" not in str(exc) or isinstance(exc, UserError):
            raise
        raise UserError(
            f"model {spec.name}: its repository contains code that must run to load it; if you trust it, set "
            f"'trust_remote_code: true' in its zoo entry and rerun with {OPTION} {spec.name}"
        ) from exc
