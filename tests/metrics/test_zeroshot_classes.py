"""Class-level zero-shot matching (platobench.metrics.zeroshot): embeddings, accuracies, seeds,
layer selection, the result dict and error messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from platobench.errors import UserError
from platobench.metrics.zeroshot import (
    class_image_embeddings,
    class_text_embeddings,
    match_classes,
    zeroshot_eval,
)


def planted_classes(
    n_classes: int = 12, per_class: int = 20, n_templates: int = 3, seed: int = 0, text_noise: float = 0.02
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images: class centre + noise in 32-d; text: the centre mapped into 48-d by a map with
    orthonormal rows (cosines preserved) + template noise. Row c of the text side is class c."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_classes, 32))
    labels = np.repeat(np.arange(n_classes), per_class)
    images = centres[labels] + 0.3 * rng.standard_normal((labels.size, 32))
    W = ortho_group.rvs(48, random_state=seed)[:32]  # [32, 48], W W^T = I
    text = (centres @ W)[:, None, :] + text_noise * rng.standard_normal((n_classes, n_templates, 48))
    return images, labels, text


def test_text_embeddings_known_answer():
    text = [np.array([[3.0, 4.0], [2.0, 0.0]]), np.array([[0.0, -5.0]])]
    np.testing.assert_allclose(class_text_embeddings(text), [[0.8, 0.4], [0.0, -1.0]], atol=1e-12)
    stacked = torch.tensor([[[3.0, 4.0], [2.0, 0.0]], [[0.0, -5.0], [0.0, -1.0]]])
    np.testing.assert_allclose(class_text_embeddings(stacked), [[0.8, 0.4], [0.0, -1.0]], atol=1e-6)


def test_image_embeddings_subsample_half_of_each_class():
    feats = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    labels = np.array([0, 0, 0, 1, 1])
    full = class_image_embeddings(feats, labels, 2, seed=0, fraction=1.0)
    np.testing.assert_allclose(full, [[2 / 3, 1 / 3], [0.0, 1.0]], atol=1e-12)
    half = class_image_embeddings(feats, labels, 2, seed=0)
    # class 0 draws ceil(1.5) = 2 of its 3 unit vectors: the mean is one of two known answers
    options = [np.array([1.0, 0.0]), np.array([0.5, 0.5])]
    assert any(np.allclose(half[0], o) for o in options)
    np.testing.assert_allclose(half[1], [0.0, 1.0])


def test_image_embeddings_reproduce_per_seed_and_vary_across_seeds():
    images, labels, _ = planted_classes()
    a = class_image_embeddings(images, labels, 12, seed=5)
    b = class_image_embeddings(torch.from_numpy(images), labels.tolist(), 12, seed=5)
    c = class_image_embeddings(images, labels, 12, seed=6)
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(a, c)


@pytest.mark.parametrize("solver", ["faq", "gw"])
def test_planted_classes_are_all_matched(solver):
    images, labels, text = planted_classes()
    result = zeroshot_eval(images, labels, text, seeds=[0, 1, 2], solver=solver)
    assert result["score"] == 1.0
    assert result["extra"]["top1"] == {"mean": 1.0, "std": 0.0, "per_seed": [1.0, 1.0, 1.0]}
    assert result["extra"]["top5"]["mean"] == 1.0
    assert result["chance"] == pytest.approx(1 / 12)
    assert result["extra"]["chance_top5"] == pytest.approx(5 / 12)
    assert result["extra"]["permutations"][0] == list(range(12))
    assert result["extra"]["images_per_class"] == {"min": 20, "max": 20, "n_images": 240}
    assert result["params"]["restarts"] == {"faq": 8, "gw": 0}[solver]
    json.dumps(result)  # ready for a JSON result record


def test_unrelated_text_scores_near_chance_and_reproduces():
    images, labels, _ = planted_classes(seed=0)
    _, _, unrelated = planted_classes(seed=99)
    result = zeroshot_eval(images, labels, unrelated, seeds=range(6), solver="faq")
    assert result["score"] < 0.5
    assert result["extra"]["truth_correlation"]["mean"] < result["extra"]["correlation"]["mean"]
    again = zeroshot_eval(images, labels, unrelated, seeds=range(6), solver="faq")
    assert again["extra"]["top1"] == result["extra"]["top1"]


def test_std_over_seeds_is_sample_std():
    images, labels, _ = planted_classes(seed=0)
    _, _, unrelated = planted_classes(seed=98)
    result = zeroshot_eval(images, labels, unrelated, seeds=[0, 1, 2, 3], solver="faq")
    per_seed = result["extra"]["top5"]["per_seed"]
    assert result["extra"]["top5"]["std"] == pytest.approx(float(np.std(per_seed, ddof=1)))


def test_match_classes_top5_at_least_top1_and_shuffle_is_detected():
    images, labels, text = planted_classes(text_noise=0.3)
    img = class_image_embeddings(images, labels, 12, seed=0)
    txt = class_text_embeddings(text)
    out = match_classes(img, txt, solver="faq", seed=0)
    assert out["top5"] >= out["top1"]
    shift = np.roll(np.arange(12), 1)
    shuffled = match_classes(img, txt[shift], solver="faq", seed=0)
    # the same matching is found in the relabelled problem, and accuracy is counted against the new rows
    expected = np.argsort(shift)[out["permutation"]]
    assert shuffled["permutation"] == expected.tolist()
    assert shuffled["top1"] == pytest.approx(np.mean(expected == np.arange(12)))
    assert out["top1"] >= 0.75 and shuffled["top1"] <= 0.25


def test_layer_selection_uses_the_chosen_layers():
    images, labels, text = planted_classes()
    rng = np.random.default_rng(0)
    image_layers = [rng.standard_normal(images.shape), images]
    text_layers = [text, rng.standard_normal(text.shape)]
    chosen = zeroshot_eval(image_layers, labels, text_layers, seeds=[0], image_layer=1, text_layer=0)
    assert chosen["score"] == 1.0
    assert chosen["extra"]["layers"] == {"image": 1, "text": 0}
    last = zeroshot_eval(torch.tensor(np.stack(image_layers)), labels, text, seeds=[0], image_layer=-1)
    assert last["score"] == 1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"labels": np.full(240, 12)}, r"labels must lie in 0..11"),
        ({"labels": np.zeros(10, dtype=int)}, "one entry per image"),
        ({"labels": np.repeat(np.arange(11), 22)[:240]}, r"class\(es\) \[11\] have no images"),
        ({"labels": np.zeros(240)}, "labels must be integer class indices"),
        ({"seeds": []}, "seeds must be a non-empty list"),
        ({"text": np.ones((2, 3, 48)), "labels": np.zeros(240, dtype=int)}, "at least 3 classes"),
        ({"text": np.ones((12, 48))}, r"\[C, T, D\]"),
        ({"fraction": 0.0}, r"fraction must be in \(0, 1\]"),
        ({"image_layer": 3}, "image_feats layer 3 is out of range"),
        ({"solver": "hungarian"}, "solver must be one of"),
    ],
)
def test_errors_name_the_argument(kwargs, message):
    images, labels, text = planted_classes()
    labels = kwargs.pop("labels", labels)
    text = kwargs.pop("text", text)
    if "image_layer" in kwargs:
        images = [images, images]
    with pytest.raises(UserError, match=message):
        zeroshot_eval(images, labels, text, **{"seeds": [0], **kwargs})


def test_text_classes_of_different_widths_are_rejected():
    with pytest.raises(UserError, match="different widths"):
        class_text_embeddings([np.ones((2, 3)), np.ones((2, 4)), np.ones((1, 3))])
    assert math.isclose(float(np.linalg.norm(class_text_embeddings([np.ones((2, 3))])[0])), 1.0)
