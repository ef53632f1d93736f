"""Benchmark of `platobench.AlignmentProbe.score` against scoring the same pair as `platobench run` does.

Real demo weights, offline (cached features; a cold cache extracts them first, not timed): the reference
demo/dinov2-s-imgfocus on the Tux Paint images (N = 644) under demo-mknn and demo-cka, probed with
demo/minilm-l6's caption features. Per setting, interleaved, best of `--repeats`:
- probe: `probe.score(features)`, the reference's summaries computed once when the probe was built;
- baseline: `bench.scoring.score_paired` on the same features with the setting's null and interval off
  (its grid, selection and, for the kNN metrics, the rounding check): what a checkpoint costs when each one
  is scored as a record without its statistics.
The probe's score must equal the baseline's bit for bit; its distance to the committed record's
(results/offline/<setting>/...json, computed on another CPU: `check` holds it to 1e-3) is printed, unless
`--limit` takes fewer samples than the record has. `--tiny`: random-initialised baselines (no weights), 24
samples, one repeat.

    .venv/bin/python benchmarks/probe.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tiny import parse_tiny

import platobench
from platobench.bench.jobs import score_job
from platobench.bench.protocols import scorer_for
from platobench.bench.runner import job_inputs
from platobench.bench.settings import Catalog
from platobench.features.extract import extract
from platobench.features.store import FeatureStore
from platobench.zoo import load_zoo

RECORDS = Path(__file__).resolve().parents[1] / "results" / "offline"


def committed_score(sid: str, probed: str, reference: str, n: int) -> float | None:
    """The score of the committed record of the pair under `sid`, None when there is none on `n` samples."""
    path = RECORDS / sid / f"{probed.replace('/', '--')}__{reference.replace('/', '--')}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return record["score"] if record["dataset"]["n"] == n else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--settings", default="demo-mknn,demo-cka")
    ap.add_argument("--reference", default="demo/dinov2-s-imgfocus", help="the vision reference (zoo name)")
    ap.add_argument("--probed", default="demo/minilm-l6", help="the text model probed (zoo name)")
    ap.add_argument("--limit", type=int, default=None, help="the first N samples (default: all)")
    args = parse_tiny(ap, argv, repeats=1, reference="baseline/random-init-efficientnet-lite0",
                      probed="baseline/random-init-minilm-l6", limit=24)
    zoo, store, catalog = load_zoo(), FeatureStore(), Catalog()
    for sid in args.settings.split(","):
        setting = catalog.settings[sid]
        job_in = job_inputs(setting, args.limit, {})
        text, vision = zoo.get(args.probed), zoo.get(args.reference)
        t_entry, _ = extract(text, job_in.x.data, store=store, prompt=job_in.x.prompt, progress=False)
        v_entry, _ = extract(vision, job_in.y.data, store=store, prompt=job_in.y.prompt, progress=False)
        t0 = time.perf_counter()
        probe = platobench.AlignmentProbe(args.reference, setting=sid, limit=args.limit)
        build_s = time.perf_counter() - t0
        features = [x.clone() for x in t_entry.cached_layers()]
        quick = setting.model_copy(update={"n_perm": 0, "n_ci": 0})
        scorer = scorer_for(setting.kind)
        best_probe = best_base = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            got = probe.score(features)
            best_probe = min(best_probe, time.perf_counter() - t0)
            t0 = time.perf_counter()
            record = score_job(quick, text, vision, (t_entry, v_entry), job_in, scorer=scorer, limit=args.limit)
            best_base = min(best_base, time.perf_counter() - t0)
        committed = committed_score(sid, args.probed, args.reference, len(probe))
        print(json.dumps({
            "setting": sid, "n": len(probe), "probe_build_s": round(build_s, 3), "probe_score_s": round(best_probe, 4),
            "baseline_score_s": round(best_base, 4), "ratio_baseline_over_probe": round(best_base / best_probe, 2),
            "probe_score": got.score, "baseline_score": record.score, "committed_score": committed,
            "probe_equals_run": got.score == record.score,
            "committed_diff": None if committed is None else abs(got.score - committed),
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
