"""Suite-wide settings for running the tests on several pytest-xdist workers (`make test`: one per core), and
the session fixture `demo_features` (real demo features several test files read, extracted once).

Each worker is a process of its own, and torch gives every process one intra-op thread per core: two
workers on two cores then run four busy threads (plus the data-loader and subprocess threads of the
end-to-end tests), and the training tests took up to 9x longer than alone (stitch --quick 38 s -> 335 s).
Under a worker, torch, OpenMP and MKL get one thread each — in this process and, through the environment,
in every `platobench` subprocess a test starts. One process (`make test WORKERS=0`, plain `pytest`) keeps
torch's defaults. Scores do not depend on this beyond float rounding, which every comparison with committed
records already tolerates (`platobench check`'s tolerance and the rounding-sensitivity draws).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from platobench.features.store import FeatureEntry

WORKER_THREADS = 1

if os.environ.get("PYTEST_XDIST_WORKER"):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(WORKER_THREADS)
    import torch

    torch.set_num_threads(WORKER_THREADS)


# --- the real demo features several test files read --------------------------------------------------------

# (model, dataset, input): full-size entries of the session's feature cache ($PLATOBENCH_HOME) that more than
# one test file reads, whole or as their first N samples (the store slices a cached superset instead of
# running the model again): DINOv2-S on the stamps (the encoder, scaling-n and jepa --quick tests), MiniLM-L6
# on their captions and EfficientNet-Lite0 on the stamps (the README's `check`, the offline regression).
SHARED_FEATURES = (
    ("demo/dinov2-s-imgfocus", "tuxpaint", "image"),
    ("demo/minilm-l6", "tuxpaint", "caption:0"),
    ("demo/efficientnet-lite0", "tuxpaint", "image"),
)


@pytest.fixture(scope="session")
def demo_features() -> dict[tuple[str, str, str], FeatureEntry]:
    """The `SHARED_FEATURES` entries, extracted once into the session's cache and returned by (model,
    dataset, input). Each pytest-xdist worker walks the list from its own end (gw0 forward, gw1 backward,
    ...): the store's entry locks make a worker that reaches an entry another is writing wait and then read
    it, so the two cores extract different models instead of the same one."""
    from platobench.data import get_dataset
    from platobench.features.extract import extract
    from platobench.features.store import FeatureStore
    from platobench.zoo import load_zoo

    zoo, store = load_zoo(), FeatureStore()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    order = SHARED_FEATURES if int(worker.removeprefix("gw") or 0) % 2 == 0 else SHARED_FEATURES[::-1]
    entries = {}
    for model, dataset, prompt in order:
        entries[(model, dataset, prompt)], _ = extract(zoo.get(model), get_dataset(dataset), store=store,
                                                       prompt=prompt, progress=False)
    return entries


@pytest.fixture
def calibration_log() -> Callable[..., None]:
    """A function that appends one calibration cell's figures as a JSON line to $PLATOBENCH_CALIBRATION_LOG
    (`make calibrate-full` sets it and prints the file after the cells), so docs/statistics.md's tables come
    from the run that stamps it; without the variable it does nothing."""
    path = os.environ.get("PLATOBENCH_CALIBRATION_LOG")

    def log(**row: Any) -> None:
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, default=float) + "\n")

    return log
