"""platobench: measure how alike the internal representations of different models are.

Stages (one direction): zoo -> encoders -> features (cache) -> metrics -> bench (results, leaderboard).
See README.md and the design notes for the contracts.
"""

__version__ = "0.1.0"
