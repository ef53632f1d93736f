"""Encoder geometry, pooling and heads of the text JEPA."""

from __future__ import annotations

import pytest
import torch

from platobench.experiments.jepa.model import SIZES, TextJEPA, bert_config, count_parameters

VOCAB = 30522  # bert-base-uncased WordPiece, the packaged tokenizer


def test_gpu_sizes_match_the_papers_parameter_counts():
    assert count_parameters("33m", VOCAB) / 1e6 == pytest.approx(33.4, abs=0.5)  # MiniLM-L12-H384 geometry
    assert count_parameters("109m", VOCAB) / 1e6 == pytest.approx(109.5, abs=0.5)  # BERT-base
    assert count_parameters("tiny", VOCAB) < 6e6
    with pytest.raises(ValueError, match="unknown size 'huge'"):
        bert_config("huge", VOCAB, 0)


def tiny_model(predictor: bool) -> TextJEPA:
    torch.manual_seed(0)
    return TextJEPA(
        bert_config("tiny", 1000, pad_token_id=0), projection=SIZES["tiny"].projection, predictor=predictor
    ).eval()


def test_features_ignore_padding_and_forward_splits_the_two_views():
    model = tiny_model(predictor=True)
    ids = torch.tensor([[101, 7, 8, 9, 102]])
    with torch.no_grad():
        plain = model.embed(ids, torch.ones_like(ids))
        padded_ids = torch.tensor([[101, 7, 8, 9, 102, 0, 0, 0]])
        padded = model.embed(padded_ids, torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]]))
        torch.testing.assert_close(plain, padded, atol=1e-5, rtol=1e-5)
        both = torch.tensor([[101, 7, 8, 102], [101, 5, 6, 102], [101, 9, 102, 0], [101, 4, 4, 102]])
        z_a, z_b, p_a, p_b = model(both, (both != 0).long())
    assert z_a.shape == z_b.shape == p_a.shape == p_b.shape == (2, SIZES["tiny"].projection)
    torch.testing.assert_close(z_a[1], model.projector(model.embed(both[1:2], torch.ones(1, 4)))[0])
    torch.testing.assert_close(p_b, model.predictor(z_b))


def test_without_predictor_there_is_no_prediction_and_the_bert_pooler_is_frozen():
    model = tiny_model(predictor=False)
    ids = torch.tensor([[101, 7, 102], [101, 8, 102]])
    _, _, p_a, p_b = model(ids, torch.ones_like(ids))
    assert p_a is None and p_b is None and model.predictor is None
    assert not any(p.requires_grad for p in model.encoder.pooler.parameters())
    assert all(p.requires_grad for p in model.encoder.encoder.parameters())
