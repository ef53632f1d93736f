"""Every `platobench ...` command in the README, the docs and in the `--help` examples works as written.

Commands are read from README.md, docs/**/*.md and reports/*.md (inline code and code blocks) and from every
subcommand's help text
("Example: platobench ..."). Each is classified:
- a synopsis (placeholders such as NAME or M[,M..], optional parts in [...], alternatives a|b, "..."): its
  subcommand must exist and every option it names must be one of that subcommand's options;
- a bare command name (`platobench run` in a sentence): the subcommand must exist;
- a concrete command: it must parse exactly as written, and the cheap offline ones are run as written
  (`RUN`, in a scratch folder or on copies of the committed records, so the repository is not written);
  the rest are listed in `PARSE_ONLY` with the reason they are not run here (GPU, hub, or tens of minutes;
  each names the test that runs it at a small size, where one does).
A command found in the docs and in neither list fails the test: a new example must be classified.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path

import pytest

from platobench.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The pages whose commands are checked: the README, every docs page and the reports' top-level pages (not
#: docs/cli-reference.md: the help texts it copies are read from the parser below).
PAGES = [README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli-reference.md"),
         *sorted((ROOT / "reports").glob("*.md"))]
PLACEHOLDER = re.compile(r"(^|[\s=,:])([A-Z][A-Z0-9_]*)(\[|,|$|\s)|\[|\||\.\.\.|…")

RUN = {
    "platobench cache list",
    "platobench data list",
    "platobench metrics",
    "platobench pairs list",
    "platobench settings list",
    "platobench prepare",
    "platobench theory worlds",
    "platobench zoo list --filter '*dino*'",
    "platobench zoo validate",
    "platobench leaderboard --results results --out leaderboard",
    "platobench run --pairs demo --settings demo --out results/offline",
    "platobench check --results results/offline --scores-only",
}
PARSE_ONLY = {
    "platobench check --results results/offline": "recomputes all 294 committed records (about an hour on 2 "
                                                  "cores); tests/committed/test_demo_regression.py checks a subset",
    "platobench check": "the same on ./results",
    "platobench run --pairs demo --settings demo": "the run above into ./results, which a fresh clone does not "
                                                  "have: recomputes the demo (~11 min)",
    "platobench leaderboard": "the same command as the run one above, with its defaults",
    "platobench prepare gemma3-270m": "needs the optional Gemma package (Gemma terms)",
    "platobench run --pairs default21 --settings paired --device cuda": "needs a GPU and the hub",
    "platobench jepa scaling --corpus wordnet --vision demo/dinov2-s-imgfocus": "tens of minutes; "
        "tests/experiments/test_jepa_experiments_cli.py runs --quick",
    "platobench jepa curve --corpus wordnet --vision demo/dinov2-s-imgfocus": "tens of minutes; --quick is tested",
    "platobench jepa compare --dataset openclipart-desc --vision demo/dinov2-s-imgfocus --seeds 3":
        "trains three JEPAs (minutes); tests/experiments/test_jepa_compare.py runs compare small",
    "platobench jepa curve --corpus wordnet --vision demo/dinov2-s-imgfocus --objectives jepa-good,jepa-bad,ntp "
    "--seeds 3": "half an hour; --quick is tested",
    "platobench run --pairs offline --settings demo-mknn,demo-cka,demo-rotation,oc-mknn,oc-cka --out results/offline "
    "--force": "recomputes 210 committed records (21 min); tests/committed/test_demo_regression.py checks a subset",
    "platobench run --pairs offline --settings demo-mknn,oc-mknn,demo-mknn-ho --out results/offline --force":
        "recomputes the 126 text x vision mutual kNN records (39 min); tests/committed/test_demo_regression.py "
        "checks a subset",
    "platobench run --pairs offline --settings demo-cka,oc-cka --out results/offline":
        "recomputes the 84 CKA records whose interval scheme changed (about 10 min); "
        "tests/committed/test_demo_regression.py checks a subset",
    "platobench jepa curve --corpus wordnet --vision demo/dinov2-s-imgfocus --out reports/jepa-curve/records "
    "--report reports/jepa-curve": "23 min; writes the committed records, which tests/committed/"
                                   "test_reports_rebuild.py rebuilds the report from",
    "platobench jepa scaling --corpus wordnet --vision demo/dinov2-s-imgfocus --quick":
        "about a minute; tests/experiments/test_jepa_experiments_cli.py runs it",
    "platobench leaderboard --results results": "the run command above, into ./leaderboard",
    "platobench run --pairs demo --settings demo --limit 64 --out /tmp/try": "about 3 minutes (the "
        "quick try of docs/getting-started.md); tests/features/test_limit_reuse.py runs limited demo runs",
    "platobench stitch --dataset coco-captions --vision dinov2-hf/vit-b14,dinov3/vit-b16.lvd1689m --text "
    "sentence-transformers/all-mpnet-base-v2 --device cuda": "needs a GPU and the hub",
    "platobench stitch --text demo/mpnet-base": "12 minutes; tests/experiments/test_stitch_cli.py runs --quick",
    "platobench scaling-n": "13 minutes; tests/experiments/test_scaling_n.py runs it small",
    "platobench stitch": "12 minutes; tests/experiments/test_stitch_cli.py runs --quick",
    "platobench score --metric mutual_knn --param k=10 --preprocess prh --x-model demo/minilm-l6 --y-model "
    "demo/efficientnet-lite0 --dataset openclipart-1024 --limit 644": "extracts two models on 1024 images from a "
        "fresh cache (~2 min); tests/committed/test_demo_regression.py extracts and checks the same features",
    "platobench data show my-stamps --datasets-file examples/own_data/datasets.yaml":
        "needs examples/own_data/make_folder.py run first; tests/data/test_datasets_file.py writes the folder and runs it",
    "platobench run --pairs demo/minilm-l6:demo/dinov2-s-imgfocus,baseline/bag-of-words:baseline/colour-histogram "
    "--settings own-mknn,own-parquet-mknn --settings-file examples/own_data/settings.yaml --datasets-file "
    "examples/own_data/datasets.yaml --out results/own": "needs make_folder.py first (about a minute); "
        "tests/data/test_datasets_file.py runs both settings on the baselines",
    "platobench run --pairs demo-vision-vision,demo-text-text --settings same-modality --out results/offline":
        "reuses the committed records; tests/bench/test_any_modality.py checks that a dry run reuses every one",
    "platobench run --pairs demo/efficientnet-lite0:demo/dinov2-s-imgfocus --settings demo-mknn --out "
    "results/offline": "one of the committed vision x vision records, reused",
    "platobench reports --results results --out reports": "rewrites reports/ in place; "
        "tests/committed/test_reports_rebuild.py rebuilds them into a temporary folder and compares the bytes",
    "platobench run --pairs offline --settings zs-tuxpaint,zs-fmnist --out results/offline":
        "reuses the committed zero-shot records; tests/committed/test_demo_regression.py recomputes some",
    "platobench run --pairs demo-views --settings views --out results/offline":
        "reuses the committed records; tests/bench/test_any_modality.py checks that a dry run reuses every one",
    "platobench extract --zoo zoo.yaml --model mine/tiny-cnn --dataset tuxpaint": "docs/extending/model.md's "
        "worked loader, in the reader's copy; tests/docs/test_docs_extending.py performs the page and extracts with it",
    "platobench run --zoo zoo.yaml --pairs demo/minilm-l6:mine/tiny-cnn --settings demo-mknn":
        "the same worked loader, scored; it exists only in the reader's copy of the package",
    "platobench run --settings-file spectrum.yaml --settings tux-spectrum --pairs demo --out results/spectrum":
        "docs/extending/protocol.md's worked setting kind, which exists only in the reader's copy; "
        "tests/docs/test_docs_extending.py performs the page and runs the kind on baselines",
    "platobench score --metric rsa_cosine": "docs/extending/metric.md's worked metric, which exists only in the "
        "reader's copy; tests/docs/test_docs_extending.py performs the page and runs the metric contract tests on it",
    "platobench submit my_encoder.yaml --settings demo --pairs demo --out results/offline":
        "my_encoder.yaml is the reader's file; tests/bench/test_submit_examples.py submits examples/",
}


def _readme_commands() -> set[str]:
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    found = set()
    # every fenced block in turn (a yaml or python block must not shift the pairing of the fences), shell ones read
    for lang, block in re.findall(r"```([a-z]*)\n(.*?)```", text, flags=re.S):
        if lang not in ("", "bash", "sh"):
            continue
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("platobench "):
                found.add(line)
    for span in re.findall(r"`(platobench [^`]+)`", text):
        found.add(" ".join(span.replace("\\|", "|").split()))
    return found


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "platobench") -> dict[str, argparse.ArgumentParser]:
    """Every (nested) subcommand parser by its full command ("platobench zoo list")."""
    out = {}
    for action in parser._actions:  # noqa: SLF001 -- argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                out[f"{prefix} {name}"] = sub
                out.update(_subparsers(sub, f"{prefix} {name}"))
    return out


def _help_commands() -> set[str]:
    found = set()
    for sub in _subparsers(build_parser()).values():
        for text in (sub.description or "", sub.epilog or ""):
            for example in re.findall(r"Example: (platobench [^;()]*?)(?:\.\s|\.$|$|;|\()", " ".join(text.split())):
                found.add(example.strip().rstrip("."))
    return found


COMMANDS = sorted(_readme_commands() | _help_commands())
SUBS = _subparsers(build_parser())


def _subcommand(command: str) -> tuple[str, list[str]]:
    """(the longest subcommand prefix of `command`, the remaining words)."""
    words = shlex.split(command)
    for n in range(len(words), 1, -1):
        head = " ".join(words[:n])
        if head in SUBS:
            return head, words[n:]
    raise AssertionError(f"{command!r}: no such subcommand")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}  # noqa: SLF001


def test_the_docs_name_commands():
    assert len(COMMANDS) > 20
    assert "platobench run --pairs demo --settings demo --out results/offline" in COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_documented_command_is_classified_and_parses(command):
    head, rest = _subcommand(command)
    if PLACEHOLDER.search(command.removeprefix("platobench ")):
        unknown = {w.split("=")[0].strip("[]") for w in rest if w.lstrip("[").startswith("--")} - _options(SUBS[head])
        assert not unknown, f"{command!r} names options {head} does not have: {sorted(unknown)}"
        return
    if not rest and command not in RUN and command not in PARSE_ONLY:
        return  # a subcommand named in a sentence ("`platobench run` reuses ...")
    assert command in RUN or command in PARSE_ONLY, f"classify the documented command {command!r} in this test"
    try:
        build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit as exc:
        pytest.fail(f"{command!r} does not parse as written (exit {exc.code})")


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A folder holding copies of the committed records under results/ (the demo's settings), as cwd."""
    for setting in ("demo-mknn", "demo-cka", "demo-rotation", "zs-tuxpaint", "zs-fmnist"):
        shutil.copytree(ROOT / "results" / "offline" / setting, tmp_path / "results" / "offline" / setting)
    monkeypatch.chdir(tmp_path)
    return tmp_path


CHEAP = sorted(c for c in RUN if not c.startswith(("platobench run", "platobench check", "platobench leaderboard")))


@pytest.mark.parametrize("command", CHEAP)
def test_cheap_documented_commands_run_as_written(command, scratch, capsys):
    assert main(shlex.split(command)[1:]) == 0, capsys.readouterr().err[-2000:]
    assert capsys.readouterr().out.endswith("\n")


@pytest.mark.slow
def test_the_demo_run_leaderboard_and_check_run_as_written(scratch, capsys, demo_features):
    """`make demo`'s two commands on copies of the committed records: every record is reused (nothing is
    recomputed), the board is printed and built; `check --scores-only` recomputes the demo's scores."""
    assert main(shlex.split("platobench run --pairs demo --settings demo --out results/offline")[1:]) == 0
    out = capsys.readouterr().out
    assert "written: 0, up to date (reused, inputs unchanged): 100, failed: 0" in out
    assert main(shlex.split("platobench leaderboard --results results --out leaderboard")[1:]) == 0
    assert (scratch / "leaderboard" / "index.html").is_file()
    shutil.rmtree(scratch / "results" / "offline")
    shutil.copytree(ROOT / "results" / "offline" / "demo-mknn", scratch / "results" / "offline" / "demo-mknn")
    for extra in (scratch / "results" / "offline" / "demo-mknn").glob("*.json"):
        if "minilm-l6__demo--efficientnet-lite0" not in extra.name:
            extra.unlink()
    assert main(shlex.split("platobench check --results results/offline --scores-only")[1:]) == 0
