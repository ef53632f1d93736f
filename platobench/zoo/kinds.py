"""Model kinds and their modality (the CLI's `--kind` choices), importable without pydantic.

The facts are declared once in `platobench.zoo.support.KINDS`; this module names them for the zoo."""

from __future__ import annotations

from platobench.zoo.support import MODALITY_OF_KIND

__all__ = ["MODALITY_OF_KIND"]
