"""`AlignmentCallback`: a `transformers.TrainerCallback` that scores the model under training against an
`AlignmentProbe` every `every` optimisation steps and logs the score.

`encode(model, batch)` turns the model into the probe's `encode_fn`: a batch of PIL images or strings ->
[B, D] or per-layer [B, D_l] features. The model is put in eval mode for the measurement and after it each
of its modules is back in its own previous mode (a BatchNorm the user froze in eval mode stays frozen).
Each measurement goes to `history` (step, score, layers), to the trainer's `state.log_history` as
`{"alignment/<setting>": score, "step": step}` and, when `log` is set, to `log({"alignment/<setting>":
score})`: set `callback.log = trainer.log` once the trainer is built to reach its loggers (Weights & Biases,
TensorBoard, ...), which a callback cannot reach by itself. A measurement whose features hold NaN or
infinite values (a diverging step, an overflow in half precision) has no value: it is logged as NaN, with
layers None, and a warning, and training goes on; any other error of the measurement stops it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from transformers import TrainerCallback

from platobench.api.probe import AlignmentProbe, NonFiniteFeaturesError, ProbeScore
from platobench.errors import UserError


class AlignmentCallback(TrainerCallback):
    """Log `probe.score(lambda batch: encode(model, batch))` every `every` steps (and at step 0 when
    `at_start`, before training changes the model)."""

    def __init__(self, probe: AlignmentProbe, encode: Callable[[Any, list[Any]], Any], *, every: int = 100,
                 at_start: bool = True, log: Callable[[dict[str, float]], Any] | None = None) -> None:
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise UserError(f"AlignmentCallback: every must be a positive number of steps, got {every!r}")
        self.probe, self.encode, self.every, self.at_start, self.log = probe, encode, every, at_start, log
        self.key = f"alignment/{probe.setting.id}"
        self.history: list[dict[str, Any]] = []

    def measure(self, model: Any, step: int) -> ProbeScore | None:
        """Score `model` now (eval mode, no gradients) and keep the result under `step`; None, kept as a
        NaN score with a warning, when the features hold NaN or infinite values."""
        with _eval_mode(model):
            try:
                result = self.probe.score(lambda batch: self.encode(model, batch))
            except NonFiniteFeaturesError as exc:
                warnings.warn(f"{self.key} at step {step} is NaN: {exc}", stacklevel=2)
                self.history.append({"step": step, "score": math.nan, "layers": None})
                return None
        self.history.append({"step": step, "score": result.score, "layers": result.layers})
        return result

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
        if self.at_start and model is not None and state.global_step == 0:
            self._logged(state, self.measure(model, 0))
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
        if model is not None and state.global_step % self.every == 0:
            self._logged(state, self.measure(model, state.global_step))
        return control

    def _logged(self, state: Any, result: ProbeScore | None) -> None:
        score = math.nan if result is None else result.score
        state.log_history.append({self.key: score, "step": state.global_step})
        if self.log is not None:
            self.log({self.key: score})


@contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    """`model` in eval mode inside the block; after it, each of its modules (a torch.nn.Module's
    `modules()`) in the mode it had before, not all in the model's: `model.train()` would put back in
    training mode a submodule the user had set to eval. A model without modules gets its own mode back."""
    modules = list(model.modules()) if hasattr(model, "modules") else [model]
    modes = [getattr(m, "training", None) for m in modules]
    if hasattr(model, "eval"):
        model.eval()
    try:
        yield
    finally:
        for module, mode in zip(modules, modes):
            if mode is not None:
                module.training = mode
