"""Kept for old imports (`platobench.bench.results`): result records live in `platobench.results`."""

from platobench.results import *  # noqa: F403
from platobench.results import __all__  # noqa: F401
