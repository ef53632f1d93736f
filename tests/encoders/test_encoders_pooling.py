"""Pooling: known answers, padding on either side, and NaN at pad positions never leaking in."""

import pytest
import torch

from platobench.encoders.pooling import (
    global_average,
    last_valid,
    masked_mean,
    mean_patch,
    pool_text,
    pool_vision_tokens,
)


def tokens() -> torch.Tensor:
    # [B=2, T=4, D=2]; row 0 right-padded (2 tokens), row 1 left-padded (3 tokens)
    return torch.tensor(
        [
            [[1.0, 2.0], [3.0, 4.0], [float("nan"), 100.0], [float("inf"), -100.0]],
            [[float("nan"), 7.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]],
        ]
    )


MASK = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 1]])


def test_masked_mean_known_answer_and_pads_ignored():
    out = masked_mean(tokens(), MASK)
    torch.testing.assert_close(out, torch.tensor([[2.0, 3.0], [7.0, 8.0]]))
    assert out.dtype == torch.float32


def test_last_valid_left_and_right_padding():
    torch.testing.assert_close(last_valid(tokens(), MASK), torch.tensor([[3.0, 4.0], [9.0, 10.0]]))


def test_pool_text_dispatch_and_cls():
    h = torch.nan_to_num(tokens())
    torch.testing.assert_close(pool_text(h, MASK, "cls"), h[:, 0])
    torch.testing.assert_close(pool_text(h, MASK, "avg"), masked_mean(h, MASK))
    with pytest.raises(ValueError, match="mean_patch"):
        pool_text(h, MASK, "mean_patch")


def test_vision_token_pooling_excludes_prefix_tokens():
    h = torch.arange(2 * 5 * 3, dtype=torch.float32).reshape(2, 5, 3)
    torch.testing.assert_close(pool_vision_tokens(h, "cls", 2), h[:, 0])
    torch.testing.assert_close(pool_vision_tokens(h, "mean_patch", 2), h[:, 2:].mean(1))
    torch.testing.assert_close(mean_patch(h, 1), h[:, 1:].mean(1))
    torch.testing.assert_close(pool_vision_tokens(h, "avg", 2), h.mean(1))
    with pytest.raises(ValueError, match="last"):
        pool_vision_tokens(h, "last", 1)


def test_global_average_of_feature_map():
    fmap = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 2, 2)
    out = global_average(fmap)
    assert out.shape == (2, 3)
    assert out[0, 0] == pytest.approx((0 + 1 + 2 + 3) / 4)
