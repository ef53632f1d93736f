"""Caption metrics of the COCO caption evaluation (pip pycocoevalcap==1.2, pure-Python scorers, no Java) with
percentile bootstrap intervals over images.

CIDEr-D (Vedantam, Zitnick & Parikh 2015, "CIDEr: Consensus-based Image Description Evaluation") is
`pycocoevalcap.cider.Cider`: tf-idf weighted 1..4-gram cosine per reference, candidate counts clipped at the
reference's, Gaussian length penalty (sigma 6), mean over n-gram orders and references, times 10. Its
document frequencies (IDF) come from the references of the evaluated set itself, as on the COCO evaluation
server (Chen et al. 2015, "Microsoft COCO Captions: Data Collection and Evaluation Server"): scores are
comparable only between systems scored on the same images, and a one-image set scores 0 (every IDF is 0).
BLEU-4 (Papineni et al. 2002) is `pycocoevalcap.bleu.Bleu(4)` at corpus level (clipped n-gram counts summed
over images, geometric mean of the 1..4-gram precisions, brevity penalty against the closest reference
length of each image).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.bleu.bleu_scorer import cook_refs, cook_test
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer.ptbtokenizer import PUNCTUATIONS

from platobench.api import UserError

BLEU_N = 4
# BleuScorer's guards against division by zero, reproduced so the bootstrap matches Bleu(4) exactly.
_BLEU_SMALL = 1e-9
_BLEU_TINY = 1e-15

# --- tokenisation: what `PTBTokenizer -preserveLines -lowerCase` (Stanford CoreNLP 3.4.1) followed by the
# removal of PUNCTUATIONS leaves. Brackets become -lrb- ... -rcb-: lower-cased, so they are not in
# PUNCTUATIONS (which lists them upper-case) and stay, as in pycocoevalcap.
_DROP = frozenset(PUNCTUATIONS)
_BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}
_QUOTES = {'"': "''"}  # PTB writes a double quote as `` or '', both dropped
_NORMALISE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2026": "...",
                            "\u2013": "--", "\u2014": "--"})
# Always separate tokens: emoticons (":)" -> ":-rrb-"), ellipses, dash runs, brackets, double quotes, "*".
_SEPARATOR = re.compile(r"((?<![^\s(])[:;]-?[()](?![^\s.,!?;:])|\.{2,}|-{2,}|[()\[\]{}\"*])")
# Split inside a chunk: ";" always; "," and ":" unless between digits ("1,000", "10:30", not "http://");
# "&" unless between capitals ("AT&T"); "#" after a character; "#" before a digit ("#1" -> "# 1").
_INNER = [
    (re.compile(r";"), " ; "),
    (re.compile(r"(?<!\d),|,(?!\d)"), " , "),
    (re.compile(r"(?<!\d):(?!//)|(?<=\d):(?!\d)"), " : "),
    (re.compile(r"(?<![A-Z])&|&(?![A-Z])"), " & "),
    (re.compile(r"(?<=\S)#"), " #"),
    (re.compile(r"(?<!\S)#(?=\d)"), "# "),
]
# A leading mark split off: "$", an opening quote, or "-" / "." before a letter.
_LEADING = re.compile(r"^(\$|[`']|[-.](?=[^\W\d_]))(.+)$")
_APOSTROPHE_WORD = re.compile(r"(?i)^'(s|m|d|re|ve|ll|em|cause|n|\d0s)$")
_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'m|'d|'re|'ve|'ll)$")
_TWO_WORDS = {"cannot": ("can", "not"), "gonna": ("gon", "na"), "gotta": ("got", "ta"),
              "wanna": ("wan", "na"), "gimme": ("gim", "me"), "lemme": ("lem", "me")}
# A period that stays on its word: initials and dotted acronyms ("J.", "U.S.") and PTB's abbreviations.
_ABBREVIATION = re.compile(
    r"(?i)^([a-z]\.)+$|^(mr|mrs|ms|dr|prof|st|jr|sr|mt|ft|vs|etc|inc|ltd|co|corp"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.$"
)
_TRAILING = re.compile(r"([?!]+|[.,;:'`%-])$")  # a "?!" run stays one token


def _atom_tokens(chunk: str) -> list[str]:
    """PTB tokens of one chunk that needs no inner split: leading and trailing marks, clitics."""
    head: list[str] = []
    while not _APOSTROPHE_WORD.match(chunk) and (m := _LEADING.match(chunk)) is not None:
        head.append(m.group(1))
        chunk = m.group(2)
    tail: list[str] = []
    while len(chunk) > 1 and not _ABBREVIATION.match(chunk):
        m = _TRAILING.search(chunk)
        if m is None or m.start() == 0:
            break
        tail.insert(0, m.group())
        chunk = chunk[: m.start()]
    if chunk.lower() in _TWO_WORDS:
        return head + list(_TWO_WORDS[chunk.lower()]) + tail
    m = _CLITIC.match(chunk)
    return head + ([m.group(1), m.group(2)] if m is not None else [chunk]) + tail


def tokenize(text: str) -> str:
    """Lower-cased, space-joined PTB tokens of text with pycocoevalcap's PUNCTUATIONS removed: what
    pycocoevalcap's PTBTokenizer (Java) gives for one caption, re-implemented for the cases captions contain
    (sentence punctuation and quotes split off and dropped, clitics split: "man's" -> "man 's", hyphenated
    words kept: "deep-space", brackets kept as "-lrb-" ... "-rcb-")."""
    tokens: list[str] = []
    for i, piece in enumerate(_SEPARATOR.split(text.translate(_NORMALISE))):
        if i % 2:  # a separator
            if piece[-1] in _BRACKETS:  # a bracket, or an emoticon: ":)" -> ":-rrb-"
                piece = piece[:-1] + _BRACKETS[piece[-1]]
            tokens.append(_QUOTES.get(piece, piece))
            continue
        for rule, replacement in _INNER:
            piece = rule.sub(replacement, piece)
        for chunk in piece.split():
            tokens.extend(_atom_tokens(chunk))
    return " ".join(t for t in (t.lower() for t in tokens) if t not in _DROP)


@dataclass(frozen=True)
class CaptionScores:
    """Scores of n generated captions. cider_d: CIDEr-D of the set (mean of per_image_cider, length n);
    bleu4: corpus BLEU-4 in [0, 1]; *_ci: (lo, hi) percentile bootstrap interval at `level` from n_boot
    resamples of the images."""

    cider_d: float
    cider_d_ci: tuple[float, float]
    bleu4: float
    bleu4_ci: tuple[float, float]
    per_image_cider: list[float]
    n: int
    level: float
    n_boot: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: floats, ints and lists only."""
        out = asdict(self)
        out["cider_d_ci"] = list(self.cider_d_ci)
        out["bleu4_ci"] = list(self.bleu4_ci)
        return out


def bleu_statistics(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per-image BLEU sufficient statistics [n, 2 + 2 * BLEU_N] of tokenized captions, from
    pycocoevalcap's own cook functions: columns testlen, reflen (the reference length closest to testlen,
    ties to the shorter: Bleu's "closest" option), guess[1..4] (candidate n-grams), correct[1..4] (clipped
    matches)."""
    rows = []
    for pred, refs in zip(predictions, references):
        c = cook_test(pred, cook_refs(list(refs), n=BLEU_N), eff="closest", n=BLEU_N)
        rows.append([c["testlen"], c["reflen"], *c["guess"], *c["correct"]])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), 2 + 2 * BLEU_N)


def corpus_bleu4(totals: np.ndarray) -> np.ndarray:
    """Corpus BLEU-4 of statistics summed over images, totals [..., 2 + 2 * BLEU_N] -> [...], computed as
    BleuScorer.compute_score does (geometric mean of the clipped precisions, brevity penalty
    exp(1 - reflen / testlen) when testlen < reflen)."""
    testlen, reflen = totals[..., 0], totals[..., 1]
    guess, correct = totals[..., 2 : 2 + BLEU_N], totals[..., 2 + BLEU_N :]
    product = np.ones(totals.shape[:-1])
    for k in range(BLEU_N):
        product = product * ((correct[..., k] + _BLEU_TINY) / (guess[..., k] + _BLEU_SMALL))
    bleu = product ** (1.0 / BLEU_N)
    ratio = (testlen + _BLEU_TINY) / (reflen + _BLEU_SMALL)
    return bleu * np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)


def _check(predictions: Sequence[str], references: Sequence[Sequence[str]], n_boot: int, level: float) -> None:
    if len(predictions) != len(references):
        raise UserError(f"caption scores: {len(predictions)} predictions but {len(references)} reference lists; "
                        "expected one reference list per prediction")
    if not predictions:
        raise UserError("caption scores: no predictions; expected at least one image")
    if n_boot < 1:
        raise UserError(f"caption scores: n_boot={n_boot}; expected >= 1 bootstrap resample")
    if not 0 < level < 1:
        raise UserError(f"caption scores: level={level}; expected a confidence level in (0, 1)")
    for i, (pred, refs) in enumerate(zip(predictions, references)):
        if not isinstance(pred, str):
            raise UserError(f"caption scores: prediction {i} is {type(pred).__name__}; expected a string")
        if isinstance(refs, str) or not refs:
            raise UserError(f"caption scores: references of image {i} are {refs!r}; expected a non-empty "
                            "list of reference captions")


def _tokenized_references(references: Sequence[Sequence[str]]) -> list[list[str]]:
    out = []
    for i, refs in enumerate(references):
        out.append([tokenize(r) if isinstance(r, str) else "" for r in refs])
        for ref, tokens in zip(refs, out[-1]):
            if not tokens:
                raise UserError(f"caption scores: image {i} has reference {ref!r}; expected a caption with "
                                "at least one word")
    return out


def _interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def caption_scores(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> CaptionScores:
    """CIDEr-D and BLEU-4 of predictions[i] (the generated caption of image i; blank scores 0) against
    references[i] (its >= 1 reference captions), all tokenized with `tokenize`.

    Intervals: percentile bootstrap over images (np.random.default_rng(seed), n_boot resamples of n images
    with replacement). CIDEr-D resamples the per-image scores with the IDF fixed on the full set; BLEU-4 is
    recomputed as a corpus score from each resample's summed n-gram statistics (`bleu_statistics`)."""
    _check(predictions, references, n_boot, level)
    preds = [tokenize(p) for p in predictions]
    refs = _tokenized_references(references)
    gts = {i: rs for i, rs in enumerate(refs)}
    res = {i: [p] for i, p in enumerate(preds)}
    cider, per_image = Cider().compute_score(gts, res)
    bleu, _ = Bleu(BLEU_N).compute_score(gts, res, verbose=0)

    n = len(preds)
    draws = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    offsets = (draws + n * np.arange(n_boot)[:, None]).ravel()
    counts = np.bincount(offsets, minlength=n_boot * n).reshape(n_boot, n).astype(np.float64)
    per_image = np.asarray(per_image, dtype=np.float64)
    return CaptionScores(
        cider_d=float(cider),
        cider_d_ci=_interval(counts @ per_image / n, level),
        bleu4=float(bleu[BLEU_N - 1]),
        bleu4_ci=_interval(corpus_bleu4(counts @ bleu_statistics(preds, refs)), level),
        per_image_cider=per_image.tolist(),
        n=n,
        level=level,
        n_boot=n_boot,
    )
