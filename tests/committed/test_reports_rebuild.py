"""Every report that committed data determine is rebuilt by one command (`platobench reports`) to the very
bytes committed under reports/; the others are listed with why, and none is skipped silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platobench.cli import main
from platobench.leaderboard.reports import NOT_REBUILDABLE, REPORTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_platobench_reports_rebuilds_the_committed_reports_byte_for_byte(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["reports", "--out", str(tmp_path), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["written"]
    assert set(written) == {"stitch", "scaling-n", "jepa-compare", "jepa-scaling", "jepa-curve",
                                     "offline-board.md"} == set(REPORTS.names())
    files = [Path(p) for paths in written.values() for p in paths]
    assert len(files) == 16
    for path in files:
        committed = ROOT / "reports" / path.relative_to(tmp_path)
        assert path.read_bytes() == committed.read_bytes(), committed


def test_every_committed_report_is_rebuilt_or_says_why_not():
    committed = {p.name for p in (ROOT / "reports").iterdir()}
    assert committed == set(REPORTS.names()) | set(NOT_REBUILDABLE)


def test_a_report_without_its_data_is_an_error_naming_the_command(tmp_path, capsys):
    assert main(["reports", "--results", str(tmp_path), "--reports", str(tmp_path), "--out", str(tmp_path / "o"),
                 "--only", "scaling-n"]) == 2
    assert "scaling-n.json is missing: run `platobench scaling-n" in capsys.readouterr().err
    assert main(["reports", "--results", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "stitch"]) == 2
    assert "no stitch records" in capsys.readouterr().err
    assert main(["reports", "--reports", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "jepa-compare"]) == 2
    assert "no jepa compare records under" in capsys.readouterr().err
    assert main(["reports", "--reports", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "jepa-scaling"]) == 2
    assert "no jepa scaling records under" in capsys.readouterr().err
    assert main(["reports", "--reports", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "jepa-curve"]) == 2
    assert "no jepa curve records under" in capsys.readouterr().err
    assert main(["reports", "--results", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "offline-board.md"]) == 2
    assert "no records under" in capsys.readouterr().err


def test_an_edited_scaling_n_data_file_is_an_error_not_a_traceback(tmp_path, capsys):
    (tmp_path / "scaling-n").mkdir()
    (tmp_path / "scaling-n" / "scaling-n.json").write_text('{"setup": {}, "points": [{"n": 1}]}')
    assert main(["reports", "--reports", str(tmp_path), "--out", str(tmp_path / "o"), "--only", "scaling-n"]) == 2
    assert "is not a scaling-n report's data" in capsys.readouterr().err
