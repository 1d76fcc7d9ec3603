"""What the symbolic functions return and take: :class:`SymbolicResult` (the nonzero unique
entries of M, C or Gamma), :func:`as_model` (a model or a spec string) and :func:`symmetric_jk`."""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from .simplify import operation_count


def as_model(model, what: str = "model"):
    """``model`` itself if it is a :class:`symdyn.Model`, the model built from a spec string
    (:func:`symdyn.io.specs.from_spec`), else a TypeError that says what is expected."""
    from ..model import Model

    if isinstance(model, Model):
        return model
    if isinstance(model, str):
        from ..io.specs import from_spec

        return from_spec(model)
    raise TypeError(f"{what}: expected a symdyn Model (from symdyn.models builders, "
                    f"symdyn.load_urdf, ...) or a model spec string such as 'planar:2' "
                    f"(symdyn.io.specs.from_spec), got {type(model).__name__}")


def symmetric_jk(model) -> bool:
    """Gamma is symmetric in (j, k) for generalized coordinates of 1-DoF joints with constant S."""
    return all(j.nv == 1 and j.S_constant for j in model.joints)


@dataclass
class SymbolicResult:
    """Nonzero unique entries of a symbolic quantity.

    ``kind`` is 'mass_matrix', 'coriolis_matrix' or 'christoffel'; ``entries`` maps 0-based index
    tuples to SymPy expressions. Symmetry used: M[i, j] = M[j, i] (i <= j stored); for Gamma,
    when ``symmetric_jk`` only j <= k is stored and Gamma[i, k, j] = Gamma[i, j, k].
    """

    kind: str
    model_name: str
    shape: tuple
    entries: dict
    q: list
    qd: list
    params: list
    symmetric: bool = False          # mass matrix symmetry
    symmetric_jk: bool = False       # Christoffel symmetry in (j, k)
    seconds: dict = field(default_factory=dict)
    ops_raw: int | None = None       # operation count before simplification (measure=True)

    def __post_init__(self):
        # entries are SymPy objects (numbers given as Python ints/floats are sympified), so that
        # .free_symbols, printing and operation counts work on every entry
        self.entries = {tuple(k): sp.sympify(e) for k, e in self.entries.items()}

    def full(self):
        """The full quantity as a SymPy Matrix (M, C) or a rank-3 Array (Gamma); every element,
        the zeros included, is a SymPy object."""
        if len(self.shape) == 2:
            out = sp.zeros(*self.shape)
            for (i, j), e in self.entries.items():
                out[i, j] = e
                if self.symmetric:
                    out[j, i] = e
            return out
        size = 1
        for d in self.shape:
            size *= d
        out = sp.MutableDenseNDimArray([sp.S.Zero] * size, self.shape)
        for (i, j, k), e in self.entries.items():
            out[i, j, k] = e
            if self.symmetric_jk:
                out[i, k, j] = e
        return out

    @property
    def operations(self) -> int:
        return operation_count(self.entries.values())

    def cse(self, optimizations="basic"):
        """Common-subexpression elimination over all entries: (replacements, {index: expr})."""
        keys = list(self.entries)
        repl, reduced = sp.cse([self.entries[k] for k in keys], optimizations=optimizations)
        return repl, dict(zip(keys, reduced))

    def cse_operations(self) -> int:
        repl, reduced = self.cse()
        return operation_count([e for _, e in repl]) + operation_count(reduced.values())

    def __repr__(self) -> str:
        return (f"<SymbolicResult {self.kind} of {self.model_name!r}: shape {self.shape}, "
                f"{len(self.entries)} nonzero unique entries, {self.operations} ops>")
