"""`platobench.bench.jobs`: the one place a job is scored (`score_job`) and the scorer registry."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from bench_fixtures import make_record

from platobench.bench.jobs import JobInputs, SideInputs, score_job
from platobench.bench.protocols import scorer_for, scorers
from platobench.bench.scoring import score_paired
from platobench.bench.settings import Setting
from platobench.bench.zeroshot_scoring import score_zeroshot
from platobench.errors import UserError
from platobench.features.store import SampleMismatchError
from platobench.metrics.cached_layers import CachedLayers, MemoryStatistics
from platobench.results import DatasetRef, Provenance
from platobench.zoo import load_zoo

LANG, VIS = (load_zoo().get(n) for n in ("demo/minilm-l6", "demo/dinov2-s-imgfocus"))
SETTING = Setting(id="t-cka", dataset="openclipart-1024", metric="cka", selection="best", n_perm=2, n_ci=0)


@dataclass
class Entry:
    """The parts of a FeatureEntry `score_job` reads."""

    layers: list[torch.Tensor]
    ids: list[str]
    digest: str
    key: dict[str, Any] = field(default_factory=dict)

    def cached_layers(self) -> CachedLayers:
        return CachedLayers(self.layers, MemoryStatistics())


@dataclass
class Data:
    name: str = "ds"
    revision: str = "r1"
    fingerprint: str = "f" * 64
    n: int = 12

    def __len__(self) -> int:
        return self.n


def entries(n: int = 12, seed: int = 0) -> tuple[Entry, Entry]:
    g = torch.Generator().manual_seed(seed)
    ids = [f"s{i}" for i in range(n)]
    key = {"dataset": "ds", "dataset_revision": "r1"}
    a = Entry([torch.randn(n, 4, generator=g) for _ in range(2)], ids, "da", {**key, "model": "l", "model_revision": "ra"})
    b = Entry([torch.randn(n, 3, generator=g) for _ in range(3)], ids, "db", {**key, "model": "v", "model_revision": "rb"})
    return a, b


def paired_inputs(data: Data | None = None, **kwargs: Any) -> JobInputs:
    data = data or Data()
    return JobInputs(SideInputs(data, "caption:0", None, "caption:0"), SideInputs(data, "image", None, "image"),
                     data, True, kwargs)


def test_registry_names_the_two_scorers_and_refuses_an_unknown_kind():
    assert scorer_for("paired") is score_paired and scorer_for("zeroshot") is score_zeroshot
    assert {k: v for k, v in scorers().items() if k in ("paired", "zeroshot")} == {"paired": score_paired, "zeroshot": score_zeroshot}
    with pytest.raises(UserError, match="'retrieval' has no scorer"):
        scorer_for("retrieval")


def test_importing_jobs_does_not_import_torch():
    code = "import sys, platobench.bench.jobs; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_score_job_passes_layers_dataset_digests_revisions_and_kwargs():
    calls = []

    def fake(setting, language, vision, xs, ys, dataset, *, inputs, revisions, **kw):
        calls.append((setting, language, vision, xs, ys, dataset, inputs, revisions, kw))
        return make_record(setting.id, language.name, vision.name, 0.5, provenance=Provenance(inputs=inputs))

    a, b = entries()
    record = score_job(SETTING, LANG, VIS, (a, b), paired_inputs(labels=[1]), scorer=fake, limit=7)
    (setting, lang, vis, xs, ys, dataset, inputs, revisions, kw), = calls
    assert (setting, lang, vis) == (SETTING, LANG, VIS)
    assert list(xs) == a.layers and list(ys) == b.layers and kw == {"labels": [1], "reads": ("caption:0", "image")}
    assert dataset == DatasetRef(name="ds", revision="r1", n=12, fingerprint="f" * 64)
    assert inputs == {"x": "da", "y": "db"} and revisions == ("ra", "rb")
    assert list(record.provenance.model_dump()) == ["git_sha", "inputs", "setting_config", "limit"]
    assert record.provenance.setting_config == SETTING.model_dump(mode="json") and record.provenance.limit == 7


def test_score_job_transforms_each_models_layers_before_scoring():
    seen = []

    def fake(setting, language, vision, xs, ys, dataset, **kw):
        seen.append((xs, ys))
        return make_record(setting.id, language.name, vision.name, 0.5)

    a, b = entries()
    score_job(SETTING, LANG, VIS, (a, b), paired_inputs(), scorer=fake, transform=lambda ls: [2 * x for x in ls])
    xs, ys = seen[0]
    assert all(torch.equal(x, 2 * y) for x, y in zip(xs, a.layers)) and len(ys) == 3


def test_paired_entries_of_other_samples_are_refused_before_scoring():
    a, b = entries()
    b.ids = list(reversed(b.ids))

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("scored unpaired entries")

    with pytest.raises(SampleMismatchError, match="not paired row by row"):
        score_job(SETTING, LANG, VIS, (a, b), paired_inputs(), scorer=never)
    unpaired = JobInputs(SideInputs(Data(), "p", ["t"], "prompts"), SideInputs(Data(), "image", None, "image"),
                         Data(), False, {})
    calls = []
    score_job(SETTING, LANG, VIS, (a, b), unpaired,
              scorer=lambda s, lang, vis, *r, **k: calls.append(1) or make_record(s.id, lang.name, vis.name, 0.1))
    assert calls == [1]  # zero-shot inputs (prompts vs images) are not row-paired


def test_score_job_with_the_registered_scorer_equals_the_scorer_bit_for_bit():
    a, b = entries()
    record = score_job(SETTING, LANG, VIS, (a, b), paired_inputs(), scorer=scorer_for(SETTING.kind))
    direct = score_paired(SETTING, LANG, VIS, a.layers, b.layers,
                          DatasetRef(name="ds", revision="r1", n=12, fingerprint="f" * 64),
                          inputs={"x": "da", "y": "db"}, revisions=("ra", "rb"))
    assert record.grid == direct.grid and record.score == direct.score and record.null == direct.null
    assert record.x.revision == "ra" and record.provenance.inputs == {"x": "da", "y": "db"}
