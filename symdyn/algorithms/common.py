"""Shared entry code for the algorithms: backend resolution, input validation, joint kinematics."""
from __future__ import annotations

from typing import Any

from ..backends import resolve_backend
from ..spatial import compose
from .steps import step
from ..types import Backend


def entry(model: Any, *args: Any, backend: str | Backend | None = None,
          extra: Any = ()) -> tuple[Backend, list[list[Any]]]:
    """Resolve the backend and validate inputs.

    ``args`` are ``(name, value, kind)`` with kind ``'q'`` (length nq) or ``'v'`` (length nv).
    Returns ``(B, [per-joint segments of each input])``. ``extra`` are further inputs that only
    take part in backend resolution (e.g. external forces).
    """
    from ..model import Model

    if not isinstance(model, Model):
        raise TypeError(f"expected a symdyn Model as first argument, got {type(model).__name__}")
    B = resolve_backend(*(a[1] for a in args), *extra, backend=backend, model=model)
    with B.constant_scope():  # JAX: concrete constants even inside a trace (cached per backend)
        model.constants(B)
    out = []
    for name, x, kind in args:
        n, idx = (model.nq, model.q_idx) if kind == "q" else (model.nv, model.v_idx)
        if x is None:
            raise TypeError(f"{name} is required (a vector of length {n})")
        xv = B.to_vector(x, n, name)
        segs = [B.rows(xv, a, b) for a, b in idx]
        if kind == "q" and B.concrete(xv):   # values known (not symbols, not JAX tracers)
            _check_quaternions(model, segs, name)
        out.append(segs)
    return B, out


def _check_quaternions(model, qs, name):
    for i, j in enumerate(model.joints):
        if j.type in ("spherical", "floating"):
            quat = qs[i][-4:]
            n = float(quat @ quat) ** 0.5
            if abs(n - 1.0) > 1e-6:
                a = model.q_idx[i][1] - 4
                raise ValueError(f"{name}[{a}:{a + 4}] (joint of body {model.names[i]!r}) must be a unit "
                                 f"quaternion (x, y, z, w); its norm is {n:.6g}")


def external_forces(B: Backend, model, f_ext):
    """The body forces of ``f_ext`` as a list of N 6-vectors ``[n; f]`` in body coordinates (None:
    no force). ``f_ext``: None, a sequence of N entries (6-vectors or None), an (N, 6) array, or
    the stacked form: one vector of 6 N entries, body i's force at rows ``6 i .. 6 i + 5`` (a 1-D
    array or a column; what compiled functions take)."""
    if f_ext is None:
        return [None] * model.N
    shape = getattr(f_ext, "shape", None)
    if shape is not None and len(shape) in (1, 2) and shape[0] == 6 * model.N \
            and (len(shape) == 1 or shape[1] == 1):
        return [B.to_vector(B.rows(f_ext, 6 * i, 6 * i + 6), 6, f"f_ext[{6 * i}:{6 * i + 6}]")
                for i in range(model.N)]
    if len(f_ext) != model.N:
        raise ValueError(f"f_ext must hold one 6-vector (or None) per body: {model.N} entries, "
                         f"got {len(f_ext)} (or be one stacked vector of {6 * model.N})")
    return [None if f is None else B.to_vector(f, 6, f"f_ext[{i}]") for i, f in enumerate(f_ext)]


@step
def joint_step(B: Backend, joint, Xtree, q):
    """(Xup, S) of one body: Xup = XJ(q) Xtree and the joint's motion subspace S."""
    XJ, S = joint.calc(B, q)
    return compose(B, XJ, Xtree), S


def joint_kinematics(B: Backend, model, q):
    """Xup[i] = XJ(q_i) Xtree[i] and S[i] for every body."""
    Xtree = model.constants(B).Xtree
    Xup, S = [], []
    for i, joint in enumerate(model.joints):
        Xi, Si = joint_step(B, joint, Xtree[i], q[i])
        Xup.append(Xi)
        S.append(Si)
    return Xup, S


def assemble_blocks(B: Backend, model, blocks, rows="v", cols="v"):
    """Full matrix from a dict {(i, j): block} of per-body blocks (missing blocks are zero)."""
    ridx = model.v_idx if rows == "v" else model.q_idx
    cidx = model.v_idx if cols == "v" else model.q_idx
    kernels = getattr(B, "kernels", None) if B.numeric else None
    if kernels is not None:   # NumPy: places the blocks that exist, one store for 1 x 1 blocks
        return kernels.assemble(blocks, ridx, cidx)
    get, cols_range = blocks.get, range(len(cidx))
    grid = [[get((i, j)) for j in cols_range] for i in range(len(ridx))]
    zeros: dict[tuple[int, int], Any] = {}   # one zero block per shape (B.block copies)
    for i, row in enumerate(grid):
        for j, blk in enumerate(row):
            if blk is None:
                shape = (ridx[i][1] - ridx[i][0], cidx[j][1] - cidx[j][0])
                if shape not in zeros:
                    zeros[shape] = B.zeros(*shape)
                row[j] = zeros[shape]
    return B.block(grid)


def per_body(N: int, k: int) -> tuple[list[Any], ...]:
    """``k`` lists of ``N`` Nones, filled body by body with native arrays (typed for mypy)."""
    return tuple([None] * N for _ in range(k))
