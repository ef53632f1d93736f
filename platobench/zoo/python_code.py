"""Running a `loader: python` entry's module only when the user names the model.

Loading such an entry imports the user's module (`source: module:name`), which runs whatever it holds.
That happens only for models named on the command line with `--trust-code NAME` (repeatable, globs
allowed), or submitted with `platobench submit FILE` (the file names them); the command-line entry point
(`platobench.cli.main`) holds those names in `allowed(...)` while a command runs. Library callers do the
same: `with allowed(["family/arch.tag"]): load_encoder(spec)`. Nothing before the check imports the module:
its cache key hashes its files found by path (platobench.encoders.python_source).
"""

from __future__ import annotations

from typing import Protocol

from platobench.zoo.opt_in import OptIn

OPT_IN = OptIn(
    "--trust-code",
    help=(
        "let this model (name or glob; repeatable) import and run its Python module, for a zoo entry with "
        "'loader: python'; without it such a model is refused (submit trusts the entries of its FILE)"
    ),
)
OPTION = OPT_IN.option
add_trust_code_option = OPT_IN.add_option
allowed = OPT_IN.allowed
allowed_patterns = OPT_IN.patterns


class _Spec(Protocol):
    name: str
    source: str


def check_trusted(spec: _Spec) -> None:
    """UserError naming the model and `--trust-code NAME` unless the user named this python entry."""
    module = spec.source.partition(":")[0]
    OPT_IN.require(spec.name, f"runs Python code from its module {module} (source {spec.source!r})")
