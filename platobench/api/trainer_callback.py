"""`AlignmentCallback`: a `transformers.TrainerCallback` that scores the model under training against an
`AlignmentProbe` every `every` optimisation steps and logs the score.

`encode(model, batch)` turns the model into the probe's `encode_fn`: a batch of PIL images or strings ->
[B, D] or per-layer [B, D_l] features. The model is put in eval mode for the measurement and back in its
previous mode after. Each measurement goes to `history` (step, score, layers), to the trainer's
`state.log_history` as `{"alignment/<setting>": score, "step": step}` and, when `log` is set, to
`log({"alignment/<setting>": score})`: set `callback.log = trainer.log` once the trainer is built to reach
its loggers (Weights & Biases, TensorBoard, ...), which a callback cannot reach by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from platobench.api.probe import AlignmentProbe, ProbeScore
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

    def measure(self, model: Any, step: int) -> ProbeScore:
        """Score `model` now (eval mode, no gradients) and keep the result under `step`."""
        training = getattr(model, "training", False)
        if hasattr(model, "eval"):
            model.eval()
        try:
            result = self.probe.score(lambda batch: self.encode(model, batch))
        finally:
            if training:
                model.train()
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

    def _logged(self, state: Any, result: ProbeScore) -> None:
        state.log_history.append({self.key: result.score, "step": state.global_step})
        if self.log is not None:
            self.log({self.key: result.score})
