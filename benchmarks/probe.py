"""Benchmark of `platobench.AlignmentProbe.score` against scoring the same pair as `platobench run` does.

Real demo weights, offline (cached features; a cold cache extracts them first, not timed): the reference
demo/dinov2-s-imgfocus on the Tux Paint images (N = 644) under demo-mknn and demo-cka, probed with
demo/minilm-l6's caption features. Per setting, interleaved, best of `--repeats`:
- probe: `probe.score(features)`, the reference's summaries computed once when the probe was built;
- baseline: `bench.scoring.score_paired` on the same features with the setting's null and interval off
  (its grid, selection and, for the kNN metrics, the rounding check): what a checkpoint costs when each one
  is scored as a record without its statistics.
The probe's score must equal the baseline's bit for bit; its distance to the committed record's
(results/offline/<setting>/...json, computed on another CPU: `check` holds it to 1e-3) is printed.

    .venv/bin/python benchmarks/probe.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import platobench
from platobench.bench.jobs import score_job
from platobench.bench.runner import job_inputs
from platobench.bench.settings import Catalog
from platobench.features.extract import extract
from platobench.features.store import FeatureStore
from platobench.zoo import load_zoo

REFERENCE, PROBED = "demo/dinov2-s-imgfocus", "demo/minilm-l6"
RECORDS = Path(__file__).resolve().parents[1] / "results" / "offline"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--settings", default="demo-mknn,demo-cka")
    args = ap.parse_args()
    zoo, store, catalog = load_zoo(), FeatureStore(), Catalog()
    for sid in args.settings.split(","):
        setting = catalog.settings[sid]
        job_in = job_inputs(setting, None, {})
        text, vision = zoo.get(PROBED), zoo.get(REFERENCE)
        t_entry, _ = extract(text, job_in.x.data, store=store, prompt=job_in.x.prompt, progress=False)
        v_entry, _ = extract(vision, job_in.y.data, store=store, prompt=job_in.y.prompt, progress=False)
        t0 = time.perf_counter()
        probe = platobench.AlignmentProbe(REFERENCE, setting=sid)
        build_s = time.perf_counter() - t0
        features = [x.clone() for x in t_entry.cached_layers()]
        quick = setting.model_copy(update={"n_perm": 0, "n_ci": 0})
        best_probe = best_base = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            got = probe.score(features)
            best_probe = min(best_probe, time.perf_counter() - t0)
            t0 = time.perf_counter()
            record = score_job(quick, text, vision, (t_entry, v_entry), job_in)
            best_base = min(best_base, time.perf_counter() - t0)
        committed = json.loads((RECORDS / sid / "demo--minilm-l6__demo--dinov2-s-imgfocus.json").read_text())
        print(json.dumps({
            "setting": sid, "n": len(probe), "probe_build_s": round(build_s, 3), "probe_score_s": round(best_probe, 4),
            "baseline_score_s": round(best_base, 4), "ratio_baseline_over_probe": round(best_base / best_probe, 2),
            "probe_score": got.score, "baseline_score": record.score, "committed_score": committed["score"],
            "probe_equals_run": got.score == record.score, "committed_diff": abs(got.score - committed["score"]),
        }))


if __name__ == "__main__":
    main()
