"""The package version: the same string as pyproject.toml's `version` (tests/core/test_api.py checks it)."""

__version__ = "0.1.0"
