"""Running code from a model's repository (transformers' `trust_remote_code`) only when the user names it.

A zoo entry with `trust_remote_code: true` asks to import Python shipped with its weights. That runs only
for models named on the command line with `--trust-remote-code NAME` (repeatable, globs allowed); the
command-line entry point (`platobench.cli.main`) holds those names in `allowed(...)` while a command runs.
Library callers do the same: `with allowed(["family/arch.tag"]): load_encoder(spec)`. The machinery is
platobench.zoo.opt_in's, shared with `--trust-code` (platobench.zoo.python_code).
"""

from __future__ import annotations

from typing import Protocol

from platobench.zoo.opt_in import OptIn

OPT_IN = OptIn(
    "--trust-remote-code",
    help=(
        "let this model (name or glob; repeatable) run Python code from its repository, for a zoo entry "
        "with 'trust_remote_code: true'; without it such a model is refused"
    ),
)
OPTION = OPT_IN.option
add_trust_remote_code_option = OPT_IN.add_option
check_patterns = OPT_IN.check_patterns
allowed = OPT_IN.allowed
allowed_patterns = OPT_IN.patterns


class _Spec(Protocol):
    name: str
    trust_remote_code: bool


def remote_code_flag(spec: _Spec) -> bool:
    """The `trust_remote_code` value to give transformers for `spec`: True only when the entry asks for it
    and the user named the model; UserError when it asks and was not named; False otherwise."""
    if spec.trust_remote_code is not True:
        return False
    OPT_IN.require(spec.name, "asks to run code from its repository")
    return True
