"""The two hooks of a backend that computes directly (every backend module; see
:mod:`.protocol`): a step is a plain call, and the model's constants are built once per backend
and cached in the model."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..model import Model, ModelConstants


def plain_hooks(module: str) -> tuple[Callable[[Callable[..., Any], tuple[Any, ...]], Any],
                                      Callable[["Model"], "ModelConstants"]]:
    """``(call_step, model_constants)`` of the backend module named ``module``."""
    def call_step(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        return fn(sys.modules[module], *args)

    def model_constants(model: Model) -> ModelConstants:
        return model.cached_constants(sys.modules[module])

    return call_step, model_constants
