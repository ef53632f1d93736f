"""Hardening: a user's encoder (`loader: python`) can neither fake success nor break the command's output
(sys.exit, printing, sleeping forever: platobench.encoders.guard), a broken one gets one clear line from
`submit --mock-only`, a non-writable platobench home one clear line from `cache rm`, `prepare` and
`extract`, and a parameter count the plots cannot place is refused.

The encoders are tiny functions of the text written next to the test (wiring only, no weights); the
vision reference is the colour-histogram baseline, on the first images of tuxpaint.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_fixtures import TINY_SETTINGS, make_record

from platobench.cli import main
from platobench.encoders import guard
from platobench.errors import UserError
from platobench.leaderboard import plots
from platobench.results import SideRef, load_record, write_record
from platobench.zoo import read_zoo_file

VISION = "baseline/colour-histogram"
N = 24
MODULE = "pb_hardening_encoders"
ENCODERS = '''
import os
import sys
import time

import numpy as np
import torch
from platobench.encoders.base import TextEncoder


def features(texts):
    return np.array([[len(t), t.count("a"), t.count("e"), t.count(" ")] for t in texts], dtype=float)


class Ok:
    def encode(self, texts):
        return features(texts)


class Exit:
    def encode(self, texts):
        if len(texts) > 2:  # after the load-time probe call (2 texts)
            sys.exit(3)
        return features(texts)


class VisionExit:
    def encode(self, images):
        if len(images) > 2:
            sys.exit(4)
        return np.array([np.asarray(im, dtype=float).mean(axis=(0, 1)) for im in images])


class ExitOnLoad:
    def __init__(self):
        sys.exit("no GPU here")

    def encode(self, texts):
        return features(texts)


class Printer:
    def encode(self, texts):
        print("\\x1b[31mencoding\\x1b[0m", len(texts), "texts")
        os.write(1, b"written to descriptor 1\\n")
        return features(texts)


class Sleeper:
    def encode(self, texts):
        if len(texts) > 2:
            try:
                time.sleep(60)
            except Exception:  # the timeout is no Exception: this does not swallow it
                pass
        return features(texts)


class Raiser:
    def encode(self, texts):
        if len(texts) > 2:
            raise ValueError("boom\\x1b[2J")
        return features(texts)


class RaiseOnLoad:
    def __init__(self):
        raise RuntimeError("weights not found")

    def encode(self, texts):
        return features(texts)


class ZeroWidth:
    def encode(self, texts):
        return np.zeros((len(texts), 0))


class Meta:
    def encode(self, texts):
        return torch.empty(len(texts), 4, device="meta")


class Internal(TextEncoder):
    """The internal protocol, returning meta tensors or declaring width 0."""

    def __init__(self, spec, meta):
        self.spec, self.device, self.meta = spec, torch.device("cpu"), meta
        self.layer_ids = [0]
        self.widths = [4 if meta else 0]

    def tokenize(self, texts):
        return {"texts": texts}

    def token_lengths(self, texts):
        return [len(t) for t in texts]

    def encode(self, batch):
        n = len(batch["texts"])
        return [torch.empty(n, 4, device="meta")] if self.meta else [torch.zeros(n, 0)]


def internal_meta(spec, device, dtype, home):
    return Internal(spec, meta=True)


def internal_zero_width(spec, device, dtype, home):
    return Internal(spec, meta=False)
'''
NAMES = {"ok": "Ok", "exit": "Exit", "vision-exit": "VisionExit", "exit-on-load": "ExitOnLoad", "printer": "Printer", "sleeper": "Sleeper",
         "raiser": "Raiser", "raise-on-load": "RaiseOnLoad", "zero-width": "ZeroWidth", "meta": "Meta",
         "internal-meta": "internal_meta", "internal-zero-width": "internal_zero_width"}


def entry(name: str) -> str:
    kind = "modality: vision\n    kind: vision_cnn" if name.startswith("vision-") else "modality: text\n    kind: text_encoder"
    return (f"  - name: t/{name}\n    {kind}\n    loader: python\n"
            f"    source: {MODULE}:{NAMES[name]}\n    pooling: avg\n    num_layers: 0\n    params_m: 0.01\n")


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A platobench home shared by the module's tests: the tuxpaint catalogue and the reference's features
    are built once."""
    return tmp_path_factory.mktemp("hardening-encoders") / "home"


@pytest.fixture
def env(home, tmp_path, monkeypatch) -> Iterator[Path]:
    """The encoders' module on the path, a zoo file of every encoder (zoo.yaml), one submission file per
    encoder (sub-NAME.yaml) and tiny settings on tuxpaint (tiny.yaml), in the current folder."""
    (tmp_path / f"{MODULE}.py").write_text(ENCODERS)
    (tmp_path / "zoo.yaml").write_text("version: 1\nmodels:\n" + "".join(entry(n) for n in NAMES))
    for name in NAMES:
        (tmp_path / f"sub-{name}.yaml").write_text("version: 1\nmodels:\n" + entry(name))
    (tmp_path / "tiny.yaml").write_text(TINY_SETTINGS.replace("openclipart-1024", "tuxpaint"))
    monkeypatch.setenv("PLATOBENCH_HOME", str(home))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop(MODULE, None)
    yield tmp_path
    sys.modules.pop(MODULE, None)


def run(tmp: Path, *names: str, extra: tuple[str, ...] = ()) -> int:
    pairs = ",".join(f"t/{name}:{VISION}" for name in names)
    return main(["run", "--zoo", "zoo.yaml", "--pairs", pairs, "--settings", "tiny-cka", "--settings-file",
                 "tiny.yaml", "--limit", str(N), "--out", str(tmp / "results"), "--trust-code", "t/*", "--json",
                 *extra])


def submit(name: str, *extra: str) -> int:
    return main(["submit", f"sub-{name}.yaml", "--mock-only", "--settings", "tiny-cka", "--settings-file", "tiny.yaml",
                 *extra])


def error_line(err: str, command: str) -> str:
    """The one error line of `err`, checked to be the last and the only one of `command`, with no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith(f"platobench {command}: error: ")]
    assert len(lines) == 1 and err.rstrip().endswith(lines[0]), err
    return lines[0]


# ---------------------------------------------------------------------------------------------- sys.exit


def test_sys_exit_in_an_encoder_fails_its_pairs_and_the_others_run(env, capsys):
    assert run(env, "exit", "ok") == 1
    summary = json.loads(capsys.readouterr().out)
    assert [Path(p).name for p in summary["written"]] == [f"t--ok__{VISION.replace('/', '--')}--limit-24.json"]
    (why,) = summary["failed"].values()
    assert "model t/exit: encode of batch 1 (24 texts) called sys.exit(3)" in why
    assert "not end the process" in why


def test_sys_exit_in_the_mock_pass_is_a_failed_mock_pass(env, capsys):
    assert submit("exit") == 2
    line = error_line(capsys.readouterr().err, "submit")
    assert "mock pass of t/exit failed: model t/exit: encode of batch 1 (16 texts) called sys.exit(3)" in line
    assert submit("exit-on-load") == 2
    line = error_line(capsys.readouterr().err, "submit")
    assert "model t/exit-on-load: loading the encoder called sys.exit('no GPU here')" in line
    assert submit("vision-exit") == 2
    line = error_line(capsys.readouterr().err, "submit")
    assert "mock pass of t/vision-exit failed: model t/vision-exit: encode of batch 1 (16 images) called sys.exit(4)" in line


def test_ctrl_c_stays_an_interrupt():
    with pytest.raises(KeyboardInterrupt), guard.encoder_call("t/x", "encode", None):
        raise KeyboardInterrupt


# ---------------------------------------------------------------------------------------------- output


def test_what_an_encoder_prints_goes_to_stderr_and_the_json_stays_json(env, capfd):
    assert main(["extract", "--zoo", "zoo.yaml", "--model", "t/printer", "--dataset", "tuxpaint", "--limit", "6",
                 "--trust-code", "t/printer", "--json"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["model"] == "t/printer" and "written to descriptor 1" in err
    assert run(env, "printer") == 0  # 24 samples: not sliced from the 6 above, extracted again
    out, err = capfd.readouterr()
    assert len(json.loads(out)["written"]) == 1
    assert "\x1b[31mencoding\x1b[0m 24 texts" in err and "written to descriptor 1" in err
    assert submit("printer", "--json") == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["mock"][0]["model"] == "t/printer"
    assert "encoding\x1b[0m 16 texts" in err and "written to descriptor 1" in err


def test_stdout_is_restored_after_an_encoder_call(capfd):
    with guard.encoder_call("t/x", "encode", None):
        print("inside")
    print("outside")
    out, err = capfd.readouterr()
    assert out == "outside\n" and err == "inside\n"


# ---------------------------------------------------------------------------------------------- timeout


def test_a_sleeping_encoder_is_stopped_and_named(env, capsys):
    t0 = time.monotonic()
    assert run(env, "sleeper", "ok", extra=("--encoder-timeout", "1")) == 1
    assert time.monotonic() - t0 < 50
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["written"]) == 1
    (why,) = summary["failed"].values()
    assert "model t/sleeper: encode of batch 1 (24 texts) did not return within 1 s (--encoder-timeout)" in why
    assert main(["extract", "--zoo", "zoo.yaml", "--model", "t/sleeper", "--dataset", "tuxpaint", "--limit", "6",
                 "--trust-code", "t/sleeper", "--encoder-timeout", "0.5"]) == 2
    line = error_line(capsys.readouterr().err, "extract")
    assert "model t/sleeper: encode of batch 1 (6 texts) did not return within 0.5 s" in line


def test_the_timeout_defaults_to_python_encoders_only():
    assert guard.limit_for("python", None) == guard.PYTHON_TIMEOUT_S == 600
    assert guard.limit_for("hf_text", None) is None and guard.limit_for("baseline", None) is None
    assert guard.limit_for("python", 0) is None and guard.limit_for("hf_text", 5) == 5
    with pytest.raises(UserError, match="--encoder-timeout must be a finite number of seconds >= 0"):
        guard.limit_for("python", -1)


@pytest.mark.parametrize("command", ["run", "extract", "submit"])
def test_the_timeout_option_is_documented_and_checked(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--encoder-timeout SECONDS" in text and "600 s for 'loader: python' models, none for the built-in" in text
    with pytest.raises(SystemExit) as info:
        main([command, "x", "--encoder-timeout", "-1"])
    assert info.value.code == 2 and "expected a finite number of seconds >= 0" in capsys.readouterr().err


def test_the_timer_restores_an_outer_timer_and_handler():
    rang = []

    def outer(*_: object) -> None:
        rang.append(1)

    previous = signal.signal(signal.SIGALRM, outer)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with guard.encoder_call("t/x", "encode", 5):
            pass
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        assert 20 < left <= 30 and rang == []
        with pytest.raises(guard.EncoderTimeoutError, match="model t/x: encode did not return within 0.2 s"), \
                guard.encoder_call("t/x", "encode", 0.2):
            time.sleep(5)
        assert signal.getsignal(signal.SIGALRM) is outer and rang == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_a_call_is_not_interrupted_but_fails_when_it_returns_late():
    done, caught = [], []

    def work() -> None:
        try:
            with guard.encoder_call("t/x", "encode", 0.05):
                time.sleep(0.3)
                done.append(True)
        except guard.EncoderTimeoutError as exc:
            caught.append(str(exc))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert done == [True] and len(caught) == 1
    assert "model t/x: encode returned after 0.3 s, past its limit of 0.05 s" in caught[0]


# ---------------------------------------------------------------------------------------------- mock pass


@pytest.mark.parametrize("name, problem", [
    ("raiser", "encode raised ValueError: boom\\x1b[2J (at "),
    ("raise-on-load", "loading the encoder raised RuntimeError: weights not found (at "),
    ("zero-width", "model t/zero-width: layer 0 of encode's output has width 0 (shape (2, 0))"),
    ("meta", "model t/meta: encode's output is a tensor on the meta device"),
    ("internal-meta", "model t/internal-meta: layer 0 is a tensor on the meta device"),
    ("internal-zero-width", "model t/internal-zero-width: layer 0 has width 0; every layer needs at least one feature"),
])
def test_a_broken_encoder_fails_the_mock_pass_in_one_line(env, capsys, name, problem):
    assert submit(name) == 2
    line = error_line(capsys.readouterr().err, "submit")
    assert f"mock pass of t/{name} failed" in line and problem in line
    assert "\x1b" not in line
    if "(at " in problem:
        assert f"{MODULE}.py:" in line


def test_run_refuses_a_zero_width_internal_encoder(env, capsys):
    assert run(env, "internal-zero-width") == 1
    (why,) = json.loads(capsys.readouterr().out)["failed"].values()
    assert "model t/internal-zero-width: layer 0 has width 0; every layer needs at least one feature" in why


# ---------------------------------------------------------------------------------------------- read-only home


def _no_write_prefix() -> list[str]:
    """The command prefix under which this process cannot write a folder of mode 0555: none for a user
    other than root; for root, `setpriv` dropping the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
    if shutil.which("setpriv") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root without a working setpriv: a read-only folder cannot be simulated")
    return prefix


def _set_writable(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)


@pytest.fixture
def read_only_home(tmp_path, monkeypatch) -> Iterator[Path]:
    """A home holding the tuxpaint catalogue and one cached entry, every folder and file without write bits."""
    ro = tmp_path / "ro-home"
    monkeypatch.setenv("PLATOBENCH_HOME", str(ro))
    assert main(["extract", "--model", "baseline/caption-length", "--dataset", "tuxpaint", "--limit", "4"]) == 0
    _set_writable(ro, False)
    yield ro
    _set_writable(ro, True)


@pytest.mark.parametrize("argv, command, path", [
    (["cache", "rm", "--all"], "cache", "features/"),
    (["prepare"], "prepare", "models"),
    (["extract", "--model", "baseline/bag-of-words", "--dataset", "tuxpaint", "--limit", "4"], "extract", "features/"),
])
def test_a_read_only_home_is_one_error_line_naming_the_path(read_only_home, argv, command, path):
    prefix = _no_write_prefix()
    env = {**os.environ, "PLATOBENCH_HOME": str(read_only_home), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([*prefix, sys.executable, "-m", "platobench", *argv], env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = error_line(proc.stderr, command)
    assert f"Permission denied: {read_only_home / path}" in line
    assert f"in the platobench home {read_only_home}, from $PLATOBENCH_HOME" in line
    assert "set PLATOBENCH_HOME to a writable one" in line


# ---------------------------------------------------------------------------------------------- params_m


@pytest.mark.parametrize("value, message", [
    (".inf", "Input should be a finite number"), ("-.inf", "Input should be a finite number"),
    (".nan", "Input should be a finite number"), ("0", "greater than 0"), ("-2.5", "greater than 0"),
])
def test_a_zoo_entry_refuses_a_parameter_count_off_the_log_axis(tmp_path, value, message):
    path = tmp_path / "zoo.yaml"
    path.write_text("version: 1\nmodels:\n" + entry("ok").replace("params_m: 0.01", f"params_m: {value}"))
    with pytest.raises(UserError, match="field 'params_m'") as info:
        read_zoo_file(path)
    assert message in str(info.value)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 0.0, -3.0])
def test_a_record_refuses_a_parameter_count_off_the_log_axis(tmp_path, value):
    path = write_record(tmp_path, make_record("s-mknn", "a/one", "v/x", 0.4))
    data = json.loads(path.read_text())
    data["x"]["params_m"] = value
    path.write_text(json.dumps(data))  # json writes Infinity and NaN, and reads them back
    with pytest.raises(UserError, match="x.params_m"):
        load_record(path)


@pytest.mark.parametrize("value", [math.inf, math.nan, 0.0, -3.0])
def test_the_size_plot_leaves_out_a_parameter_count_it_cannot_place(value):
    good = [make_record("s-mknn", f"a/l{i}", "v/x", 0.3 + 0.05 * i, params_l=100.0 * (i + 1)) for i in range(2)]
    bad = make_record("s-mknn", "a/bad", "v/x", 0.5).model_copy(update={
        "x": SideRef.model_construct(name="a/bad", params_m=value, kind="causal_lm", modality="text", input="caption:0")})
    fig, left_out = plots.size_figure([*good, bad])
    assert fig is not None and left_out == ["a/bad"]
