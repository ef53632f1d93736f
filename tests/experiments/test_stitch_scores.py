"""Caption metrics: PTB-style tokenisation, CIDEr-D / BLEU-4 against pycocoevalcap's scorers, bootstrap CIs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer import ptbtokenizer

from platobench.errors import UserError
from platobench.experiments.stitch.scores import bleu_statistics, caption_scores, corpus_bleu4, tokenize

CAPTIONS = [
    "A mushroom.",
    "The Voyager-2 deep-space probe.",
    "A man's dog (brown) [big] {x} doesn't \"run\" -- fast... really?! Yes; no: maybe - ok",
    "I'm sure they'll go; we've won, you're late, he'd cannot gonna and/or 3.5 1,000 10:30 $5 50% a&b AT&T",
    "dogs' toys 'quoted' `tick' e-mail -- well-known--thing x-ray.",
    "Mr. Smith went to St. Louis at 5 p.m. in the U.S. with J. Doe.",
    "CPU,heatsink,fan;socket #1 BlueMan#101 -red germany- .cdr (23:29:46) http://a.b/c",
    "A chemistry flask with the \u201crequired\u201d bubbles ;). Tea\u2019s cup\u2026",
    "   multiple   spaces\ttab  ",
]


def _sentences(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[str]:
    vocab = "a the dog cat red ball on grass sits runs big small blue man woman with near tree".split()
    return [" ".join(rng.choice(vocab, size=int(rng.integers(lo, hi + 1)))) for _ in range(n)]


def _random_set(seed: int, n: int = 40) -> tuple[list[str], list[list[str]]]:
    """Predictions of 0-12 words (one blank) against 1-5 references of 3-10 words each."""
    rng = np.random.default_rng(seed)
    refs = [_sentences(rng, int(rng.integers(1, 6)), 3, 10) for _ in range(n)]
    preds = _sentences(rng, n, 1, 12)
    preds[3] = ""
    return preds, refs


def _coco(preds: list[str], refs: list[list[str]]) -> tuple[dict, dict]:
    return ({i: [tokenize(r) for r in rs] for i, rs in enumerate(refs)},
            {i: [tokenize(p)] for i, p in enumerate(preds)})


def test_tokenize_examples():
    assert tokenize("A mushroom.") == "a mushroom"
    # PTB keeps hyphenated words whole; only a standalone "-" / "--" is in PUNCTUATIONS.
    assert tokenize("The Voyager-2 deep-space probe.") == "the voyager-2 deep-space probe"
    assert tokenize("A man's dog doesn't run -- fast... ok?") == "a man 's dog does n't run fast ok"
    assert tokenize('He said "hi", (twice); U.S. flag!') == "he said hi -lrb- twice -rrb- u.s. flag"
    assert tokenize("  \t ") == "" and tokenize("-- ... ,") == ""


def test_tokenize_drops_exactly_pycocoevalcap_punctuations():
    for caption in CAPTIONS:
        tokens = tokenize(caption).split()
        assert tokens and not set(tokens) & set(ptbtokenizer.PUNCTUATIONS)


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java to run Stanford PTBTokenizer")
def test_tokenize_matches_java_ptbtokenizer(tmp_path: Path):
    """The same output as pycocoevalcap's own tokenizer: its jar with its flags, then its filter."""
    jar = Path(ptbtokenizer.__file__).parent / ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR
    (tmp_path / "in.txt").write_text("\n".join(CAPTIONS) + "\n", encoding="utf-8")
    out = subprocess.run(["java", "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines",
                          "-lowerCase", "in.txt"], cwd=tmp_path, capture_output=True, text=True, check=True,
                         timeout=120).stdout.split("\n")
    java = [" ".join(w for w in line.rstrip().split(" ") if w not in ptbtokenizer.PUNCTUATIONS)
            for line in out[: len(CAPTIONS)]]
    assert [tokenize(c) for c in CAPTIONS] == java


def test_identical_single_reference_gives_bleu4_one():
    refs = ["a red ball on the green grass", "two dogs run near a big tree", "the man holds a blue cup",
            "a cat sleeps on the sofa"]
    s = caption_scores([r.upper() + "." for r in refs], [[r] for r in refs], n_boot=50)
    assert s.bleu4 == pytest.approx(1.0, abs=1e-6)
    assert s.bleu4_ci == pytest.approx((1.0, 1.0), abs=1e-6)
    assert s.cider_d > 0


def test_cider_zero_for_no_shared_word_and_perfect_beats_shuffled():
    refs = [["a red ball on the grass", "red ball lying on grass"], ["a dog runs in the park", "dog running"],
            ["the man rides a horse", "a man on a brown horse"], ["two cats sleep on a sofa", "cats asleep"]]
    preds = [r[0] for r in refs]
    perfect = caption_scores(preds, refs, n_boot=50)
    shuffled = caption_scores(preds[1:] + preds[:1], refs, n_boot=50)
    assert perfect.cider_d > 0 and perfect.cider_d > shuffled.cider_d
    odd = caption_scores(["purple elephant flying", *preds[1:]], refs, n_boot=50)
    assert odd.per_image_cider[0] == 0.0 and all(c > 0 for c in odd.per_image_cider[1:])
    assert caption_scores([""] + preds[1:], refs, n_boot=50).per_image_cider[0] == 0.0


def test_cider_d_is_pycocoevalcap_cider():
    preds, refs = _random_set(1)
    score, per_image = Cider().compute_score(*_coco(preds, refs))
    s = caption_scores(preds, refs, n_boot=20)
    assert s.cider_d == float(score) and s.per_image_cider == per_image.tolist()
    assert s.cider_d == pytest.approx(np.mean(s.per_image_cider), rel=1e-12)


@pytest.mark.parametrize("seed, lengths", [(2, (1, 5)), (3, (6, 14))])  # short (brevity penalty) and long
def test_statistics_bleu4_equals_pycocoevalcap(seed: int, lengths: tuple[int, int]):
    rng = np.random.default_rng(seed)
    refs = [_sentences(rng, int(rng.integers(1, 6)), 3, 10) for _ in range(30)]
    preds = _sentences(rng, 30, *lengths)
    gts, res = _coco(preds, refs)
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    stats = bleu_statistics([res[i][0] for i in res], [gts[i] for i in gts])
    ratio = stats[:, 0].sum() / stats[:, 1].sum()
    assert (ratio < 1) == (seed == 2) and 0 < bleu[3] < 1
    assert abs(corpus_bleu4(stats.sum(axis=0)) - bleu[3]) < 1e-9
    assert abs(caption_scores(preds, refs, n_boot=20).bleu4 - bleu[3]) < 1e-9
    # one bootstrap resample (images repeated) = Bleu(4) of that resampled set
    idx = rng.integers(0, len(preds), size=len(preds))
    boot, _ = Bleu(4).compute_score({j: gts[int(i)] for j, i in enumerate(idx)},
                                    {j: res[int(i)] for j, i in enumerate(idx)}, verbose=0)
    assert abs(corpus_bleu4(stats[idx].sum(axis=0)) - boot[3]) < 1e-9


def test_bootstrap_intervals():
    preds, refs = _random_set(4)
    s = caption_scores(preds, refs, n_boot=400, seed=7, level=0.9)
    assert s.cider_d_ci[0] <= s.cider_d <= s.cider_d_ci[1] and s.cider_d_ci[0] < s.cider_d_ci[1]
    assert s.bleu4_ci[0] <= s.bleu4 <= s.bleu4_ci[1] and s.bleu4_ci[0] < s.bleu4_ci[1]
    assert caption_scores(preds, refs, n_boot=400, seed=7, level=0.9) == s
    other = caption_scores(preds, refs, n_boot=400, seed=8, level=0.9)
    assert other.cider_d == s.cider_d and other.cider_d_ci != s.cider_d_ci and other.bleu4_ci != s.bleu4_ci
    # the same intervals by plain fancy indexing of the same draws
    draws = np.random.default_rng(7).integers(0, len(preds), size=(400, len(preds)))
    cider = np.asarray(s.per_image_cider)[draws].mean(axis=1)
    assert s.cider_d_ci == pytest.approx(tuple(np.quantile(cider, [0.05, 0.95])), rel=1e-12)
    stats = bleu_statistics(*[[tokenize(p) for p in preds], [[tokenize(r) for r in rs] for rs in refs]])
    bleu = corpus_bleu4(stats[draws].sum(axis=1))
    assert s.bleu4_ci == pytest.approx(tuple(np.quantile(bleu, [0.05, 0.95])), rel=1e-12)
    wider = caption_scores(preds, refs, n_boot=400, seed=7, level=0.99)
    assert wider.cider_d_ci[0] <= s.cider_d_ci[0] and wider.cider_d_ci[1] >= s.cider_d_ci[1]


def test_as_dict_is_json_and_scorers_print_nothing(capsys):
    preds, refs = _random_set(5, n=10)
    d = json.loads(json.dumps(caption_scores(preds, refs, n_boot=30).as_dict()))
    assert capsys.readouterr().out == ""
    assert d["n"] == 10 and d["n_boot"] == 30 and d["level"] == 0.95 and len(d["per_image_cider"]) == 10
    assert len(d["cider_d_ci"]) == 2 and len(d["bleu4_ci"]) == 2 and isinstance(d["bleu4"], float)


@pytest.mark.parametrize(
    "preds, refs, kwargs, match",
    [
        (["a cat"], [["a cat"], ["a dog"]], {}, "2 reference lists"),
        ([], [], {}, "no predictions"),
        (["a cat", "a dog"], [["a cat"], []], {}, "references of image 1"),
        (["a cat"], ["a cat"], {}, "references of image 0"),
        (["a cat", "a dog"], [["a cat"], ["a dog", "  "]], {}, "image 1 has reference"),
        (["a cat"], [[""]], {}, "image 0 has reference"),
        (["a cat"], [["..."]], {}, "at least one word"),
        ([None], [["a cat"]], {}, "prediction 0"),
        (["a cat"], [["a cat"]], {"n_boot": 0}, "n_boot=0"),
        (["a cat"], [["a cat"]], {"level": 0.0}, "level=0.0"),
        (["a cat"], [["a cat"]], {"level": 1.0}, "level=1.0"),
    ],
)
def test_refusals(preds, refs, kwargs, match):
    with pytest.raises(UserError, match=match):
        caption_scores(preds, refs, **kwargs)
