"""`--isolate-encoders`: a `loader: python` encoder in a process of its own, killed when a call passes its
time limit.

In the command's own process the limit (platobench.encoders.guard) interrupts the encoder's code with an
exception and checks the elapsed time when the call ends; code that never returns (it ignores SIGALRM and
loops, swallows the interruption with a bare `except` and goes on, or blocks in native code) keeps the
command waiting. Here the encoder is imported, loaded and called in a child process (a fresh interpreter,
`python -c`, talking over a socket pair: it inherits the parent's `sys.path`, working folder and
environment, and, unlike multiprocessing's "spawn", never re-runs the parent's main script), and the
parent waits for each reply at most the limit (`--encoder-timeout`), then kills the child (SIGKILL) and
fails the call with EncoderTimeoutError: the limit holds whatever the code does. On Linux the child is
also killed when the parent dies. The child is no sandbox: it runs as the same user, with the same files
and network.

What crosses the pipe: the requests (the texts, or the images as RGB PIL images: the encoder's transform
runs in the child), pickled by the parent; the replies as JSON and raw tensor bytes (dtype and shape in the
JSON), so the parent never unpickles anything the encoder's code could shape (docs/safety.md: no pickle is
loaded). The parent checks the outputs as it checks an in-process encoder's (platobench.features.extract).
In the child the encoder's output goes to stderr and sys.exit() is caught; an exception it raises comes
back as the platobench UserError it is (the simple protocol's output checks) or as EncoderRaisedError
naming it (`guard.raised`), out of memory as a RuntimeError (so extraction halves the batch), sys.exit()
as EncoderExitError, and the end of the child (a crash, os._exit) as EncoderCallError with its exit code.
Starting the child (an interpreter importing torch) is not counted in the limit; loading the encoder and
each batch are.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import PIL.Image
import torch

from platobench import paths
from platobench.encoders.base import EncoderOutputError, TextEncoder, VisionEncoder
from platobench.encoders.guard import EncoderCallError, EncoderRaisedError, exit_error, raised, timeout_error
from platobench.encoders.python_loader import ImageBatch, collate_images, keep_image
from platobench.errors import UserError
from platobench.files.ids import shown
from platobench.zoo.python_code import check_trusted
from platobench.zoo.spec import ModelSpec

PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal the calling process gets when its parent dies
#: What the child process runs: `serve` on the socket whose descriptor is its first argument.
CHILD = "import sys; from platobench.encoders.isolated import serve; serve(int(sys.argv[1]), sys.argv[2])"


class _Child:
    """The process holding one encoder, and the pipe to it; `call` sends one request and waits for its
    reply at most `timeout` seconds (None: no limit)."""

    stopped = False

    def __init__(self, spec: ModelSpec, timeout: float | None) -> None:
        self.name, self.timeout = spec.name, timeout
        mine, theirs = socket.socketpair()
        with mine, theirs:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the parent's path
            self.process = subprocess.Popen([sys.executable, "-c", CHILD, str(theirs.fileno()), str(paths.home())],
                                            pass_fds=[theirs.fileno()], env=env)
            self.conn = Connection(mine.detach())
        self.finalizer = weakref.finalize(self, _stop, self.process, self.conn)
        self._request("starting its process", "ready", (), None)  # an interpreter importing torch: no limit

    def call(self, what: str, method: str, *args: Any) -> Any:
        """The child's result of `method(*args)` within the limit; the call's failure as the error the module
        docstring names (`what` describes the call in it)."""
        return self._request(what, method, args, self.timeout)

    def _request(self, what: str, method: str, args: tuple[Any, ...], wait: float | None) -> Any:
        if self.stopped:
            raise EncoderCallError(f"model {self.name}: {what}: its process was stopped after an earlier failure")
        deadline = None if wait is None else time.monotonic() + wait
        try:
            self.conn.send_bytes(pickle.dumps((method, args)))
            header = json.loads(self._receive(what, deadline))
            blobs = [self._receive(what, deadline) for _ in header.get("tensors", ())]
        except (EOFError, OSError):
            raise self._ended(what) from None
        except EncoderCallError:
            raise
        except BaseException:  # interrupted while the child works (the parent's own timer, Ctrl-C): it cannot go on
            self.stop()
            raise
        return _result(self.name, what, header, blobs)

    def _receive(self, what: str, deadline: float | None) -> bytes:
        """The next message from the child; EncoderTimeoutError (the child killed) past `deadline`."""
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if not self.conn.poll(left):
            self.stop()
            raise timeout_error(self.name, what, self.timeout, killed=True)  # type: ignore[arg-type]  # a limit ran out
        return self.conn.recv_bytes()

    def _ended(self, what: str) -> EncoderCallError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        code = self.process.returncode
        self.stop()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"ended with exit code {code}"
        return EncoderCallError(f"model {self.name}: its process {how} during {what}; an encoder must return its "
                                "output or raise an exception")

    def stop(self) -> None:
        """Kill the child (it holds no state worth a graceful end) and close the pipe."""
        self.stopped = True
        self.finalizer()


def _stop(process: subprocess.Popen[bytes], conn: Connection) -> None:
    with contextlib.suppress(OSError):
        conn.close()
    if process.poll() is None:
        process.kill()
    process.wait()


def _result(name: str, what: str, header: dict[str, Any], blobs: list[bytes]) -> Any:
    """The value of a reply, or its failure raised (see the module docstring)."""
    status = header["status"]
    if status == "ok":
        return header["value"]
    if status == "tensors":
        return [_tensor(spec, blob) for spec, blob in zip(header["tensors"], blobs)]
    if status == "error":
        raise _user_error(header["module"], header["name"], header["message"])
    if status == "exit":
        raise exit_error(name, what, header["code"])
    if header["out_of_memory"]:
        raise RuntimeError(f"model {name}: {what} ran out of memory in its process: {header['text']}")
    raise EncoderRaisedError(f"model {name}: {what} raised {header['text']} (in its process)")


def _tensor(spec: dict[str, Any], blob: bytes) -> torch.Tensor:
    """A tensor from its JSON description (dtype name, shape, on the meta device or not) and raw bytes."""
    dtype = getattr(torch, spec["dtype"])
    if not isinstance(dtype, torch.dtype):
        raise EncoderCallError(f"an isolated encoder sent a tensor of unknown dtype {shown(spec['dtype'])}")
    if spec["meta"]:
        return torch.empty(spec["shape"], dtype=dtype, device="meta")
    if not blob:
        return torch.empty(spec["shape"], dtype=dtype)
    return torch.frombuffer(bytearray(blob), dtype=dtype).reshape(spec["shape"])


def _user_error(module: str, name: str, message: str) -> UserError:
    """The platobench UserError class `module.name` with `message` (UserError itself for any other name)."""
    cls = getattr(importlib.import_module(module), name, None) if module.startswith("platobench.") else None
    return cls(message) if isinstance(cls, type) and issubclass(cls, UserError) else UserError(message)


class IsolatedText(TextEncoder):
    """A text encoder whose code runs in a child process: `tokenize` only carries the texts over."""

    def __init__(self, spec: ModelSpec, child: _Child, info: dict[str, Any], device: torch.device) -> None:
        self.spec, self.child, self.device = spec, child, device
        self.layer_ids, self.widths = info["layer_ids"], info["widths"]

    def tokenize(self, texts: list[str]) -> dict[str, Any]:  # type: ignore[override]
        return {"texts": list(texts)}

    def token_lengths(self, texts: list[str]) -> list[int]:
        return self.child.call(f"token_lengths of {len(texts)} texts", "token_lengths", list(texts))  # type: ignore[no-any-return]

    def encode(self, batch: dict[str, Any]) -> list[torch.Tensor]:  # type: ignore[override]
        texts = batch["texts"]
        return self.child.call(f"encode of {len(texts)} texts", "encode_texts", texts)  # type: ignore[no-any-return]


class IsolatedVision(VisionEncoder):
    """A vision encoder whose code runs in a child process: the loader batches RGB images as they are
    (`transform` keeps them, `collate` lists them) and the child applies the encoder's own transform."""

    transform = staticmethod(keep_image)
    collate = staticmethod(collate_images)

    def __init__(self, spec: ModelSpec, child: _Child, info: dict[str, Any], device: torch.device) -> None:
        self.spec, self.child, self.device = spec, child, device
        self.layer_ids, self.widths = info["layer_ids"], info["widths"]

    def encode(self, pixels: ImageBatch) -> list[torch.Tensor]:  # type: ignore[override]
        images = list(pixels)
        return self.child.call(f"encode of {len(images)} images", "encode_images", images)  # type: ignore[no-any-return]


def load(spec: ModelSpec, *, device: torch.device, dtype: str | None = None, home: Path | None = None,
         timeout: float | None) -> IsolatedText | IsolatedVision:
    """The `loader: python` encoder of `spec` loaded in a child process, each call limited to `timeout`
    seconds (None: none); UserError before any process starts unless the user trusts the model."""
    check_trusted(spec)
    child = _Child(spec, timeout)
    info = child.call("loading the encoder", "load", spec, device, dtype, home)
    cls = IsolatedText if spec.modality == "text" else IsolatedVision
    return cls(spec, child, info, device)


# ---------------------------------------------------------------------------------------------- the child


def serve(fd: int, home: str) -> None:
    """The child's loop on socket descriptor `fd`: one request (method, args) at a time, one reply each,
    until the parent closes its end; the platobench home is the parent's (`home`)."""
    os.dup2(2, 1)  # what the encoder prints goes to stderr, as in the parent (platobench.encoders.guard)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it kills this process
    _die_with_parent()
    conn = Connection(fd)
    state: dict[str, Any] = {}
    with paths.using_home(Path(home)):
        while True:
            try:
                method, args = pickle.loads(conn.recv_bytes())  # from the parent, which started this process
            except EOFError:
                return
            header, blobs = _reply(state, method, args)
            conn.send_bytes(json.dumps(header).encode())
            for blob in blobs:
                conn.send_bytes(blob)


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (prctl PR_SET_PDEATHSIG); a no-op elsewhere."""
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    if name is not None:
        ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _reply(state: dict[str, Any], method: str, args: tuple[Any, ...]) -> tuple[dict[str, Any], list[bytes]]:
    """The JSON header and tensor bytes of `method` run on the encoder in `state`, or of how it failed."""
    try:
        value = _METHODS[method](state, *args)
    except SystemExit as exc:
        return {"status": "exit", "code": shown(exc.code)}, []
    except UserError as exc:
        kind = type(exc)
        return {"status": "error", "module": kind.__module__, "name": kind.__qualname__, "message": str(exc)}, []
    except BaseException as exc:  # the encoder's own failure, reported to the parent by name
        return {"status": "raised", "text": raised(exc), "out_of_memory": "out of memory" in str(exc).lower()}, []
    if not isinstance(value, list) or not value or not isinstance(value[0], torch.Tensor):
        return {"status": "ok", "value": value}, []
    described = [{"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "meta": t.is_meta}
                 for t in value]
    return {"status": "tensors", "tensors": described}, [b"" if t.is_meta else _bytes(t) for t in value]


def _bytes(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def _load(state: dict[str, Any], spec: ModelSpec, device: torch.device, dtype: str | None, home: Path | None
          ) -> dict[str, Any]:
    from platobench.encoders import python_loader
    from platobench.encoders.cpu_memory import keep_freed_memory
    from platobench.zoo import python_code

    if device.type == "cpu":
        keep_freed_memory()  # as `load_encoder` does for a model on the CPU in its own process
    with python_code.allowed([spec.name]):  # the parent checked the opt-in before starting this process
        encoder = python_loader.load(spec, device=device, dtype=dtype, home=home)
    state["encoder"] = encoder
    return {"layer_ids": list(encoder.layer_ids), "widths": [int(w) for w in encoder.widths]}


def _token_lengths(state: dict[str, Any], texts: list[str]) -> list[int]:
    return [int(x) for x in state["encoder"].token_lengths(texts)]


def _encode_texts(state: dict[str, Any], texts: list[str]) -> list[torch.Tensor]:
    encoder = state["encoder"]
    with torch.no_grad():
        return _checked(encoder, encoder.encode(encoder.tokenize(texts)))


def _encode_images(state: dict[str, Any], images: list[PIL.Image.Image]) -> list[torch.Tensor]:
    from torch.utils.data import default_collate

    encoder = state["encoder"]
    collate = getattr(encoder, "collate", None) or default_collate  # as extraction's DataLoader batches them
    with torch.no_grad():
        return _checked(encoder, encoder.encode(collate([encoder.transform(image) for image in images])))


def _checked(encoder: Any, outputs: Any) -> list[torch.Tensor]:
    """`outputs` as a list of tensors to send; EncoderOutputError for anything else (the parent checks the rest)."""
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(o, torch.Tensor) for o in outputs):
        raise EncoderOutputError(f"model {encoder.spec.name}: encode returned {type(outputs).__name__}, expected a "
                                 f"list of {len(encoder.layer_ids)} tensors (one [batch, width] tensor per layer)")
    return list(outputs)


_METHODS = {"ready": lambda state: True, "load": _load, "token_lengths": _token_lengths,
            "encode_texts": _encode_texts, "encode_images": _encode_images}
