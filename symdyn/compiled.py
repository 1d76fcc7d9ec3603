"""A compiled model: every ``sd.*`` numeric call on it runs generated C.

::

    fast = sd.compiled(model)                  # nothing is built yet
    tau = sd.rnea(fast, q, qd, qdd)            # builds rnea once (progress shown), then C calls
    J = sd.frame_jacobian(fast, q, "tool0")    # one build per frame and options
    TAU = sd.rnea(fast, Q, QD, QDD)            # (B, nq) inputs: the C batch loop, (B, nv) out

The public functions dispatch on their first argument (:mod:`symdyn.algorithms.dispatch`): for a
:class:`CompiledModel` each (function, options) is built on first use by
:func:`symdyn.codegen.build` (the disk cache serves it afterwards, across processes) and the
loaded C function answers that call and the later ones. Signatures, results (NumPy arrays of the
same shapes; energies as floats) and the checks of the inputs are those of the NumPy path: wrong
shapes, NaN/inf and non-unit quaternions raise ValueError naming the input (the C wrapper checks
them before evaluating).

Inputs: NumPy float arrays, lists or numbers. A single state given as C-contiguous float64 arrays
of the exact shapes goes straight to C; other inputs are converted first. Not accepted, with an
error that says to call the function on ``fast.model`` instead: symbolic (SymPy, SymEngine,
CasADi) or JAX inputs (TypeError), ``backend=`` other than ``"numpy"`` (ValueError), and
arguments the compiled function cannot take (TypeError): external forces ``f_ext`` except for
``static_torque_derivatives``, whose compiled function takes them as an input (a list of N
6-vectors or None, an (N, 6) array, or (B, N, 6) for a batch of B states).

Arguments other than the state vectors (frames, contacts, ``dt``, ``compliance``,
``constraint_correction``, ``friction`` of ``contact_inverse_dynamics`` ...) are build-time
options: each distinct value is one build (then cached), so a correction that changes at every
call is better served by ``sd.contact_inverse_dynamics(fast.model, ...)``.

Functions without a compiled counterpart run the NumPy path on ``fast.model`` (same results,
NumPy speed): :data:`NUMPY_FALLBACK` lists them (``body_jacobians``, ``christoffel_nonzero``,
``contact_acceleration_drift``, ``contact_velocity``, ``coriolis_product``,
``coriolis_transpose_product``, ``forward_kinematics``, ``friction_torque``, ``integrate``,
``joint_frames``, ``total_mass``).
"""
from __future__ import annotations

import importlib
import inspect
import threading
from types import ModuleType
from typing import Any, Callable

import numpy as np

from .algorithms.dispatch import STATE_INPUTS, batch_size, state_inputs
from .backends import kind_of
from .model import Model

__all__ = ["CompiledModel", "NUMPY_FALLBACK", "compiled"]

NUMPY_FALLBACK = ("body_jacobians", "christoffel_nonzero", "contact_acceleration_drift",
                  "contact_velocity", "coriolis_product", "coriolis_transpose_product",
                  "forward_kinematics", "friction_torque", "integrate", "joint_frames",
                  "total_mass")

# options of symdyn.codegen.build that a CompiledModel passes on (the others fix what is built)
BUILD_OPTIONS = ("opt", "cflags", "native", "cse", "fast_trig", "cache", "cache_dir", "cc", "jobs",
                 "progress", "quaternions", "form")

_ndarray = np.ndarray


def compiled(model: Model, **build_options: Any) -> "CompiledModel":
    """A :class:`CompiledModel` of ``model``: pass it to the ``sd.*`` functions in place of the
    model. ``build_options`` go to :func:`symdyn.codegen.build` for every function it builds
    (:data:`BUILD_OPTIONS`: ``opt``, ``native``, ``cache_dir``, ``quaternions``, ...;
    ``progress`` defaults to True: a line per build step on stderr)."""
    return CompiledModel(model, **build_options)


class _Plan:
    """How one public function is answered: its signature, state inputs, and the C functions
    already resolved for the call forms seen (``calls``: the arguments after the states ->
    (compiled function, scalar result))."""

    __slots__ = ("function", "name", "signature", "states", "n", "calls")

    def __init__(self, function: Callable[..., Any]):
        self.function = function
        self.name = function.__name__
        self.signature = inspect.signature(function)
        self.states = state_inputs(function)
        required = [p for p in self.states
                    if self.signature.parameters[p].default is inspect.Parameter.empty]
        self.n = len(required)
        self.calls: dict = {}


class CompiledModel:
    """A :class:`~symdyn.model.Model` whose ``sd.*`` numeric calls run compiled C (see the module
    docstring). ``model``: the symdyn model (``fast.model``, for what the compiled path does not
    take: symbols, JAX, other backends, external forces). ``build_options``: see
    :func:`compiled`. ``nq``, ``nv``, ``name`` are the model's.

    ``fast.function(name, **options)`` is the loaded :class:`~symdyn.codegen.CompiledFunction`
    (built on first use), e.g. ``fast.function("frame_jacobian", frame="tool0")``;
    ``fast.functions`` lists what is loaded. Calls may come from several threads (builds are
    serialized; compiled functions keep per-thread work buffers).
    """

    def __init__(self, model: Model, **build_options: Any):
        if not isinstance(model, Model):
            raise TypeError(f"compiled() takes a symdyn Model, got {type(model).__name__}")
        if model.is_symbolic:
            raise ValueError(f"model {model.name!r} has SymPy parameters; substitute numbers with "
                             "model.subs(...) before compiling")
        bad = sorted(set(build_options) - set(BUILD_OPTIONS))
        if bad:
            raise TypeError(f"compiled(): unknown build option(s) {', '.join(bad)}; accepted: "
                            f"{', '.join(BUILD_OPTIONS)}")
        self.model = model
        self.build_options = {"progress": True, **build_options}
        self._functions: dict[tuple, Any] = {}
        self._plans: dict[Callable[..., Any], _Plan] = {}
        self._lock = threading.Lock()

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def functions(self) -> dict[tuple, Any]:
        """The loaded compiled functions by ``(name, options)``."""
        return dict(self._functions)

    def __repr__(self) -> str:
        loaded = ", ".join(k[0] for k in self._functions) or "nothing built yet"
        return f"<CompiledModel {self.model.name!r} ({loaded})>"

    def function(self, name: str, **options: Any) -> Any:
        """The compiled function ``name`` (a name of :data:`symdyn.codegen.ALGORITHMS`) with
        build-time ``options`` (frame, reference, contacts, ...), built through
        :func:`symdyn.codegen.build` on first use."""
        key = (name, _freeze(options))
        fn = self._functions.get(key)
        if fn is None:
            self.prepare((name, options))
            fn = self._functions[key]
        return fn

    def prepare(self, *functions: str | tuple[str, dict]) -> "CompiledModel":
        """Build the functions not built yet ahead of their first call, together in one library
        (one build, one compile of the wrapper): names (``"rnea"``) or ``(name, options)``
        pairs (``("frame_jacobian", {"frame": "tool0"})``). Returns ``self``."""
        wanted = []
        for item in functions:
            name, options = (item, {}) if isinstance(item, str) else item
            if isinstance(options.get("frame"), (list, tuple)):
                raise TypeError(f"{name}: frame must be one frame (a name, a body index or a "
                                f"Frame), got {type(options['frame']).__name__}")
            options = self._options(name, name, dict(options))
            wanted.append(((name, _freeze(options)), name, options))
        with self._lock:
            todo = {key: (name, options) for key, name, options in wanted
                    if key not in self._functions}
            if todo:
                labels = {f"{name}:f{k}": key for k, (key, (name, _)) in enumerate(todo.items())}
                request = {label: todo[key][1] for label, key in labels.items()}
                lib = _codegen().build(self.model, request, **self.build_options)
                for label, key in labels.items():
                    fn = self._functions[key] = lib[label]
                    fn.nan_hint = False     # sd.* functions have no nan= option
        return self

    # -- the dispatch protocol -----------------------------------------------------------------
    def __symdyn_evaluate__(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Answer ``function(self, *args, **kwargs)`` (see :mod:`symdyn.algorithms.dispatch`)."""
        plan = self._plans.get(function)
        if plan is not None and args and args[0].__class__ is _ndarray:
            # a call form seen before (the states positionally): straight to C; a batch, bad
            # input or a new form goes the careful way
            n = plan.n
            try:
                if len(args) == n and not kwargs:
                    cfn, scalar = plan.calls[()]
                    out = cfn(*args)
                else:
                    cfn, scalar = plan.calls[(args[n:], tuple(kwargs.items())) if kwargs
                                             else args[n:]]
                    out = cfn(*args[:n])
            except (KeyError, TypeError, ValueError):
                pass
            else:
                return float(out) if scalar else out
        return self._evaluate(function, args, kwargs)

    def _plan(self, function: Callable[..., Any]) -> _Plan:
        plan = self._plans.get(function)
        if plan is None:
            plan = self._plans[function] = _Plan(function)
        return plan

    def _evaluate(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        plan = self._plan(function)
        name = plan.name
        if name in NUMPY_FALLBACK or plan.n == 0:
            return function(self.model, *args, **kwargs)
        try:
            bound = plan.signature.bind(self.model, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}(): {exc}") from None
        arguments = dict(bound.arguments)
        del arguments[next(iter(plan.signature.parameters))]
        backend = arguments.pop("backend", None)
        if backend is not None and getattr(backend, "name", backend) != "numpy":
            raise ValueError(f"{name}: a compiled model evaluates NumPy floats in C; for "
                             f"backend={getattr(backend, 'name', backend)!r} call "
                             f"sd.{name}(fast.model, ..., backend=...)")
        names = [n for n in plan.states if arguments.get(n) is not None]
        values = [arguments.pop(n) for n in names]
        for n in plan.states:
            arguments.pop(n, None)
        for n, x in zip(names, values):
            kind = kind_of(x)
            if kind not in (None, "numpy"):
                raise TypeError(f"{name}: input {n} holds {kind} values; a compiled model "
                                f"evaluates NumPy floats only: call sd.{name}(fast.model, ...) "
                                f"for {kind} inputs")
        n_states = batch_size(self.model, names, values, name)     # before any build
        algorithm = self._algorithm(function, names)
        f_ext = arguments.pop("f_ext", None)
        forces = "f" in (kind for _, kind in _codegen().ALGORITHMS[algorithm].inputs)
        if forces and f_ext is None:
            return function(self.model, *args, **kwargs)    # the NumPy path's error
        if f_ext is not None and not forces:
            raise TypeError(f"{name}: the compiled function takes no external forces f_ext; "
                            f"call sd.{name}(fast.model, ..., f_ext=...) for them")
        options = self._options(name, algorithm, arguments)
        cfn = self.function(algorithm, **options)
        scalar = len(cfn.output_shapes) == 1 and cfn.output_shapes[0] == ()
        if forces:
            values.append(_stacked_forces(self.model.N, f_ext, n_states, name))
        if n_states is not None:
            return cfn.batch(*values)
        values = [_one_state(x, getattr(self.model, STATE_INPUTS[n])) for n, x in
                  zip(names, values)] + values[len(names):]
        out = cfn(*values)
        if len(args) >= plan.n and len(names) == plan.n and not forces \
                and not kwargs.keys() & set(plan.states):
            try:
                plan.calls[(args[plan.n:], tuple(kwargs.items())) if kwargs
                           else args[plan.n:]] = (cfn, scalar)
            except TypeError:     # unhashable arguments (lists of contacts): no shortcut
                pass
        return float(out) if scalar else out

    @staticmethod
    def _algorithm(function: Callable[..., Any], names: list[str]) -> str:
        """The compiled algorithm that answers ``function`` with the state inputs ``names``."""
        name = function.__name__
        if name == "center_of_mass":
            return "center_of_mass_velocity" if "qd" in names else "center_of_mass"
        spec = _codegen().ALGORITHMS.get(name)
        if spec is None or spec.function is not function:   # pragma: no cover - registry drift
            raise TypeError(f"{name} has no compiled counterpart; call sd.{name}(fast.model, ...)")
        return name

    @staticmethod
    def _options(name: str, algorithm: str, arguments: dict) -> dict:
        """The build-time options of a call: its other arguments, less those equal to the
        function's defaults (one build serves both spellings); TypeError for the ones the
        compiled function cannot take."""
        functions = _codegen().functions
        functions.algorithm_spec(algorithm)          # ValueError naming the known ones
        defaults = functions.algorithm_options(algorithm)
        options = {k: v for k, v in arguments.items()
                   if not (k in defaults and _same(v, defaults[k]))}
        try:
            functions.check_options(algorithm, options)
        except TypeError as exc:
            raise TypeError(f"{exc}; for other arguments call sd.{name}(fast.model, ...)") \
                from None
        return options


def _codegen() -> ModuleType:
    """:mod:`symdyn.codegen`, imported on first use by name: ``import symdyn`` stays without the
    code generator, and so do the sources that experiments/provenance.py attributes to reports
    that never compile (scripts timing compiled models import symdyn.codegen themselves)."""
    return importlib.import_module("symdyn.codegen")


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _freeze(value: Any) -> Any:
    """A hashable key for option values (lists of contacts, frames)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *map(_freeze, value))
    if isinstance(value, np.ndarray):     # every digit (a repr would round)
        return ("ndarray", value.shape, value.dtype.str, value.tobytes())
    try:
        hash(value)
        return value
    except TypeError:
        return (type(value).__qualname__, repr(value))


def _stacked_forces(N: int, f_ext: Any, n_states: int | None, name: str) -> np.ndarray:
    """External forces as the compiled input takes them (:mod:`symdyn.codegen.functions`): one
    state's N entries (6-vectors ``[n; f]`` or None), (N, 6) or stacked (6 N,) array as a
    (6 N,) vector; a batch's (B, N, 6) or (B, 6 N) array as (B, 6 N). Shapes are checked here,
    values (NaN, inf) by the compiled function."""
    if n_states is None and isinstance(f_ext, (list, tuple)) and len(f_ext) == N:
        try:
            return np.concatenate([np.zeros(6) if f is None else
                                   np.asarray(f, dtype=float).reshape(6) for f in f_ext])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: f_ext must hold one 6-vector [n; f] (or None) per body: "
                             f"{exc}") from None
    try:
        a = np.asarray(f_ext, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: f_ext must be real numbers: {exc}") from None
    lead = () if n_states is None else (n_states,)
    if a.shape in (lead + (N, 6), lead + (6 * N,)):
        return a.reshape(lead + (6 * N,))
    want = f"({N}, 6) or ({6 * N},)" if n_states is None else \
        f"({n_states}, {N}, 6) or ({n_states}, {6 * N})"
    raise ValueError(f"{name}: f_ext must have shape {want}{' (one per state)' if lead else ''}"
                     f", or be a list of {N} 6-vectors or None; got shape {a.shape}")


def _one_state(x: Any, n: int) -> Any:
    """A single state's vector as the NumPy path takes it: a row or column matrix of ``n``
    entries as a vector; anything else as given (the compiled function checks it)."""
    if x.__class__ is _ndarray and x.ndim == 2 and x.size == n and 1 in x.shape:
        return x.reshape(-1)
    return x
