"""The stitching run's report: REPORT/stitch.md (the leaderboard's stitching table of this run's records, sample
captions, CIDEr-D against K), REPORT/stitch.json (every record's rows, decoder and samples) and
REPORT/stitch-k.png (CIDEr-D of the paired map against the pairs it was fitted on, with the baselines as lines),
plus the terminal summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from platobench.api import (
    STITCH_HEADER,
    ResultRecord,
    UserError,
    atomic_write_text,
    build_boards,
    format_table,
    get_dataset,
    load_records,
    map_label,
    md_text,
    save_figure,
    stitch_extra,
    stitch_lines,
    stitch_section,
)
from platobench.experiments.stitch.run import StitchResult
from platobench.experiments.stitch.split import StitchSplit, split_dataset

LINE_STYLES = {"unpaired": "--", "shuffled": ":", "random": (0, (1, 3)), "retrieval": "-.", "text-bound": "--"}


def k_figure(records: list[ResultRecord]) -> Figure:
    """One panel per text encoder: CIDEr-D against K (log x) per vision model with bootstrap CIs as error bars;
    that pair's other variants as horizontal lines in its colour, the text encoder's text->text bound in black."""
    languages = list(dict.fromkeys(r.x.name for r in records))
    fig = Figure(figsize=(7 * len(languages), 4.8))
    for i, language in enumerate(languages):
        ax = fig.add_subplot(1, len(languages), i + 1)
        bound_drawn = False
        for record in (r for r in records if r.x.name == language):
            extra = stitch_extra(record)
            assert extra is not None
            paired = sorted((r for r in extra.rows if r.variant == "paired"), key=lambda r: r.k)
            ys = [r.cider_d for r in paired]
            err = [[y - r.cider_d_ci[0] for y, r in zip(ys, paired)], [r.cider_d_ci[1] - y for y, r in zip(ys, paired)]]
            line = ax.errorbar([r.k for r in paired], ys, yerr=err, marker="o", capsize=3,
                               label=f"{record.y.name}: paired map")
            for row in extra.rows:
                bound = row.variant == "text-bound"
                if row.variant not in LINE_STYLES or (bound and bound_drawn):
                    continue  # the text bound does not depend on the vision model: drawn once
                bound_drawn |= bound
                ax.axhline(row.cider_d, color="black" if bound else line[0].get_color(),
                           linestyle=LINE_STYLES[row.variant], linewidth=1,
                           label=f"{'text' if bound else record.y.name}: {map_label(row)}")
        ax.set_xscale("log")
        ax.set_xlabel("image-caption pairs the map is fitted on (K)")
        ax.set_ylabel("CIDEr-D on held-out images")
        ax.set_title(f"{records[0].setting}: {language} + text-only decoder", fontsize=10)
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return fig


def report_markdown(records: list[ResultRecord], split: StitchSplit, files: dict[str, str]) -> str:
    """stitch.md: one stitching table per board of this run's records, sample captions and the K plot."""
    s = split.as_dict()
    lines = [
        "# Stitching: frozen vision encoder -> one orthonormal map -> text-only caption decoder",
        "",
        f"Dataset {md_text(split.dataset.name)}: {s['train']} train images (the map's pairs), {s['test']} held-out "
        f"images captioned and scored; the decoder was trained on {s['decoder_train_captions']} train captions "
        f"only ({s['dropped_duplicates']} dropped for sharing a held-out caption's text).",
        "CIDEr-D and BLEU-4 (pycocoevalcap 1.2) against every reference of each held-out image; [lo, hi]: 95% "
        "percentile bootstrap over images. CIDEr-D on pycocoevalcap's scale, the one COCO captioning papers report.",
    ]
    for board in build_boards(records):
        lines += ["", f"## {md_text(board.title)}", *stitch_lines(stitch_section(board))]
    if "k_plot" in files:
        lines += ["", f"![CIDEr-D against K]({Path(files['k_plot']).name})"]
    return "\n".join(lines) + "\n"


def run_records(out: Path, setting: str, split: StitchSplit) -> list[ResultRecord]:
    """Every record of `setting` under `out` on this split's held-out images: this run's and those of earlier
    runs with other models (`stitch --text ...` adds its pairs to the same board and report)."""
    fingerprint = split.test_set.fingerprint
    return [r for r in load_records(out) if r.setting == setting and r.dataset.fingerprint == fingerprint]


def write_report(records: list[ResultRecord], split: StitchSplit, folder: Path) -> list[str]:
    """Write stitch.md, stitch.json and stitch-k.png of `records` (stitch records of one setting) under
    `folder`; return their paths."""
    files: dict[str, str] = {}
    if records:
        files["k_plot"] = str(save_figure(k_figure(records), folder / "stitch-k.png"))
    summary: dict[str, Any] = {
        "split": split.as_dict(), "dataset": split.dataset.name,
        "records": [{"setting": r.setting, "language": r.x.name, "vision": r.y.name, "score": r.score,
                     "runtime_s": r.runtime_s, "created": r.created, **r.details["stitch"]} for r in records],
    }
    files["json"] = str(atomic_write_text(folder / "stitch.json", json.dumps(summary, indent=1) + "\n"))
    files["markdown"] = str(atomic_write_text(folder / "stitch.md", report_markdown(records, split, files)))
    return [files[k] for k in ("markdown", "json", "k_plot") if k in files]


def print_summary(result: StitchResult) -> None:
    """The stitching table of the run's records on stdout."""
    for board in build_boards(result.records):
        section = stitch_section(board)
        if section is None:
            continue
        print(board.title)
        print("\n".join(format_table(STITCH_HEADER, section.rows, right={3, 4, 6}, rule=True)))
        print()


def rebuild(results: Path, reports: Path, out: Path) -> list[str]:
    """`platobench reports`: the stitch report again under `out`/stitch from the stitch records under
    `results` (the committed ones: results/stitch). Each setting's held-out split is rebuilt from what its
    records state (`details.stitch.scoring` and `.split`), as `check` does; a second setting gets a folder
    of its own (`out`/stitch/<setting>). UserError when there is no stitch record or its split cannot be
    rebuilt. `reports` is not read: the records hold everything."""
    records = [r for r in load_records(results) if r.kind == "stitch"]
    if not records:
        raise UserError(f"no stitch records under {results}: run `platobench stitch` first")
    settings = sorted({r.setting for r in records})
    written: list[str] = []
    for setting in settings:
        mine = [r for r in records if r.setting == setting]
        extra = stitch_extra(mine[0])
        assert extra is not None  # kind "stitch"
        if extra.scoring is None:
            raise UserError(f"the stitch records of {setting} do not say how they were scored: rerun `platobench stitch`")
        dataset = get_dataset(extra.scoring.dataset, limit=extra.scoring.limit)
        split = split_dataset(dataset, extra.split.heldout_fraction, views=extra.scoring.views)
        mine = [r for r in mine if r.dataset.fingerprint == split.test_set.fingerprint]
        folder = out / "stitch" if len(settings) == 1 else out / "stitch" / setting
        written += write_report(mine, split, folder)
    return written
