"""Calls into an encoder's code (loading it, encoding one batch), made safe for the command around them.

`encoder_call(model, what, timeout)` wraps one such call:

- what the code prints goes to stderr, not stdout: `sys.stdout` is `sys.stderr` inside the call, and file
  descriptor 1 is a copy of descriptor 2 (C libraries, `os.write(1, ...)`, child processes), so the
  `--json` output of `run`, `extract` and `submit` stays JSON. The text is passed on unchanged (ANSI colour
  codes included): it is the output of code the user chose to run (`--trust-code`), on the stream meant
  for diagnostics;
- `sys.exit()` (SystemExit) becomes `EncoderExitError` naming the model and the call: the command reports
  it as it reports an encoder that raises (`run`: that model's pairs fail, the others run, exit 1), instead
  of ending the process with the code's exit status. KeyboardInterrupt (Ctrl-C) is left alone;
- a call that has not returned after `timeout` seconds is interrupted with `EncoderTimeoutError` naming
  the model and the call (`--encoder-timeout`; `limit_for` gives the default: PYTHON_TIMEOUT_S for
  `loader: python` entries, no limit for the built-in loaders). The interruption is a SIGALRM timer, so it
  fires on POSIX systems in the main thread only, and it interrupts Python code and interruptible waits
  (sleep, I/O), not a native call that never returns to the interpreter. It is raised inside the encoder's
  code as an exception that `except Exception` does not catch; code that catches it anyway (a bare
  `except`), ignores SIGALRM or runs off the main thread is not stopped, but the elapsed time is checked
  when the call returns or raises: a call that took longer than `timeout` fails with EncoderTimeoutError
  all the same, so its output is never used. A call that never returns keeps the command waiting: that is
  what `--isolate-encoders` is for (platobench.encoders.isolated: the encoder in a process of its own,
  killed at the limit; `isolating` holds the choice while a command runs).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from platobench.encoders.python_source import library_roots
from platobench.errors import UserError
from platobench.files.ids import shown

#: Default limit of one call (load, or one batch) into a `loader: python` encoder, in seconds.
PYTHON_TIMEOUT_S = 600.0
TIMEOUT_OPTION = "--encoder-timeout"
ISOLATE_OPTION = "--isolate-encoders"

_isolate = False  # whether `loader: python` encoders load in a process of their own (`isolating`)


class EncoderCallError(UserError):
    """An encoder's code ended the call in a way no result can come from (exit, time limit)."""


class EncoderExitError(EncoderCallError):
    """The encoder's code called sys.exit() (raised SystemExit)."""


class EncoderTimeoutError(EncoderCallError):
    """A call into the encoder did not return within its time limit."""


class EncoderRaisedError(EncoderCallError):
    """An isolated encoder's code raised an exception (named with `raised`) in its process."""


class _Expired(BaseException):
    """Raised by the timer inside the encoder's code; a BaseException, so `except Exception` lets it pass."""


def limit_for(loader: str | None, timeout: float | None) -> float | None:
    """The time limit in seconds of one call into an encoder of `loader`: `timeout` when given (0: none),
    else PYTHON_TIMEOUT_S for `loader: python` and none for the built-in loaders."""
    if timeout is None:
        return PYTHON_TIMEOUT_S if loader == "python" else None
    check_timeout(timeout)
    return timeout or None


def check_timeout(timeout: float) -> None:
    """UserError unless `timeout` is a finite number of seconds >= 0."""
    if not math.isfinite(timeout) or timeout < 0:
        raise UserError(f"{TIMEOUT_OPTION} must be a finite number of seconds >= 0 (0: no limit), got {timeout:g}")


def _seconds(raw: str) -> float:
    """argparse type of TIMEOUT_OPTION."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {shown(raw)}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0 (0: no limit), got {shown(raw)}")
    return value


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """`--encoder-timeout SECONDS` (dest `encoder_timeout`, default None: `limit_for`'s default) and
    `--isolate-encoders` (dest `isolate_encoders`; the command-line entry point holds it in `isolating`)."""
    parser.add_argument(
        TIMEOUT_OPTION, type=_seconds, default=None, metavar="SECONDS",
        help=f"time limit of each call into an encoder (loading it, encoding one batch); past it the model "
             f"fails with an error naming the call (default: {PYTHON_TIMEOUT_S:g} s for 'loader: python' "
             "models, none for the built-in loaders; 0: no limit). The call is interrupted in the main thread "
             f"on POSIX and fails when it returns late; {ISOLATE_OPTION} also stops code that never returns",
    )
    parser.add_argument(
        ISOLATE_OPTION, action="store_true",
        help="run each 'loader: python' encoder in a process of its own, killed when a call passes "
             f"{TIMEOUT_OPTION}, for untrusted submissions (not a sandbox: same user, files and network); "
             "costs a process start and a copy of each batch",
    )


@contextlib.contextmanager
def isolating(on: bool) -> Iterator[None]:
    """Inside the block, `isolates` says `on` for `loader: python` encoders (the previous choice is restored)."""
    global _isolate
    previous, _isolate = _isolate, bool(on)
    try:
        yield
    finally:
        _isolate = previous


def isolates(loader: str | None) -> bool:
    """Whether an encoder of `loader` loads in a process of its own now: `loader: python` inside
    `isolating(True)` (the built-in loaders run platobench's code, always in this process)."""
    return _isolate and loader == "python"


def timeout_error(model: str, what: str, timeout: float, *, killed: bool = False) -> EncoderTimeoutError:
    """The error of a call (`what`) into `model` that did not return within `timeout` seconds; `killed`:
    its process was killed (platobench.encoders.isolated)."""
    stopped = "; its process was killed" if killed else ""
    return EncoderTimeoutError(
        f"model {model}: {what} did not return within {timeout:g} s ({TIMEOUT_OPTION}){stopped}; if it is only "
        f"slow, raise {TIMEOUT_OPTION} SECONDS (0: no limit)")


def exit_error(model: str, what: str, code: str) -> EncoderExitError:
    """The error of a call (`what`) into `model` that called sys.exit with `code` (as `shown` quotes it)."""
    return EncoderExitError(
        f"model {model}: {what} called sys.exit({code}); an encoder must return its output "
        "or raise an exception, not end the process")


def raised(exc: BaseException) -> str:
    """`exc` in one line for a message: its type, its text (control characters escaped, cut to 300
    characters) and where it was raised in the user's code (the innermost frame outside the standard
    library, site-packages and platobench), e.g. "ValueError: boom (at enc.py:12, in encode)"."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc))
    text = text if len(text) <= 300 else text[:297] + "..."
    roots = library_roots()
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = Path(frame.filename)
        if path.is_file() and not any(path.resolve().is_relative_to(root) for root in roots):
            where = f" (at {shown(str(path), 120)[1:-1]}:{frame.lineno}, in {frame.name})"
            break
    return f"{type(exc).__name__}: {text}{where}" if text else f"{type(exc).__name__}{where}"


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """`sys.stdout` and file descriptor 1 point at stderr inside the block (descriptor 1 only when both
    descriptors are open)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or replaced stream: nothing buffered to keep in order
            stream.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


class _Alarm:
    """A SIGALRM timer that raises `_Expired` in the main thread after `seconds` (None: no timer; also
    none off the main thread or without `signal.setitimer`); an outer timer is restored on exit."""

    def __init__(self, seconds: float | None) -> None:
        usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        self.seconds = seconds if usable else None
        self.armed = False

    def _ring(self, signum: int, frame: FrameType | None) -> None:
        if self.armed:
            self.armed = False
            raise _Expired

    def __enter__(self) -> _Alarm:
        if self.seconds is not None:
            self.start = time.monotonic()
            self.handler = signal.signal(signal.SIGALRM, self._ring)
            self.armed = True
            self.outer = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.armed = False
        if self.seconds is None:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.handler)
        delay, interval = self.outer
        if delay > 0:
            signal.setitimer(signal.ITIMER_REAL, max(delay - (time.monotonic() - self.start), 1e-3), interval)


@contextlib.contextmanager
def encoder_call(model: str, what: str, timeout: float | None) -> Iterator[None]:
    """Run the block (one call into model `model`'s code, described by `what`, e.g. "encode of batch 2
    (32 texts)") with its output on stderr, SystemExit turned into EncoderExitError and, when `timeout`
    is a number of seconds, EncoderTimeoutError once they have passed: interrupted where the timer can,
    and in any case when the block returns or raises past them (see the module docstring)."""
    start = time.monotonic()
    try:
        with _stdout_to_stderr(), _Alarm(timeout):
            yield
    except _Expired:
        raise timeout_error(model, what, timeout) from None  # type: ignore[arg-type]  # a timer ran: a number
    except SystemExit as exc:
        raise exit_error(model, what, shown(exc.code)) from None
    except EncoderCallError:  # an isolated encoder's own failure (platobench.encoders.isolated): named already
        raise
    except Exception as exc:
        _check_elapsed(model, what, timeout, start, exc)
        raise
    _check_elapsed(model, what, timeout, start)


def _check_elapsed(model: str, what: str, timeout: float | None, start: float, exc: Exception | None = None) -> None:
    """EncoderTimeoutError when the call that started at `start` (time.monotonic) took longer than `timeout`:
    its code ignored or caught the interruption, or ran where no timer could interrupt it; `exc`: what
    the call raised that late (chained)."""
    elapsed = time.monotonic() - start
    if timeout is None or elapsed <= timeout:
        return
    ended = f"raised {type(exc).__name__}" if exc is not None else "returned"
    raise EncoderTimeoutError(
        f"model {model}: {what} {ended} after {elapsed:.1f} s, past its limit of {timeout:g} s ({TIMEOUT_OPTION}), "
        "so the call fails: nothing stopped it (its code ignored or caught the interruption, or it ran off the "
        f"main thread); {ISOLATE_OPTION} runs the encoder in a process of its own, killed at the limit") from exc
