"""Suite-wide settings for running the tests on several pytest-xdist workers (`make test`: one per core).

Each worker is a process of its own, and torch gives every process one intra-op thread per core: two
workers on two cores then run four busy threads (plus the data-loader and subprocess threads of the
end-to-end tests), and the training tests took up to 9x longer than alone (stitch --quick 38 s -> 335 s).
Under a worker, torch, OpenMP and MKL get one thread each — in this process and, through the environment,
in every `platobench` subprocess a test starts. One process (`make test WORKERS=0`, plain `pytest`) keeps
torch's defaults. Scores do not depend on this beyond float rounding, which every comparison with committed
records already tolerates (`platobench check`'s tolerance and the rounding-sensitivity draws).
"""

from __future__ import annotations

import os

WORKER_THREADS = 1

if os.environ.get("PYTEST_XDIST_WORKER"):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(WORKER_THREADS)
    import torch

    torch.set_num_threads(WORKER_THREADS)
