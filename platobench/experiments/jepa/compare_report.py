"""The `jepa compare` report: jepa-compare.md (good minus bad per setting, next to the LLMs, and the board
of every record) and jepa-compare.json (the summary), written from the run's records, which are committed
beside it under records/ so that `platobench reports` rebuilds the report from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from platobench.api import ResultRecord, UserError, atomic_write_text, load_records, md_text
from platobench.experiments.jepa.compare import format_summary, summarize


def _runs(records: list[ResultRecord]) -> list[dict[str, Any]]:
    """Each trained JEPA's entry (its model name, views, seed, size, steps, final held-out loss, effective
    rank, ...), once, in seed then views order."""
    runs = {r.x.name: {"name": r.x.name, **r.details["jepa_compare"]} for r in records if "jepa_compare" in r.details}
    return sorted(runs.values(), key=lambda info: (info["seed"], info["views"]))


def report_markdown(records: list[ResultRecord], summary: dict[str, Any]) -> str:
    runs = _runs(records)
    first = runs[0]
    parent = first["parent_dataset"]
    lines = [
        "# JEPA compare: good views against bad views",
        "",
        f"Text JEPAs trained on {md_text(str(parent['name']))} with good views (two captions of one image) and "
        f"with bad views, {len(runs) // 2} seeds each, the same steps, seeds and held-out split "
        f"({first['heldout_fraction']:g} of the samples by id hash: {records[0].dataset.n} held-out images), "
        f"then measured against {md_text(records[0].y.name)} on the held-out images, next to the LLMs. "
        "good - bad: mean ± sample std over seeds (records under records/; `platobench jepa compare` reruns it, "
        "`platobench reports` rebuilds this page from the records).",
        "",
        format_summary(summary),
        "",
        "| run | views | seed | size | steps x batch | final held-out loss | effective rank |",
        "|---|---|---|---|---|---|---|",
        *[f"| {md_text(info['name'])} | {info['views']} | {info['seed']} | {info['size']} | "
          f"{info['steps']} x {info['batch_size']} | {info['final_loss']:.4f} | {info['effective_rank']:.1f} |"
          for info in runs],
    ]
    return "\n".join(lines) + "\n"


def write_report(records: list[ResultRecord], folder: Path) -> list[str]:
    """Write jepa-compare.md and jepa-compare.json of `records` (one compare run's) under `folder`."""
    seeds = sorted({r.details["jepa_compare"]["seed"] for r in records if "jepa_compare" in r.details})
    if not seeds:
        raise UserError("no jepa compare records (records whose details hold jepa_compare)")
    summary = summarize(records, seeds)
    payload = {"dataset": records[0].dataset.model_dump(mode="json"), "vision": records[0].y.name,
               "runs": _runs(records), "summary": summary}
    return [str(atomic_write_text(folder / "jepa-compare.md", report_markdown(records, summary))),
            str(atomic_write_text(folder / "jepa-compare.json", json.dumps(payload, indent=1) + "\n"))]


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: the report again under `out`/jepa-compare from the records committed under
    `reports`/jepa-compare/records (`results` is not read). UserError when there are none."""
    folder = reports / "jepa-compare" / "records"
    records = load_records(folder) if folder.is_dir() else []
    if not records:
        raise UserError(f"no jepa compare records under {folder}: run `platobench jepa compare --out {folder}` first")
    return write_report(records, out / "jepa-compare")
