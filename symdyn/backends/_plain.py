"""The two hooks of a backend that computes directly (every backend module; see
:mod:`.protocol`): a step is a plain call, and the model's constants are built once per backend
and cached in the model."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..model import Model, ModelConstants


class DirectCall:
    """``call_step`` of a backend module that computes directly: ``fn(module, *args)``.
    :func:`symdyn.algorithms.steps.step` recognizes it by type and calls the step itself,
    so that a step costs one Python call on these backends."""

    __slots__ = ("module",)

    def __init__(self, module: str) -> None:
        self.module = module

    def __call__(self, fn: Callable[..., Any], args: tuple[Any, ...], /) -> Any:
        return fn(sys.modules[self.module], *args)


def plain_hooks(module: str) -> tuple[DirectCall, Callable[["Model"], "ModelConstants"]]:
    """``(call_step, model_constants)`` of the backend module named ``module``."""
    def model_constants(model: Model, /) -> ModelConstants:
        return model.cached_constants(sys.modules[module])

    return DirectCall(module), model_constants
