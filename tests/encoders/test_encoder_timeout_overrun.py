"""`--encoder-timeout` against code that defeats the interruption (platobench.encoders.guard): an encoder
that ignores SIGALRM or swallows the interruption with a bare `except` returned late and its output was
used; now a call that ends past its limit fails, in any thread. `--isolate-encoders` runs a `loader: python`
encoder in a process of its own (platobench.encoders.isolated), killed at the limit even when it never
returns, with the same features, errors and printed output as in the command's process.

The encoders are tiny functions of the text (or of the image's mean colour) written next to the test
(wiring only, no weights), on the first tuxpaint stamps.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from platobench.cli import main
from platobench.data import get_dataset
from platobench.encoders import guard
from platobench.features.extract import feature_key
from platobench.features.store import FeatureStore
from platobench.zoo import read_zoo_file

MODULE = "pb_timeout_overrun"
ENCODERS = '''
import os
import signal
import sys
import time

import numpy as np
import torch
from platobench.encoders.base import TextEncoder


def features(texts):
    return np.array([[len(t), t.count("a"), t.count("e"), t.count(" ")] for t in texts], dtype=np.float32)


def busy(seconds):
    """Sleep `seconds` in small steps, swallowing every interruption (a bare except)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except:  # noqa: E722
            pass


class Ok:
    def encode(self, texts):
        print("encoding", len(texts), "texts")
        return features(texts)


class Swallower:
    def encode(self, texts):
        if len(texts) > 2:  # after the load-time probe call (2 texts)
            busy(2.5)
        return features(texts)


class Ignorer:
    def encode(self, texts):
        if len(texts) > 2:
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            time.sleep(2.5)
        return features(texts)


class Forever:
    def encode(self, texts):
        if len(texts) > 2:
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            busy(10 ** 6)
        return features(texts)


class Exit:
    def encode(self, texts):
        if len(texts) > 2:
            sys.exit(3)
        return features(texts)


class Crash:
    def encode(self, texts):
        if len(texts) > 2:
            os._exit(7)
        return features(texts)


class Raiser:
    def encode(self, texts):
        if len(texts) > 2:
            raise ValueError("boom")
        return features(texts)


class Colour:
    def encode(self, images):
        return np.array([np.asarray(im, dtype=np.float32).mean(axis=(0, 1)) for im in images])


class Meta(TextEncoder):
    """The internal protocol, returning a tensor without data."""

    def __init__(self, spec):
        self.spec, self.layer_ids, self.widths = spec, [0], [4]

    def tokenize(self, texts):
        return {"n": len(texts)}

    def token_lengths(self, texts):
        return [len(t) for t in texts]

    def encode(self, batch):
        return [torch.empty(batch["n"], 4, device="meta")]


def meta(spec, device, dtype, home):
    return Meta(spec)
'''
NAMES = ("Ok", "Swallower", "Ignorer", "Forever", "Exit", "Crash", "Raiser", "Colour", "meta")


def entry(name: str) -> str:
    kind = "modality: vision\n    kind: vision_cnn" if name == "Colour" else "modality: text\n    kind: text_encoder"
    return (f"  - name: t/{name.lower()}\n    {kind}\n    loader: python\n    source: {MODULE}:{name}\n"
            "    pooling: avg\n    num_layers: 0\n")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / f"{MODULE}.py").write_text(ENCODERS)
    (tmp_path / "zoo.yaml").write_text("version: 1\nmodels:\n" + "".join(entry(n) for n in NAMES))
    monkeypatch.setenv("PLATOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop(MODULE, None)
    yield tmp_path
    sys.modules.pop(MODULE, None)
    assert children() == []  # no encoder process outlives its command


def children() -> list[str]:
    """The ids of this process's child processes (Linux; none known elsewhere)."""
    listing = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return listing.read_text().split() if listing.exists() else []


def extract(name: str, *extra: str, home: str | None = None) -> int:
    return main(["extract", "--zoo", "zoo.yaml", "--model", f"t/{name}", "--dataset", "tuxpaint", "--limit", "6",
                 "--trust-code", f"t/{name}", "--json", *extra, *(["--home", home] if home else [])])


def error_line(err: str) -> str:
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("platobench extract: error: ")]
    return line


# ---------------------------------------------------------------------------------------------- in process


def _swallow(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except:  # noqa: E722 -- what the hostile encoder does
            pass


def test_a_call_that_swallows_the_interruption_fails_when_it_returns():
    with pytest.raises(guard.EncoderTimeoutError, match=r"model t/x: encode returned after 1\.\d s, past its limit "
                                                        r"of 0.3 s \(--encoder-timeout\), so the call fails: nothing "
                                                        r"stopped it \(its code ignored or caught the interruption"):
        with guard.encoder_call("t/x", "encode", 0.3):
            _swallow(1.0)


def test_a_call_that_ignores_the_timer_fails_when_it_returns():
    previous = signal.getsignal(signal.SIGALRM)
    with pytest.raises(guard.EncoderTimeoutError, match=r"model t/x: encode returned after 0\.\d s, past its limit"):
        with guard.encoder_call("t/x", "encode", 0.2):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            time.sleep(0.6)
    assert signal.getsignal(signal.SIGALRM) is previous


def test_a_call_that_raises_past_its_limit_is_a_timeout():
    with pytest.raises(guard.EncoderTimeoutError, match=r"encode raised ValueError after 0\.\d s, past its limit"):
        with guard.encoder_call("t/x", "encode", 0.2):
            _swallow(0.5)
            raise ValueError("late")


@pytest.mark.parametrize("name", ["swallower", "ignorer"])
def test_extract_fails_an_encoder_that_defeats_the_timer(env, capsys, name):
    assert extract(name, "--encoder-timeout", "1.5") == 2
    line = error_line(capsys.readouterr().err)
    assert f"model t/{name}: encode of batch 1 (6 texts) returned after 2." in line and "past its limit of 1.5 s" in line


# ---------------------------------------------------------------------------------------------- isolated


def test_an_isolated_encoder_that_never_returns_is_killed_at_the_limit(env, capsys):
    t0 = time.monotonic()
    assert extract("forever", "--encoder-timeout", "1", "--isolate-encoders") == 2
    assert time.monotonic() - t0 < 60
    line = error_line(capsys.readouterr().err)
    assert "model t/forever: encode of " in line and "did not return within 1 s (--encoder-timeout)" in line


def test_an_isolated_encoder_gives_the_features_and_output_of_one_in_process(env, capfd):
    assert extract("ok", "--isolate-encoders", home=str(env / "isolated")) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["model"] == "t/ok" and "encoding 6 texts" in err  # printed in the child: on stderr
    assert extract("ok", home=str(env / "in-process")) == 0
    capfd.readouterr()
    spec = next(m for m in read_zoo_file(env / "zoo.yaml").models if m.name == "t/ok")
    key = feature_key(spec, get_dataset("tuxpaint", limit=6), prompt="caption:0", device=torch.device("cpu"))
    isolated = FeatureStore(env / "isolated" / "features").get(key)
    in_process = FeatureStore(env / "in-process" / "features").get(key)
    assert isolated is not None and in_process is not None
    assert torch.equal(isolated.layer(0), in_process.layer(0))


@pytest.mark.parametrize("name, problem", [
    ("exit", "model t/exit: encode of 6 texts called sys.exit(3); an encoder must return its output"),
    ("crash", "model t/crash: its process ended with exit code 7 during encode of 6 texts"),
    ("raiser", "model t/raiser: encode of 6 texts raised ValueError: boom (at "),
    ("meta", "model t/meta: layer 0 is a tensor on the meta device"),
])
def test_an_isolated_encoders_failure_is_one_named_line(env, capsys, name, problem):
    assert extract(name, "--isolate-encoders") == 2
    assert problem in error_line(capsys.readouterr().err)


def test_submits_mock_pass_runs_an_isolated_encoder(env, capsys):
    (env / "sub.yaml").write_text("version: 1\nmodels:\n" + entry("Ok").replace("t/ok", "t/submitted"))
    assert main(["submit", "sub.yaml", "--mock-only", "--isolate-encoders"]) == 0
    assert "mock pass of t/submitted: ok (1 layers, widths [4], repeat diff 0.0e+00, batch diff 0.0e+00)" in (
        capsys.readouterr().out)


def test_an_isolated_vision_encoder_reads_the_images(env, capsys):
    assert extract("colour", "--isolate-encoders", home=str(env / "isolated")) == 0
    assert extract("colour", home=str(env / "in-process")) == 0
    capsys.readouterr()
    spec = next(m for m in read_zoo_file(env / "zoo.yaml").models if m.name == "t/colour")
    key = feature_key(spec, get_dataset("tuxpaint", limit=6), prompt="image", device=torch.device("cpu"))
    isolated = FeatureStore(env / "isolated" / "features").get(key)
    in_process = FeatureStore(env / "in-process" / "features").get(key)
    assert isolated is not None and in_process is not None
    assert torch.equal(isolated.layer(0), in_process.layer(0))


@pytest.mark.parametrize("command", ["run", "extract", "submit"])
def test_the_isolation_option_is_documented(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--isolate-encoders run each 'loader: python' encoder in a process of its own, killed when a call" in text
