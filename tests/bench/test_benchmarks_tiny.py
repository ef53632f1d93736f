"""Every script of benchmarks/ runs at its tiny size (`--tiny`, benchmarks/tiny.py) and exits 0 (issue 55,
item 12: benchmarks/probe.py had rotted unnoticed). Each runs in a fresh process, CPU only, with a home of
its own (the dataset catalogue copied in) and no model weights but small random-initialised ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from platobench.paths import home

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
#: Modules of benchmarks/ that the scripts import, not scripts themselves.
HELPERS = {"gpu_sections.py", "gpu_timing.py", "tiny.py"}


def _scripts() -> list[str]:
    return sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS)


def test_every_file_of_benchmarks_is_a_script_with_a_tiny_size_or_a_helper() -> None:
    for name in _scripts():
        text = (BENCH / name).read_text()
        assert 'if __name__ == "__main__":' in text, f"{name}: not a script; list it in HELPERS"
        assert "parse_tiny(" in text or '"--tiny"' in text, f"{name}: no --tiny (benchmarks/tiny.py)"
    for name in HELPERS:
        assert 'if __name__ == "__main__":' not in (BENCH / name).read_text(), name


@pytest.fixture(scope="module")
def bench_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A platobench home for the scripts, holding the dataset catalogue of this session's home (else every
    script that reads openclipart would parse its 7,000 SVGs again)."""
    from platobench.data import get_dataset

    get_dataset("openclipart-1024", limit=2)  # the catalogue exists in this session's home
    folder = tmp_path_factory.mktemp("bench-home")
    shutil.copytree(home() / "data", folder / "data")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("script", _scripts())
def test_a_benchmark_runs_at_its_tiny_size(script: str, bench_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PLATOBENCH_HOME": str(bench_home), "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(BENCH / script), "--tiny"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script} --tiny exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{script} --tiny printed nothing"
