"""The stitching split, planted features, retrieval and the --k parser: known answers and refusals."""

from __future__ import annotations

import pytest
import torch

from platobench.data.base import PairedDataset
from platobench.data.heldout import is_heldout
from platobench.errors import UserError
from platobench.experiments.stitch.commands import parse_ks
from platobench.experiments.stitch.evaluate import nearest_captions, sample_rows
from platobench.experiments.stitch.planted import planted_features
from platobench.experiments.stitch.split import normalised_text, split_dataset


def _dataset(views: list[list[str]]) -> PairedDataset:
    return PairedDataset("toy", "1", [f"s{i}" for i in range(len(views))], views, lambda i: None)


def test_split_follows_the_id_hash_and_keeps_held_out_text_from_the_decoder() -> None:
    views = [[f"Caption number {i}.", f"second view {i}"] for i in range(60)]
    ds = _dataset(views)
    split = split_dataset(ds, 0.3)
    assert split.test == [i for i in range(60) if is_heldout(f"s{i}", 0.3)]
    assert sorted(split.train + split.test) == list(range(60))
    assert split.views == 2 and split.dropped == 0
    assert len(split.decoder_items) == 2 * len(split.train)
    assert split.references()[0] == views[split.test[0]]
    assert split.test_set.name == "toy:heldout0.3" and len(split.test_set) == len(split.test)


def test_a_train_caption_equal_to_a_held_out_reference_never_reaches_the_decoder() -> None:
    views = [[f"caption {i}"] for i in range(60)]
    ds0 = _dataset(views)
    test = split_dataset(ds0, 0.3).test
    train = split_dataset(ds0, 0.3).train
    views[train[0]] = ["  CAPTION   " + views[test[0]][0].split()[1]]  # same text, other case and spacing
    split = split_dataset(_dataset(views), 0.3)
    assert split.dropped == 1
    held = {normalised_text(c) for refs in split.references() for c in refs}
    assert not held & {normalised_text(c) for c in split.decoder_captions()}
    assert len(split.decoder_captions()) == len(split.train) - 1


def test_split_refusals() -> None:
    ds = _dataset([[f"c{i}"] for i in range(60)])
    for fraction in (0, 1, -0.1):
        with pytest.raises(UserError, match="--heldout"):
            split_dataset(ds, fraction)
    with pytest.raises(UserError, match="--captions 2"):
        split_dataset(ds, 0.3, views=2)
    with pytest.raises(UserError, match="at least"):
        split_dataset(_dataset([[f"c{i}"] for i in range(6)]), 0.3)


def test_planted_features_are_a_rotation_of_the_text_without_noise() -> None:
    text = torch.randn(50, 8, generator=torch.Generator().manual_seed(0))
    x = planted_features(text, seed=3, noise=0.0).double()
    gram_t, gram_x = text.double() @ text.double().T, x @ x.T  # a rotation keeps every inner product
    assert torch.allclose(gram_t, gram_x, atol=1e-4)
    assert not torch.allclose(x, text.double(), atol=1e-2)
    noisy = planted_features(text, seed=3, noise=0.5).double()
    rel = float((noisy - x).norm() / (x - x.mean(0)).norm())
    assert 0.3 < rel < 0.7  # noise 0.5 of the centred rows' norm
    assert torch.equal(planted_features(text, seed=3, noise=0.5), planted_features(text, seed=3, noise=0.5))


def test_nearest_captions_by_cosine_with_lower_index_on_ties() -> None:
    bank = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    z = torch.tensor([[3.0, 0.1], [0.0, 5.0], [-1.0, 0.0]])
    assert nearest_captions(z, bank, ["a", "b", "c"]) == ["a", "c", "c"]


def test_sample_rows_are_seeded_and_carry_every_variant() -> None:
    ids = [f"i{k}" for k in range(20)]
    refs = [[f"r{k}"] for k in range(20)]
    caps = {"paired K=10": [f"p{k}" for k in range(20)], "random": [f"x{k}" for k in range(20)]}
    rows = sample_rows(ids, refs, caps, seed=1)
    assert len(rows) == 5 and rows == sample_rows(ids, refs, caps, seed=1)
    for row in rows:
        k = int(row["id"][1:])
        assert row["references"] == [f"r{k}"] and row["captions"] == {"paired K=10": f"p{k}", "random": f"x{k}"}
    assert len(sample_rows(ids[:3], refs[:3], {k: v[:3] for k, v in caps.items()}, seed=0)) == 3


def test_parse_ks() -> None:
    assert parse_ks("8, 32,all") == [8, 32, None]
    for bad in ("", "2", "eight", "8,,all", "-4"):
        with pytest.raises(UserError, match="--map-pairs"):
            parse_ks(bad)
