"""The CLI starts light: building the parser, `--help` and the listing commands import no torch (nor
transformers, scipy, matplotlib, ...); the names made lazy for that still import as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Packages no parser construction or listing may load (each costs 0.1-2 s at startup).
HEAVY = ("torch", "transformers", "scipy", "matplotlib", "safetensors", "timm", "open_clip", "pandas", "sklearn")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PLATOBENCH_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}


def imported_by(argv: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `python -X importtime -m platobench ARGV` in a fresh interpreter: (the finished process, the
    top-level names of every module it imported)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "platobench", *argv], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip().split(".")[0]
             for line in proc.stderr.splitlines() if line.startswith("import time:") and "|" in line}
    return proc, names


def run_python(code: str, tmp_path: Path) -> str:
    """stdout of `python -c CODE` in a fresh interpreter (fails the test on a non-zero exit)."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_build_parser_imports_nothing_heavy(tmp_path: Path) -> None:
    out = run_python(
        "import json, sys\nfrom platobench import cli\nparser = cli.build_parser()\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
        "print(json.dumps(sorted(parser._subparsers._group_actions[0].choices)))",
        tmp_path,
    )
    heavy, commands = (json.loads(line) for line in out.splitlines())
    assert heavy == []
    assert {"zoo", "prepare", "data", "extract", "cache", "metrics", "score", "run", "leaderboard", "check",
            "submit"} <= set(commands)


@pytest.mark.parametrize("argv", [["--help"], ["zoo", "list"], ["zoo", "show", "demo/minilm-l6"], ["data", "list"],
                                  ["score", "--help"], ["check", "--help"], ["submit", "--help"]])
def test_command_imports_no_torch(argv: list[str], tmp_path: Path) -> None:
    proc, names = imported_by(argv, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip()
    assert "platobench" in names  # the import trace was read
    assert names.isdisjoint(HEAVY), sorted(names & set(HEAVY))


def test_leaderboard_without_plots_imports_no_torch(tmp_path: Path) -> None:
    proc, names = imported_by(["leaderboard", "--results", str(ROOT / "results" / "offline" / "demo-cka"),
                               "--out", str(tmp_path / "board"), "--no-plots"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "board" / "leaderboard.csv").is_file()
    # a board whose records state their draws is judged by paired t tests: Student's t comes from scipy
    assert "scipy" in names
    assert names.isdisjoint(set(HEAVY) - {"scipy"}), sorted(names & set(HEAVY))


def test_preprocess_choices_match_the_modes() -> None:
    from platobench.bench.metric_commands import PREPROCESS_CHOICES
    from platobench.metrics.preprocess import PREPROCESS_MODES

    assert list(PREPROCESS_CHOICES) == sorted(PREPROCESS_MODES)


def test_metric_lookup_registers_builtins_without_the_package_names(tmp_path: Path) -> None:
    # Before any platobench.metrics name is touched, a lookup through the registry finds every metric.
    out = run_python(
        "from platobench.metrics.registry import get_metric, list_metrics\n"
        "print(get_metric('mutual_knn').id, len(list_metrics()))",
        tmp_path,
    )
    metric_id, count = out.split()
    assert metric_id == "mutual_knn" and int(count) >= 5


def test_lazy_names_still_import() -> None:
    import platobench.metrics as metrics
    import platobench.zoo as zoo
    from platobench.bench.run_command import scorers
    from platobench.encoders import TextEncoder, VisionEncoder
    from platobench.encoders.base import TextEncoder as BaseText
    from platobench.zoo import ModelSpec, add_zoo_option, load_zoo
    from platobench.zoo.spec import MODALITY_OF_KIND
    from platobench.zoo.spec import ModelSpec as SpecModel

    assert {"paired", "zeroshot"} <= set(scorers())
    assert TextEncoder is BaseText and VisionEncoder.__name__ == "VisionEncoder"
    assert ModelSpec is SpecModel and callable(add_zoo_option) and len(load_zoo()) > 0
    assert MODALITY_OF_KIND["clip_image"] == "vision"
    assert metrics.get_metric("cka").id == "cka"
    for module in (zoo, metrics):
        with pytest.raises(AttributeError):
            module.no_such_name  # noqa: B018


def test_the_public_api_imports_nothing_heavy_until_a_name_is_used(tmp_path):
    """Experiments import the core through `platobench.api`; their command modules build parsers at start-up."""
    out = run_python("import sys, platobench.api\n"
                     "from platobench.api import UserError, add_json_option, progress_log, save_figure\n"
                     f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))", tmp_path)
    assert out.strip() == "[]"
