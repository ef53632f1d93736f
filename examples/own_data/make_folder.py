"""Write a dataset of your own from images already installed: the first N Tux Paint stamps (Debian's
tuxpaint-stamps-default, GPL-2) as PNG files in a folder, plus a manifest (JSONL: id, file, caption) and a
parquet copy in the layout of a hub dataset (image bytes and a caption column), which `datasets.yaml` beside
this script defines as `my-stamps` and `my-stamps-parquet`.

    python examples/own_data/make_folder.py [--n 64] [--out examples/own_data]
    platobench data show my-stamps --datasets-file examples/own_data/datasets.yaml
    platobench run --pairs demo/minilm-l6:demo/dinov2-s-imgfocus,baseline/bag-of-words:baseline/colour-histogram \
        --settings own-mknn --settings-file examples/own_data/settings.yaml \
        --datasets-file examples/own_data/datasets.yaml --out results/own
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from platobench.data import get_dataset


def write_folder(out: Path, n: int) -> None:
    """`out`/photos/<id>.png + photos/manifest.jsonl, and `out`/parquet/test.parquet (columns id, image
    {bytes, path}, caption), from the first `n` samples of the installed `tuxpaint` dataset."""
    import pandas as pd

    ds = get_dataset("tuxpaint", limit=n)
    photos = out / "photos"
    photos.mkdir(parents=True, exist_ok=True)
    rows, table = [], []
    for i, (sample_id, caption) in enumerate(zip(ds.ids, ds.captions(0))):
        name = f"{i:04d}.png"
        buffer = io.BytesIO()
        ds.image(i).save(buffer, format="PNG")
        (photos / name).write_bytes(buffer.getvalue())
        rows.append({"id": sample_id, "file": name, "caption": caption})
        table.append({"id": sample_id, "image": {"bytes": buffer.getvalue(), "path": name}, "caption": caption})
    (photos / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (out / "parquet").mkdir(exist_ok=True)
    pd.DataFrame(table).to_parquet(out / "parquet" / "test.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64, help="how many stamps (default 64)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="folder to write into")
    args = ap.parse_args()
    write_folder(args.out, args.n)
    print(f"wrote {args.n} stamps to {args.out / 'photos'} and {args.out / 'parquet'}")


if __name__ == "__main__":
    main()
