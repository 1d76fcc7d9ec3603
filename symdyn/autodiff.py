"""Automatic differentiation of any symdyn algorithm at numeric points, through CasADi SX.

The algorithm is traced once with the CasADi backend and differentiated with ``casadi.jacobian``.
Configuration derivatives can be taken in the tangent space (``q (+) dq`` through each joint's
``integrate``), the convention for quaternion joints (and Pinocchio's).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import casadi as ca
import numpy as np

from .algorithms.configuration import integrate


def ad_jacobians(model, fn: Callable, args: Sequence, kinds: Sequence[str], wrt: Sequence[int],
                 tangent: bool = True) -> tuple:
    """Jacobians of ``fn(model, *args)`` (a vector or a matrix, flattened column-major) with
    respect to ``args[k]`` for k in ``wrt``, evaluated at the numeric ``args``.

    ``kinds[k]`` is ``'q'`` (length nq) or ``'v'`` (length nv). With ``tangent=True`` a 'q'
    argument is differentiated along ``q (+) dq`` at dq = 0 (nv columns).
    Returns the value and one numpy array per entry of ``wrt``.
    """
    syms: list[tuple[Any, ...]] = []
    inputs: list[Any] = []
    vals: list[tuple[Any, ...]] = []
    for k, (a, kind) in enumerate(zip(args, kinds)):
        n = model.nq if kind == "q" else model.nv
        x0 = np.asarray(a, dtype=float).reshape(-1)
        if k in wrt and kind == "q" and tangent:
            dq = ca.SX.sym(f"d{k}", model.nv)
            q0 = ca.SX.sym(f"x{k}", n)
            inputs.append(integrate(model, q0, dq, backend="casadi"))
            syms.append((dq, q0))
            vals.append((np.zeros(model.nv), x0))
        elif k in wrt:
            x = ca.SX.sym(f"x{k}", n)
            inputs.append(x)
            syms.append((x,))
            vals.append((x0,))
        else:
            x = ca.SX.sym(f"x{k}", n)
            inputs.append(x)
            syms.append((x,))
            vals.append((x0,))
    y = ca.vec(fn(model, *inputs, backend="casadi"))
    flat_syms = [s for group in syms for s in group]
    flat_vals = [v for group in vals for v in group]
    outs = [y] + [ca.jacobian(y, syms[k][0]) for k in wrt]
    f = ca.Function("ad", flat_syms, outs)
    res = f(*flat_vals)
    res = res if isinstance(res, (list, tuple)) else [res]
    return tuple(np.array(r, dtype=float) for r in res)
