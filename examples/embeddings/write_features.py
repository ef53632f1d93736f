"""Embeddings computed elsewhere, put on a board: the char-n-gram encoder of examples/text_encoder.py run
outside platobench on the Tux Paint captions, saved as `.npy` [L, N, D] with one sample id per line in
`<file>.ids.txt`, which `zoo.yaml` beside this script names with `loader: features`.

    python examples/embeddings/write_features.py [--limit 64]
    platobench run --pairs example/char-ngrams-file:demo/dinov2-s-imgfocus --settings demo-mknn \
        --zoo examples/embeddings/zoo.yaml --limit 64 --out /tmp/pb-embeddings
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from platobench.data import get_dataset

HERE = Path(__file__).resolve().parent


def write(out: Path, limit: int | None = None) -> Path:
    """Features [2, N, 128] of caption 0 of the first `limit` tuxpaint samples (None: all 644) -> out."""
    sys.path.insert(0, str(HERE.parent))
    from text_encoder import CharNgrams

    ds = get_dataset("tuxpaint", limit=limit)
    features = CharNgrams().encode(ds.captions(0)).transpose(1, 0, 2).astype(np.float32)  # [N, L, D] -> [L, N, D]
    np.save(out, features)
    out.with_name(out.name + ".ids.txt").write_text("".join(i + "\n" for i in ds.ids), encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="the first N samples (default: all 644)")
    ap.add_argument("--out", type=Path, default=HERE / "char_ngrams.npy", help="the .npy file to write")
    args = ap.parse_args()
    print(f"wrote {write(args.out, args.limit)}")


if __name__ == "__main__":
    main()
