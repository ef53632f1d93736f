"""Preprocessing (platobench.metrics.preprocess): `prh` and `prh_exact` against the reference protocol's
written definition (platonic-rep `metrics.remove_outliers` on the [N, L, D] stack, then
`F.normalize` per layer), bit for bit; streaming; errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from platobench.errors import UserError
from platobench.metrics import layer_grid, score
from platobench.metrics import preprocess as pp
from platobench.metrics.preprocess import LayerStack, prepared_layers, prh_clamp_value, prh_exact_clamp_value


def stack(n: int, layers: int, d: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    """[N, L, D] features with heavy-tailed, layer-dependent scales (so the clamp matters)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, layers, d, generator=g, dtype=torch.float64)
    x = x * torch.rand(1, layers, d, generator=g, dtype=torch.float64) * 4
    x[:, :, 0] += 30 * torch.rand(n, layers, generator=g, dtype=torch.float64)  # outlier dimension
    return x.to(dtype)


def reference_prh(feats: torch.Tensor, exact: bool) -> list[torch.Tensor]:
    """The published steps, as written: q = 0.95; exact=False: mean of per-sample torch.quantile of
    |x| over the sample's flattened [L, D]; exact=True: sort of every |x|, index int(q * numel); clamp
    the stack; then F.normalize(p=2, dim=-1) each layer."""
    q = 0.95
    if exact:
        q_val = feats.view(-1).abs().sort().values[int(q * feats.numel())]
    else:
        q_val = torch.quantile(feats.abs().flatten(start_dim=1), q, dim=1).mean()
    feats = feats.clamp(-q_val, q_val)
    return [F.normalize(feats[:, i, :], p=2, dim=-1) for i in range(feats.shape[1])]


@pytest.mark.parametrize("mode,exact", [("prh", False), ("prh_exact", True)])
@pytest.mark.parametrize("shape,dtype", [((50, 4, 9), torch.float32), ((33, 7, 16), torch.float32), ((20, 3, 5), torch.float64)])
def test_prh_matches_reference_bit_for_bit(mode, exact, shape, dtype):
    feats = stack(*shape, seed=shape[0], dtype=dtype)
    ours = list(prepared_layers(LayerStack([feats[:, i] for i in range(shape[1])], "Xs"), mode))
    ref = reference_prh(feats, exact)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a.dtype == dtype and torch.equal(a, b)


def test_prh_blocks_of_rows_give_the_same_value(monkeypatch):
    feats = stack(40, 3, 11, seed=5)
    layers = LayerStack([feats[:, i] for i in range(3)], "Xs")
    whole = prh_clamp_value(layers)
    monkeypatch.setattr(pp, "_QUANTILE_BLOCK", 70)  # two rows per torch.quantile call
    assert torch.equal(prh_clamp_value(layers), whole)


def test_prh_and_prh_exact_are_different_statistics():
    """The published default (per-sample quantile, then mean) is not the whole-stack quantile."""
    feats = torch.randn(60, 3, 8, generator=torch.Generator().manual_seed(6))
    feats[:30] *= 10  # half of the samples are much larger
    layers = LayerStack([feats[:, i] for i in range(3)], "Xs")
    per_sample, whole = float(prh_clamp_value(layers)), float(prh_exact_clamp_value(layers))
    assert per_sample < 0.8 * whole


def test_widths_may_differ_values_are_concatenated_per_sample():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(25, 3, generator=g), 5 * torch.randn(25, 8, generator=g)
    joined = torch.cat([a, b], dim=1).abs()
    assert torch.equal(prh_clamp_value(LayerStack([a, b], "Xs")), torch.quantile(joined, 0.95, dim=1).mean())
    assert torch.equal(prh_exact_clamp_value(LayerStack([a, b], "Xs")), joined.flatten().sort().values[int(0.95 * joined.numel())])


def test_clamp_uses_the_whole_stack_even_for_a_subset_of_layers():
    feats = stack(30, 4, 6, seed=7)
    layers = LayerStack([feats[:, i] for i in range(4)], "Xs")
    full = list(prepared_layers(layers, "prh"))
    assert torch.equal(next(prepared_layers(layers, "prh", indices=[2])), full[2])


def test_layer_grid_applies_preprocessing_to_each_stack():
    xs, ys = stack(40, 3, 8, seed=8), stack(40, 2, 5, seed=9)
    ref_x, ref_y = reference_prh(xs, exact=False), reference_prh(ys, exact=False)
    grid = layer_grid("cka", xs.transpose(0, 1), ys.transpose(0, 1), preprocess="prh")
    assert torch.allclose(grid, layer_grid("cka", ref_x, ref_y), atol=1e-12)
    l2 = [F.normalize(xs[:, 0], dim=-1)]
    assert score("cka", xs[:, 0], ys[:, 0], preprocess="l2") == pytest.approx(float(layer_grid("cka", l2, [F.normalize(ys[:, 0], dim=-1)])[0, 0]))


def test_l2_rows_unit_norm_and_zero_rows_stay_zero():
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    assert torch.equal(pp.l2_rows(x), torch.tensor([[0.6, 0.8], [0.0, 0.0]]))


def test_streaming_reads_each_layer_a_bounded_number_of_times():
    class Counting(list):
        reads = 0

        def __getitem__(self, i):
            Counting.reads += 1
            return super().__getitem__(i)

    feats = stack(20, 5, 4, seed=10)
    layers = Counting(feats[:, i] for i in range(5))
    out = list(prepared_layers(LayerStack(layers, "Xs"), "prh"))
    # shapes, the clamp pass, the yield pass (+ the sample count of layer 0)
    assert len(out) == 5 and Counting.reads <= 5 * 3 + 2


def test_errors():
    x = torch.randn(10, 3)
    with pytest.raises(UserError, match="preprocess must be one of"):
        score("cka", x, x, preprocess="zscore")
    with pytest.raises(UserError, match=r"Xs\[1\] has 9 samples"):
        prh_clamp_value(LayerStack([x, torch.randn(9, 3)], "Xs"))
