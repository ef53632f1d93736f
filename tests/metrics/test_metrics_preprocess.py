"""Preprocessing (platobench.metrics.preprocess): `prh` and `prh_exact` against the reference protocol's
written definition (platonic-rep `metrics.remove_outliers` on the [N, L, D] stack, then
`F.normalize` per layer), bit for bit; streaming; errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from platobench.errors import UserError
from platobench.metrics import layer_grid, score
from platobench.metrics import preprocess as pp
from platobench.metrics.preprocess import (
    LayerStack,
    RowSubset,
    prepared_layers,
    prh_clamp_value,
    prh_exact_clamp_value,
)
from platobench.metrics.validation import pow2_unit, unit_peak


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


def reference_pow2(x: torch.Tensor) -> torch.Tensor:
    """validation.pow2_unit as written before prepared layers were marked: x 2^-e, max |x| in [0.5, 1)."""
    low, high = torch.aminmax(x)
    peak = max(-float(low), float(high))
    if not 0.0 < peak < math.inf or math.frexp(peak)[1] == 0:
        return x
    e = math.frexp(peak)[1]
    if abs(e) < 100:
        return x * 2.0**-e
    a = -e // 2
    return x * 2.0**a * 2.0 ** (-e - a)


def reference_unit(x: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
    """A prepared l2 (or, with the clamp value c, prh) layer: the steps each metric took before."""
    if c is not None:
        x = x.clamp(-c.to(x.dtype), c.to(x.dtype))
    return reference_pow2(F.normalize(reference_pow2(x), p=2, dim=-1))


@pytest.mark.parametrize("mode,exact", [("prh", False), ("prh_exact", True)])
@pytest.mark.parametrize("shape,dtype", [((50, 4, 9), torch.float32), ((33, 7, 16), torch.float32), ((20, 3, 5), torch.float64)])
def test_prh_matches_reference_bit_for_bit(mode, exact, shape, dtype):
    feats = stack(*shape, seed=shape[0], dtype=dtype)
    ours = list(prepared_layers(LayerStack([feats[:, i] for i in range(shape[1])], "Xs"), mode))
    ref = reference_prh(feats, exact)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):  # prepared layers come brought to max |x| in [0.5, 1), as metrics take them
        assert a.dtype == dtype and torch.equal(a, reference_pow2(b))


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
    assert torch.equal(next(prepared_layers(LayerStack([x], "X"), "l2")), torch.tensor([[0.6, 0.8], [0.0, 0.0]]))


def test_streaming_reads_each_layer_a_bounded_number_of_times():
    class Counting(list):
        reads = 0

        def __getitem__(self, i):
            Counting.reads += 1
            return super().__getitem__(i)

    feats = stack(20, 5, 4, seed=10)
    layers = Counting(feats[:, i] for i in range(5))
    out = list(prepared_layers(LayerStack(layers, "Xs"), "prh"))
    # shapes, the strided sample, the clamp pass, the yield pass (+ the sample count of layer 0)
    assert len(out) == 5 and Counting.reads <= 5 * 4 + 2


def test_errors():
    x = torch.randn(10, 3)
    with pytest.raises(UserError, match="preprocess must be one of"):
        score("cka", x, x, preprocess="zscore")
    with pytest.raises(UserError, match=r"Xs\[1\] has 9 samples"):
        prh_clamp_value(LayerStack([x, torch.randn(9, 3)], "Xs"))


# --- prh per-sample quantiles: torch.quantile's arithmetic on the selected order statistics ----------


def quantile_reference(layers: list[torch.Tensor], q: float = 0.95) -> torch.Tensor:
    """The definition: torch.quantile of each sample's |x| over every layer (layer 0's dtype)."""
    joined = torch.cat([torch.as_tensor(x).to(torch.as_tensor(layers[0]).dtype) for x in layers], dim=1)
    return torch.quantile(joined.abs(), q, dim=1)


def random_stack(g: torch.Generator, dtype: torch.dtype, kind: int) -> list[torch.Tensor]:
    """1-5 layers of random widths and a random scale; kind picks zeros, ties, a dominant column."""
    n = int(torch.randint(2, 40, (1,), generator=g))
    widths = [int(torch.randint(1, 400, (1,), generator=g)) for _ in range(int(torch.randint(1, 6, (1,), generator=g)))]
    scale = float(10.0 ** torch.randint(-8, 8, (1,), generator=g))
    layers = [torch.randn(n, w, generator=g, dtype=dtype) * scale for w in widths]
    for x in layers:
        if kind == 1:
            x[x.abs() < 1.2 * scale] = 0  # mostly zeros
        elif kind == 2:
            x.copy_((x / scale).round())  # heavy ties (small integers)
        elif kind == 3:
            x[:, 0] *= 1e3  # a dominant column
        elif kind == 4:
            x[:] = 0  # all zero
    return layers


@pytest.mark.parametrize("sample,chunk", [(4096, 1 << 22), (16, 64)])  # the defaults; tiny samples and chunks
def test_prh_row_quantiles_equal_torch_quantile_bit_for_bit(monkeypatch, sample, chunk):
    monkeypatch.setattr(pp, "_SAMPLE", sample)
    monkeypatch.setattr(pp, "_CHUNK_BYTES", chunk)
    g = torch.Generator().manual_seed(sample)
    for trial in range(150):
        dtype = torch.float64 if trial % 3 == 0 else torch.float32
        layers = random_stack(g, dtype, trial % 5)
        q = (0.95, 0.5, 0.99, 1.0, 0.0, 0.9)[trial % 6] if trial % 2 else 0.95
        got = LayerStack(layers, "Xs").prh_row_quantiles(q)
        assert got.dtype == dtype and torch.equal(got, quantile_reference(layers, q)), (trial, q)
        if q == 0.95:
            assert torch.equal(prh_clamp_value(LayerStack(layers, "Xs")), quantile_reference(layers).mean())


def test_prh_row_quantiles_when_the_sample_misjudges_the_rows(monkeypatch):
    """The strided sample sees only huge values (every sampled column scaled up): its threshold lies above
    the order statistics, those samples are recomputed by streaming topk; ties at the threshold too."""
    monkeypatch.setattr(pp, "_SAMPLE", 64)
    g = torch.Generator().manual_seed(1)
    layers = [torch.randn(30, 500, generator=g) for _ in range(3)]
    step = 1500 // 64
    for x in layers:
        x[:, (step // 2) % 500 :: step] *= 100
    layers[1][:5] = 3.0  # five samples with a tie at the top of one layer
    assert torch.equal(LayerStack(layers, "Xs").prh_row_quantiles(), quantile_reference(layers))
    tied = [torch.randint(0, 3, (25, 700), generator=g).float() for _ in range(2)]
    assert torch.equal(LayerStack(tied, "Xs").prh_row_quantiles(), quantile_reference(tied))


def test_prh_row_quantiles_of_other_inputs_and_mixed_dtypes():
    """numpy, integer, non-contiguous and float64-after-float32 layers: converted as the layers are."""
    g = torch.Generator().manual_seed(2)
    base = torch.randn(20, 3, 300, generator=g)
    layers = [base[:, 0], base[:, 1].numpy(), (base[:, 2] * 10).round().to(torch.int32), base[:, 0].double()]
    want = quantile_reference([base[:, 0], base[:, 1], (base[:, 2] * 10).round(), base[:, 0]])
    assert torch.equal(LayerStack(layers, "Xs").prh_row_quantiles(), want)


def test_quantile_rank_follows_the_installed_torch():
    """torch.quantile's rank, weight and lerp: reproduced for every row length up to 3000 (random rows,
    the two order statistics at arbitrary distances) in float32 and float64."""
    g = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.float64):
        for n in range(1, 3001, 7):
            x = torch.rand(4, n, generator=g, dtype=dtype) ** 3
            got = LayerStack([x], "x").prh_row_quantiles()
            assert torch.equal(got, torch.quantile(x, 0.95, dim=1)), (dtype, n)


@pytest.mark.slow
def test_prh_on_cached_real_features_equals_torch_quantile(demo_features):
    """Real features (the demo models' entries the session extracts once, `conftest.SHARED_FEATURES`):
    per-sample quantiles and the clamp value equal torch.quantile's on the whole stack, bit for bit; also
    for a subset of the samples."""
    for entry in demo_features.values():
        layers = list(entry.layers)
        stack = LayerStack(layers, entry.key["model"])
        assert torch.equal(stack.prh_row_quantiles(), quantile_reference(layers)), entry.key
        assert torch.equal(prh_clamp_value(stack), quantile_reference(layers).mean())
        idx = torch.randperm(len(entry), generator=torch.Generator().manual_seed(0))[: len(entry) // 2]
        sub = LayerStack(RowSubset(stack, idx), "sub")
        assert torch.equal(prh_clamp_value(sub), quantile_reference([x[idx] for x in layers]).mean())


def test_row_subsets_reuse_the_stack_quantiles(monkeypatch):
    """A subset or permutation of the samples indexes the parent's per-sample quantiles: computed once."""
    calls = []
    real = pp._row_quantiles
    monkeypatch.setattr(pp, "_row_quantiles", lambda stack, q: calls.append(q) or real(stack, q))
    feats = stack(30, 3, 7, seed=11)
    layers = [feats[:, i] for i in range(3)]
    parent = LayerStack(layers, "Xs")
    for seed in range(4):
        idx = torch.randperm(30, generator=torch.Generator().manual_seed(seed))[:17]
        sub = [x[idx] for x in layers]
        assert torch.equal(prh_clamp_value(LayerStack(RowSubset(parent, idx), "Xs")), quantile_reference(sub).mean())
    assert len(calls) == 1


# --- the fused l2 / prh layers: the previous steps, op for op -----------------------------------------


@pytest.mark.parametrize("chunk", [1 << 22, 64])  # the default; chunks of two rows
def test_unit_layers_equal_the_steps_they_fuse(monkeypatch, chunk):
    """pow2_unit(F.normalize(pow2_unit(x))) of the (clamped) layer, bit for bit: random shapes, float32
    and float64, tiny, huge, subnormal, zero and mixed-scale rows, non-contiguous layers; the recorded
    peak is max |x| and pow2_unit returns the layer as it is."""
    monkeypatch.setattr(pp, "_CHUNK_BYTES", chunk)
    g = torch.Generator().manual_seed(chunk)
    for trial in range(120):
        dtype = torch.float64 if trial % 4 == 0 else torch.float32
        n, d = int(torch.randint(2, 90, (1,), generator=g)), int(torch.randint(1, 300, (1,), generator=g))
        x = torch.randn(n, d, generator=g, dtype=dtype)
        kind = trial % 8
        tiny, huge = (1e-30, 1e30) if dtype == torch.float32 else (1e-300, 1e300)
        if kind == 1:
            x = x * tiny
        elif kind == 2:
            x = x * huge
        elif kind == 3:
            x[::3] = 0
        elif kind == 4:
            x[:, ::2] *= 1e-20
        elif kind == 5:
            x = torch.randn(n, 3 * d, generator=g, dtype=dtype)[:, ::3]
        elif kind == 6:
            x = x * 2.0**-140 if dtype == torch.float32 else x * 2.0**-1060
        elif kind == 7:
            x[n // 2 :] *= 64
        for mode in ("l2", "prh"):
            st = LayerStack([x], "Xs")
            got = next(prepared_layers(st, mode))
            want = reference_unit(x, prh_clamp_value(LayerStack([x], "Xs")) if mode == "prh" else None)
            assert torch.equal(got, want), (trial, kind, mode)
            assert unit_peak(got) == float(want.abs().max()) and pow2_unit(got) is got


def test_a_marked_layer_modified_in_place_is_read_again():
    x = next(prepared_layers(LayerStack([torch.randn(10, 4, generator=torch.Generator().manual_seed(0))], "X"), "l2"))
    x.mul_(8.0)
    assert unit_peak(x) is None and torch.equal(pow2_unit(x), x / 8.0)


@pytest.mark.parametrize("mode", ["l2", "prh"])
def test_non_finite_values_are_refused_as_before(mode):
    x = torch.randn(12, 5, generator=torch.Generator().manual_seed(0))
    bad = x.clone()
    bad[3, 2], bad[7, 0] = float("nan"), float("inf")
    with pytest.raises(UserError, match=r"Xs\[1\] contains 2 NaN/inf value\(s\)"):
        list(prepared_layers(LayerStack([x, bad], "Xs"), mode))
    if mode == "prh":  # the clamp value reads every layer, also one that is not yielded
        with pytest.raises(UserError, match=r"Xs\[1\] contains 2 NaN/inf value\(s\)"):
            list(prepared_layers(LayerStack([x, bad.numpy()], "Xs"), mode, indices=[0]))


def test_selection_helpers_off_the_cpu_give_the_same_numbers():
    """The torch branches used for tensors off the CPU (checked here on CPU tensors) equal numpy's."""
    g = torch.Generator().manual_seed(4)
    rows = torch.randn(50, 301, generator=g).abs().round(decimals=1)
    for rank in (0, 17, 299):
        assert torch.equal(pp._ascending(rows.clone(), rank, 2), pp._ascending_torch(rows, rank, 2))
    lo = torch.rand(50, generator=g)
    x = torch.where(torch.rand(50, 301, generator=g) < 0.01, float("nan"), rows * torch.randn(50, 301, generator=g).sign())
    (kept, counts, finite), (kept_torch, counts_torch, finite_torch) = pp._above(x, lo), pp._above_torch(x, lo)
    assert torch.equal(counts, counts_torch) and torch.equal(kept.nan_to_num(-1.0), kept_torch.nan_to_num(-1.0))
    assert not finite and not finite_torch and pp._above(x.nan_to_num(), lo)[2] and pp._above_torch(x.nan_to_num(), lo)[2]
    assert torch.equal(counts, (~(x.abs() <= lo[:, None])).sum(1))


@pytest.mark.parametrize("mode", ["none", "l2", "prh"])
def test_features_that_require_grad_are_scored(mode):
    """Model outputs taken without torch.no_grad: the same scores as their detached values."""
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(400, 30, generator=g) for _ in range(2)]
    ys = [torch.randn(400, 20, generator=g)]
    for metric, params in (("mutual_knn", {"k": 5}), ("cka", {})):
        want = layer_grid(metric, xs, ys, preprocess=mode, **params)
        got = layer_grid(metric, [x.clone().requires_grad_() for x in xs], ys, preprocess=mode, **params)
        assert torch.equal(got.detach(), want)
