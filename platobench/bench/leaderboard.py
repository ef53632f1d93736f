"""Kept for old imports (`platobench.bench.leaderboard`): the leaderboard lives in `platobench.leaderboard`."""

from platobench.leaderboard import *  # noqa: F403
from platobench.leaderboard import __all__  # noqa: F401
