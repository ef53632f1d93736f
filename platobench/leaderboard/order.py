"""The order of boards on the leaderboard and of settings on the terminal board, defined here only.

The headline board comes first: paired settings scored by mutual k-nearest neighbours (the Platonic
Representation Hypothesis' own metric), then the other paired settings, then zero-shot matching, then
stitching, then any other kind (`leaderboard.kinds`); settings of one group follow in order of their id. A setting measured on pairs of other
modalities than text x vision has a board of its own for each modality pair (`board_name`), after the text x
vision board of the same setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platobench.leaderboard.kinds import record_kind

if TYPE_CHECKING:
    from platobench.results import ResultRecord

#: The modality pair whose boards are named by their setting alone (every record of schema 1 is one).
DEFAULT_MODALITIES = ("text", "vision")

HEADLINE_METRIC = "mutual_knn"


def board_group(kind: str, metric_id: str) -> int:
    """Where a record's setting sorts: paired mutual kNN (0), other paired metrics (1), zero-shot (2),
    stitching (3), any other kind (4): its kind's `RecordKind.order`, order 0 split by the headline metric."""
    order = record_kind(kind).order
    return order + (order == 0 and metric_id != HEADLINE_METRIC)


def setting_key(setting: str, kind: str, metric_id: str) -> tuple[int, str]:
    """The sort key of a setting: its group, then its id."""
    return board_group(kind, metric_id), setting


def modality_label(modalities: tuple[str, str]) -> str:
    """"vision x vision" for ("vision", "vision")."""
    return " x ".join(modalities)


def board_name(record: ResultRecord) -> str:
    """The board a record goes on, by setting and modality pair: the setting id for a text x vision pair
    ("demo-mknn"), else the setting and the modality pair ("demo-mknn (vision x vision)")."""
    if record.modalities == DEFAULT_MODALITIES:
        return record.setting
    return f"{record.setting} ({modality_label(record.modalities)})"


def record_key(record: ResultRecord) -> tuple[int, str, int, tuple[str, str]]:
    """The sort key of a record's board: its setting's (`setting_key`), text x vision first, then the
    modality pair."""
    group, setting = setting_key(record.setting, record.kind, record.metric.id)
    return group, setting, int(record.modalities != DEFAULT_MODALITIES), record.modalities
