"""Prompt templates for zero-shot classification: each template has one "{}" slot for the class name.

The OpenAI ImageNet sets (80 templates, and the 2-template "simple" subset) come from
`open_clip.zero_shot_metadata` (Radford et al. 2021); the others are text files in prompt_templates/ beside
this module ("#" lines are comments).
"""

from __future__ import annotations

import importlib.util
from importlib import resources
from types import ModuleType

from platobench.errors import UserError

_FILES = ("cifar", "fashion-mnist", "openclipart", "single", "tuxpaint")
_OPEN_CLIP = {"openai-imagenet": "OPENAI_IMAGENET_TEMPLATES", "simple-imagenet": "SIMPLE_IMAGENET_TEMPLATES"}


def _open_clip_metadata() -> ModuleType:
    """`open_clip.zero_shot_metadata`, loaded from its file alone: the module imports nothing, while
    `import open_clip` first imports torch, timm and torchvision (seconds)."""
    package = importlib.util.find_spec("open_clip")
    if package is None or not package.submodule_search_locations:
        raise UserError("the OpenAI ImageNet templates come from open_clip: pip install open_clip_torch")
    path = f"{next(iter(package.submodule_search_locations))}/zero_shot_metadata.py"
    spec = importlib.util.spec_from_file_location("platobench_open_clip_zero_shot_metadata", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def template_sets() -> list[str]:
    """Names accepted by `get_templates`."""
    return sorted([*_FILES, *_OPEN_CLIP])


def get_templates(name: str) -> list[str]:
    """The template set `name` as a list of strings with exactly one "{}" each."""
    if name in _OPEN_CLIP:
        # open_clip stores them as one-argument callables; calling one with "{}" yields the template.
        return [fn("{}") for fn in getattr(_open_clip_metadata(), _OPEN_CLIP[name])]
    if name in _FILES:
        text = (
            resources.files("platobench.data").joinpath("prompt_templates", f"{name}.txt").read_text("utf-8")
        )
        return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    raise UserError(f"templates={name!r}: expected one of {', '.join(template_sets())}")
