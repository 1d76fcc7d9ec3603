"""The batched arguments of a compiled algorithm: which, their lengths, and their checks."""
from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["QUATERNION_TOL", "batch_sizes", "batched_arguments", "check_values", "resolve"]

# |norm - 1| a unit quaternion may have: the tolerance of the algorithms' own check of q
QUATERNION_TOL = 1e-6
# batched arguments by name: their length (model.nq / nv, or the independent joints' nq / nv of
# the mimic functions: those taking q_r) and whether they hold the joints' unit quaternions
_BATCHED = {"q": "q", "qd": "v", "qdd": "v", "tau": "v", "nu": "v", "qd_r": "v", "qr_d": "v",
            "qr_dd": "v", "f_ext": "f"}   # f_ext where required: stacked, 6 N (f_ext=None: none)
_BATCHED_MIMIC = {"q_r": "q_r", "qd_r": "v_r", "qdd_r": "v_r", "tau_r": "v_r"}
STATE = {"q", "q_r"}     # the arguments holding coordinates (quaternions checked)
# required arguments that are one value for the whole batch: compile's options
_FIXED = {"frame": "frame='<frame name or index>'"}


def resolve(algorithm) -> tuple[str, Callable]:
    if callable(algorithm):
        return getattr(algorithm, "__name__", "algorithm"), algorithm
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a symdyn function or its name, got "
                        f"{type(algorithm).__name__}")
    import symdyn
    import symdyn.algorithms
    from symdyn.algorithms import regressors
    for ns in (symdyn, symdyn.algorithms, regressors):
        fn = getattr(ns, algorithm, None)
        if callable(fn) and not algorithm.startswith("_"):
            return algorithm, fn
    raise ValueError(f"unknown algorithm {algorithm!r}: pass the name of a symdyn function "
                     "(rnea, crba, aba, coriolis_matrix, christoffel, rnea_derivatives, ...) "
                     "or the function")


def batch_sizes(sizes: int | Sequence[int]) -> tuple[int, ...]:
    """Batch sizes as a tuple of ints: one integer ``B`` means ``(B,)``; a sequence of integers
    >= 0 is taken as it is (``TypeError`` for anything else, ``ValueError`` for a bad size)."""
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        sizes = (sizes,)
    elif isinstance(sizes, (str, bytes, bool)) or not hasattr(sizes, "__iter__"):
        raise TypeError(f"batch_sizes must be an integer or a sequence of integers, got "
                        f"{sizes!r}")
    out = tuple(sizes)
    for B in out:
        if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 0:
            raise ValueError(f"batch sizes must be integers >= 0, got {B!r}")
    return tuple(int(B) for B in out)


def batched_arguments(model, name: str, fn: Callable, options: dict) -> tuple[
        tuple[str, ...], tuple[int, ...], list[tuple[int, str]]]:
    """``(args, sizes, quaternions)`` of ``fn`` compiled for ``model``: the batched arguments
    (the required positional ones after the model that ``options`` does not give), their lengths,
    and ``(offset, body)`` of each unit quaternion (spherical and floating joints: x, y, z, w
    last) in the coordinates argument. A clear ``TypeError`` where ``fn`` is not an algorithm of
    batched states: no ``backend=``, no state argument, an option it does not take, or a fixed
    argument (``frame``) not given."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    if "backend" not in sig.parameters and not any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(f"{name} is not a symdyn algorithm of (model, states..., backend=): "
                        "symdyn.jax.compile takes rnea, crba, aba, coriolis_matrix, christoffel, "
                        "the derivatives, the frame / centre-of-mass / energy functions, the "
                        "regressors, the mimic_* functions, or a function of that form")
    known = {p.name for p in params}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"{name}() takes no option {unknown[0]!r}")
    args = tuple(p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                 and p.default is p.empty and p.name not in options)
    fixed = [a for a in args if a in _FIXED]
    if fixed:
        raise TypeError(f"{name}: {fixed[0]!r} is the same for every state of a batch; give it to "
                        f"compile: symdyn.jax.compile(model, {name!r}, {_FIXED[fixed[0]]})")
    if not args:
        raise TypeError(f"{name} takes no batched state (q, qd, ...): there is nothing to "
                        "batch; call it directly")
    from symdyn.reduce import mimic_independent
    table = dict(_BATCHED, **_BATCHED_MIMIC) if "q_r" in args else _BATCHED
    if (getattr(fn, "__module__", None) or "").startswith("symdyn."):
        odd = [a for a in args if a not in table]
        if odd:
            raise TypeError(f"{name}: argument {odd[0]!r} is not a batched state; give it to "
                            f"compile as an option ({odd[0]}=...)")
    independent = set(mimic_independent(model))
    q_end: dict[int, int] = {}            # body -> end of its coordinates in q_r
    nq_r = nv_r = 0
    for i, jn in enumerate(model.joint_names):
        if jn in independent:
            nq_r, nv_r = nq_r + model.joints[i].nq, nv_r + model.joints[i].nv
            q_end[i] = nq_r
    length = {"q": model.nq, "v": model.nv, "q_r": nq_r, "v_r": nv_r, "f": 6 * model.N}
    sizes = tuple(length[table.get(a, "v")] for a in args)   # other names (your functions): nv
    if "q_r" in args:
        at = q_end
    else:
        at = {i: model.q_idx[i][1] for i in range(len(model.joints))}
    quaternions = [(at[i] - 4, model.names[i]) for i, j in enumerate(model.joints)
                   if i in at and j.type in ("spherical", "floating")]
    return args, sizes, quaternions


def random_state(c: Any, rng: np.random.Generator) -> list[np.ndarray]:
    """One valid state of ``c``'s batched arguments (unit quaternions where they belong)."""
    from symdyn.reduce import reduce_mimic
    xs = []
    for a, n in zip(c.args, c.sizes):
        if a == "q":
            xs.append(c.model.random_q(rng))
        elif a == "q_r":
            xs.append(np.asarray(reduce_mimic(c.model, c.model.random_q(rng))))
        else:
            xs.append(rng.uniform(-1, 1, n))
    return xs


def reference_shapes(c: Any) -> tuple[list[tuple[int, ...]], bool]:
    """Shapes of the results (NumPy at a random state) and whether they come as a tuple."""
    xs = random_state(c, np.random.default_rng(0))
    out = c.fn(c.model, *xs, backend="numpy", **c.options)
    outs = list(out) if isinstance(out, tuple) else [out]
    return [np.shape(o) for o in outs], isinstance(out, tuple)


def check_values(arr: np.ndarray, arg: str, quaternions: Sequence[tuple[int, str]],
                 one: bool = False) -> None:
    """``ValueError`` naming the argument ``arg`` and the state where ``arr`` (``(batch, n)``)
    holds NaN or inf, or (coordinates) a quaternion at an offset of ``quaternions`` that is not a
    unit one; ``one``: ``arr`` is the one state of a ``.single`` call, named without its index."""
    def at(s, rest=""):
        index = ", ".join(x for x in ("" if one else str(s), rest) if x)
        return f"{arg}[{index}]" if index else arg
    if not math.isfinite(arr.sum()):        # NaN and inf propagate (or finite overflow)
        bad = ~np.isfinite(arr)
        if bad.any():
            s, i = np.argwhere(bad)[0]
            raise ValueError(f"{at(s)} contains NaN or inf at index {i}")
    if arg not in STATE or not arr.shape[0]:
        return
    lo, hi = (1.0 - QUATERNION_TOL) ** 2, (1.0 + QUATERNION_TOL) ** 2
    for a, body in quaternions:
        quat = arr[:, a:a + 4]
        norm2 = np.einsum("ij,ij->i", quat, quat)
        if not lo <= norm2.min() <= norm2.max() <= hi:      # |norm - 1| > tol somewhere
            norm = np.sqrt(norm2)
            bad = np.flatnonzero(np.abs(norm - 1.0) > QUATERNION_TOL)
            if not bad.size:                 # at the bound, within rounding
                continue
            s = int(bad[0])
            raise ValueError(f"{at(s, f'{a}:{a + 4}')} (joint of body {body!r}) must be a unit "
                             f"quaternion (x, y, z, w); its norm is {norm[s]:.6g}")
