"""Recording an algorithm into kernels and a program (see :mod:`symdyn.codegen.recursive`).

Values are :class:`Ref` s (where each entry lives, or a literal); the :class:`Recorder` traces
each step signature once into a CasADi kernel and appends one instruction per call; the finished
:class:`Program` fuses independent calls, places single-value results in the outputs, reuses
dead workspace blocks and encodes every address; :func:`evaluate` runs it in Python (the
reference semantics of the generated C loop).
"""
from __future__ import annotations

import contextlib
import copy
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import casadi as ca
import numpy as np

from ...backends.protocol import Backend
from ...spatial import Transform

CONST_BIT = 1 << 40          # recording addresses >= CONST_BIT live in the constant table

# Addresses of the finished program (32-bit, unsigned): (base << 24) | offset with base 0 the
# workspace, 1 the constant table and k + 2 result k (decoded without a branch in C).
OFFSET_BITS = 24
OFFSET_MASK = (1 << OFFSET_BITS) - 1
WORK, CONSTANTS, RESULT0 = 0, 1, 2


def encode(base: int, offset: int) -> int:
    """The program address of ``offset`` in ``base`` (see ``WORK``, ``CONSTANTS``, ``RESULT0``)."""
    return (base << OFFSET_BITS) | offset


def decode(a: int) -> tuple[int, int]:
    """``(base, offset)`` of a program address (see :func:`encode`)."""
    return a >> OFFSET_BITS, a & OFFSET_MASK


# Gathers: a step marked dense (symdyn.algorithms.steps.dense_step) reads arguments assembled
# from many blocks (pages of a tensor, columns from several steps): each argument whose entries
# are not one block in order is first copied into a block of its own by a gather instruction
# (kernel index -1 - g, g its index in Program.gathers; literals read from the constant table),
# so that one kernel serves every call of the same shapes instead of one kernel per call. A
# dense step marked matmul (steps.matmul_step: A @ X) whose gathered arguments and result are
# whole blocks is a native kernel (Kernel.native): the C loop runs a product loop for it and
# its traced kernel serves only evaluate/lower; such kernels are never fused.

# Recorder._pattern keeps the patterns of this many recent Refs (a loop's varying arguments
# recur: a body's motion subspace in the loops of all its descendants)
PATTERNS_KEPT = 4096

# At most this many independent consecutive calls of one kernel are fused into one call
# (Recorder._fuse_runs): 8 takes most of the gain on the ancestor loops of coriolis_matrix and
# rnea_derivatives, 16 is no faster on chains of 40-160 bodies and doubles the variants' code
# (experiments/scaling.py times the recursive form against N; reports/scaling.md).
FUSE = 8
# fuse_exact (record(..., fuse_exact=True)): a kernel gets its fused variant (one, of ``fuse``
# calls) only where it has at least this many such runs; rarer runs stay single calls (a
# variant used once saves a few dispatches and costs gcc its whole code)
FUSE_EXACT_MIN_RUNS = 4


class Ref:
    """A value of the recorded program: a 2-D array whose entries are each ``sign * memory[addr]``
    or the literal ``lit`` (``addr == -1``). Vectors are (n, 1), as on the CasADi backend."""

    __slots__ = ("addr", "lit", "sign")

    def __init__(self, addr, lit=None, sign=None):
        self.addr = np.asarray(addr, dtype=np.int64)
        if self.addr.ndim not in (2, 3):
            raise ValueError("Ref arrays are 2-D (3-D only for rank-3 results)")
        self.lit = np.zeros(self.addr.shape) if lit is None else np.asarray(lit, dtype=float)
        self.sign = np.ones(self.addr.shape, dtype=np.int8) if sign is None else \
            np.asarray(sign, dtype=np.int8)

    @classmethod
    def _of(cls, addr: np.ndarray, lit: np.ndarray, sign: np.ndarray) -> "Ref":
        """A Ref of arrays already of its dtypes and shape (no conversion: the recorder's
        results)."""
        r = object.__new__(cls)
        r.addr, r.lit, r.sign = addr, lit, sign
        return r

    @classmethod
    def literal(cls, values) -> "Ref":
        v = np.asarray(values, dtype=float)
        v = v.reshape(-1, 1) if v.ndim <= 1 else v
        return cls(np.full(v.shape, -1), v)

    @property
    def shape(self) -> tuple[int, int]:
        return self.addr.shape  # type: ignore[return-value]

    @property
    def is_literal(self) -> bool:
        return bool((self.addr < 0).all())

    @property
    def T(self) -> "Ref":
        return Ref(self.addr.T, self.lit.T, self.sign.T)

    def __getitem__(self, idx) -> "Ref":
        if not isinstance(idx, tuple):
            idx = (idx, slice(None))
        idx = tuple(slice(i, i + 1) if isinstance(i, (int, np.integer)) else i for i in idx)
        return Ref(self.addr[idx], self.lit[idx], self.sign[idx])

    def __neg__(self) -> "Ref":
        return Ref(self.addr, -self.lit, -self.sign)

    def __repr__(self) -> str:
        return f"Ref(shape={self.shape}, dynamic={int((self.addr >= 0).sum())})"

    def _outside_step(self, *_):
        raise TypeError("arithmetic on a recorded value outside a step: a recorded algorithm "
                        "computes only inside @step functions (symdyn.algorithms.steps)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _outside_step
    __matmul__ = __rmatmul__ = __truediv__ = __rtruediv__ = __pow__ = _outside_step


def _cat(parts: Sequence[Ref], axis: int) -> Ref:
    return Ref(np.concatenate([p.addr for p in parts], axis),
               np.concatenate([p.lit for p in parts], axis),
               np.concatenate([p.sign for p in parts], axis))


def _backend_function(name: str) -> Callable:
    """The backend function ``name`` as a step: called outside a step, it is recorded as a
    kernel of its own."""
    def fn(B, *args):
        return getattr(B, name)(*args)
    fn.__name__ = fn.__qualname__ = name
    return fn


_RECORDED = {name: _backend_function(name) for name in (
    "inv", "solve", "dot", "skew", "sin", "cos", "sqrt", "sign", "atan2", "where_positive",
    "sin_over_x", "one_minus_cos_over_x2", "x_minus_sin_over_x3")}


class RecordingBackend:
    """The backend an algorithm runs on while it is recorded (a
    :class:`~symdyn.backends.protocol.Backend`): values are :class:`Ref` s; steps
    (``call_step``) and the functions that compute (``inv``, ``sin``, ...) become kernels and
    instructions, slicing and assembling rearrange references, and the model's constants are
    table entries. Arithmetic operators on a :class:`Ref` outside a step are refused."""

    name = "recording"
    numeric = False
    graph = False
    ndarray = Ref

    def __init__(self, recorder: "Recorder"):
        self._recorder = recorder

    # hooks
    def call_step(self, fn: Callable, args: tuple) -> Any:
        return self._recorder.call(fn, args)

    def call_steps(self, fn: Callable, calls: Sequence[tuple]) -> list:
        return self._recorder.call_loop(fn, calls)

    def model_constants(self, model) -> Any:
        return self._recorder.model_constants(model)

    # functions that compute: one kernel each
    def inv(self, A):
        return self.call_step(_RECORDED["inv"], (A,))

    def solve(self, A, b):
        return self.call_step(_RECORDED["solve"], (A, b))

    def dot(self, a, b):
        return self.call_step(_RECORDED["dot"], (a, b))

    def skew(self, w):
        return self.call_step(_RECORDED["skew"], (w,))

    def sin(self, x):
        return self.call_step(_RECORDED["sin"], (self._ref(x),))

    def cos(self, x):
        return self.call_step(_RECORDED["cos"], (self._ref(x),))

    def sqrt(self, x):
        return self.call_step(_RECORDED["sqrt"], (self._ref(x),))

    def sign(self, x):
        return self.call_step(_RECORDED["sign"], (self._ref(x),))

    def atan2(self, y, x):
        return self.call_step(_RECORDED["atan2"], (self._ref(y), self._ref(x)))

    def where_positive(self, x, a, b):
        return self.call_step(_RECORDED["where_positive"], (self._ref(x), self._ref(a),
                                                             self._ref(b)))

    def sin_over_x(self, x2):
        return self.call_step(_RECORDED["sin_over_x"], (self._ref(x2),))

    def one_minus_cos_over_x2(self, x2):
        return self.call_step(_RECORDED["one_minus_cos_over_x2"], (self._ref(x2),))

    def x_minus_sin_over_x3(self, x2):
        return self.call_step(_RECORDED["x_minus_sin_over_x3"], (self._ref(x2),))

    # values known while recording
    @staticmethod
    def concrete(x) -> bool:
        return False

    @staticmethod
    def constant_scope():
        return contextlib.nullcontext()

    @staticmethod
    def is_zero(x) -> bool:
        x = RecordingBackend._ref(x)
        return bool(x.is_literal and not x.lit.any())

    @staticmethod
    def is_symbol(x) -> bool:
        return False

    @staticmethod
    def to_numpy(x):
        x = RecordingBackend._ref(x)
        if not x.is_literal:
            raise TypeError("a recorded value has no numbers until the program runs")
        return x.lit.copy()

    # inputs
    @staticmethod
    def to_vector(x, n: int, what: str) -> Ref:
        if not isinstance(x, Ref):
            x = Ref.literal(np.asarray(x, dtype=float).reshape(-1))
        if x.shape != (n, 1):
            raise ValueError(f"{what} must have length {n}, got shape {x.shape}")
        return x

    @staticmethod
    def to_matrix(x, shape: tuple[int, int], what: str) -> Ref:
        if not isinstance(x, Ref):
            x = Ref.literal(np.atleast_2d(np.asarray(x, dtype=float)))
        if x.shape != tuple(shape):
            raise ValueError(f"{what} must have shape {tuple(shape)}, got {x.shape}")
        return x

    # arrays: references rearranged
    @staticmethod
    def zeros(n: int, m: int | None = None) -> Ref:
        return Ref.literal(np.zeros((n, 1 if m is None else m)))

    @staticmethod
    def eye(n: int) -> Ref:
        return Ref.literal(np.eye(n))

    @staticmethod
    def const(x) -> Ref:
        return Ref.literal(x)

    @staticmethod
    def matrix(rows) -> Ref:
        return RecordingBackend.block([list(row) for row in rows])

    @staticmethod
    def vector(entries) -> Ref:
        return RecordingBackend.vcat(list(entries))

    @staticmethod
    def rows(x: Ref, a: int, b: int) -> Ref:
        return x[a:b, :]

    @staticmethod
    def cols(x: Ref, a: int, b: int) -> Ref:
        return x[:, a:b]

    @staticmethod
    def vcat(parts) -> Ref:
        return _cat([RecordingBackend._ref(p) for p in parts], 0)

    @staticmethod
    def hcat(parts) -> Ref:
        return _cat([RecordingBackend._ref(p) for p in parts], 1)

    @staticmethod
    def block(blocks) -> Ref:
        return _cat([_cat([RecordingBackend._ref(b) for b in row], 1) for row in blocks], 0)

    def assign(self, x: Ref, r, c, v) -> Ref:
        """x[r, c] = v in place (ints or slices), as the other backends' ``assign``."""
        self._recorder.changed(x)
        v = RecordingBackend._ref(v)
        shape = x.addr[r, c].shape
        x.addr[r, c] = v.addr.reshape(shape)
        x.lit[r, c] = v.lit.reshape(shape)
        x.sign[r, c] = v.sign.reshape(shape)
        return x

    # rank 3: a 3-D Ref
    @staticmethod
    def tensor3(n1: int, n2: int, n3: int) -> Ref:
        return Ref(np.full((n1, n2, n3), -1))

    def assign3(self, T: Ref, i, j, k, v) -> Ref:
        """T[i, j, k] = v in place (ints or slices; v over the sliced axes, in order)."""
        self._recorder.changed(T)
        v = RecordingBackend._ref(v)
        if v.addr.size == 1:       # one entry (1-dof joints' blocks): scalar stores
            at = (_index(i), _index(j), _index(k))
            if None not in at:
                T.addr[at], T.lit[at], T.sign[at] = v.addr.flat[0], v.lit.flat[0], v.sign.flat[0]
                return T
        shape = T.addr[i, j, k].shape
        T.addr[i, j, k] = v.addr.reshape(shape)
        T.lit[i, j, k] = v.lit.reshape(shape)
        T.sign[i, j, k] = v.sign.reshape(shape)
        return T

    def set3(self, T: Ref, i: int, j: int, k: int, v) -> Ref:
        return self.assign3(T, i, j, k, v)

    @staticmethod
    def page(T: Ref, k: int) -> Ref:
        return Ref(T.addr[:, :, k], T.lit[:, :, k], T.sign[:, :, k])

    @staticmethod
    def pages(T: Ref) -> list:
        return [RecordingBackend.page(T, k) for k in range(T.addr.shape[2])]

    @staticmethod
    def _ref(x) -> Ref:
        if isinstance(x, Ref):
            return x
        if isinstance(x, (int, float, np.floating, np.integer)):
            return Ref.literal([[float(x)]])
        raise TypeError(f"cannot record a {type(x).__name__} (a recorded algorithm passes "
                        "recorded values and numbers)")


def _index(x) -> int | None:
    """The one index an int or a slice of length one selects (None: another slice)."""
    if isinstance(x, slice):
        if x.step is None and x.start is not None and x.stop == x.start + 1 and x.start >= 0:
            return x.start
        return None
    return int(x) if isinstance(x, (int, np.integer)) else None


@dataclass
class Kernel:
    """One traced step signature: a CasADi Function from the argument groups to the distinct
    dynamic output entries, and how to rebuild the step's outputs from them."""

    function: Any                # casadi.Function
    step: str                    # the step's name (for statistics)
    n_in: int
    out_sizes: tuple[int, ...]   # one output block per result array with dynamic entries
    out_tree: Any                # output structure with leaf patterns
    calls: int = 0
    # ("matmul", a, x, m, k, n): the step is the product of argument group a (m x k) and group
    # x (k x n), both dense row-major blocks, into one dense row-major result block; the C loop
    # runs it as a native loop instead of the traced kernel (see MATMUL in csource.py)
    native: tuple | None = None


@dataclass
class Program:
    """A recorded algorithm: kernels, instructions, the constant table and the outputs."""

    kernels: list[Kernel]
    # (kernel, args, outs); a gather (kernel < 0; csource.GATHER) copies the entries ``args`` times
    # ``gathers[-1 - kernel]`` (their signs) into the block ``outs[0]``
    instructions: list[tuple[int, tuple[int, ...], tuple[int, ...]]]
    constants: np.ndarray
    workspace: int
    inputs: list[tuple[int, int]]        # (address, length) of each input in the workspace
    outputs: list[tuple[Any, Any, Any, tuple[int, ...]]]  # per result: the entries copied at
    # the end (entry, address, sign) and its shape; the other entries are written by kernels
    used: set[int] = field(default_factory=set)   # kernels the instructions call
    stats: dict = field(default_factory=dict)
    gathers: list[np.ndarray] = field(default_factory=list)   # signs (int8) of each gather


# --- pytrees of step arguments and results ---------------------------------------------------

def _flatten(x, leaves: list) -> Any:
    """The structure of ``x`` with arrays replaced by their leaf index; statics stay."""
    if isinstance(x, (Ref, ca.SX, ca.DM, np.ndarray)):
        leaves.append(x)
        return ("#", len(leaves) - 1)
    if isinstance(x, Transform):
        return ("X", _flatten(x.E, leaves), _flatten(x.r, leaves))
    if isinstance(x, tuple) and type(x) is not tuple and hasattr(x, "_fields"):
        return ("N", type(x), tuple(_flatten(e, leaves) for e in x))
    if isinstance(x, (tuple, list)):
        return ("T" if isinstance(x, tuple) else "L", tuple(_flatten(e, leaves) for e in x))
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("S", x)
    if isinstance(x, _TabledAxis):   # a joint whose general axis is read from the table
        return ("A", type(x.joint).__name__, getattr(x.joint, "pitch", None), id(x.joint),
                _flatten(x.axis, leaves))
    joint_key = getattr(x, "type", None)
    if joint_key is not None and hasattr(x, "calc"):     # a joint: its kind is static
        return ("J", repr(x), id(x))
    raise TypeError(f"a step argument of type {type(x).__name__} cannot be recorded")


def _unflatten(tree, leaves: list, joints: dict | None = None):
    tag = tree[0]
    if tag == "#":
        return leaves[tree[1]]
    if tag == "X":
        return Transform(_unflatten(tree[1], leaves, joints), _unflatten(tree[2], leaves, joints))
    if tag == "N":
        return tree[1](*(_unflatten(e, leaves, joints) for e in tree[2]))
    if tag in ("T", "L"):
        out = [_unflatten(e, leaves, joints) for e in tree[1]]
        return tuple(out) if tag == "T" else out
    if tag == "S":
        return tree[1]
    if tag == "J":
        return joints[tree[2]] if joints is not None else None
    if tag == "A":   # the same joint with its axis as (symbolic) entries
        joint = copy.copy(joints[tree[3]]) if joints is not None else None
        axis = _unflatten(tree[4], leaves, joints)
        if joint is not None:
            joint.axis_spec = joint.axis = tuple(axis[k] for k in range(3))
        return joint
    raise AssertionError(tag)


def _static_key(tree):
    """The structure without object identities (joints compare by their kind)."""
    tag = tree[0]
    if tag == "J":
        return ("J", tree[1])
    if tag == "A":
        return ("A", tree[1], tree[2], _static_key(tree[4]))
    if tag in ("X",):
        return (tag, _static_key(tree[1]), _static_key(tree[2]))
    if tag == "N":
        return (tag, tree[1].__name__, tuple(_static_key(e) for e in tree[2]))
    if tag in ("T", "L"):
        return (tag, tuple(_static_key(e) for e in tree[1]))
    return tree


class _TabledAxis:
    """A joint with a general axis (not x, y or z): the axis comes from the constant table, so
    that joints of one kind share kernels whatever their axes."""

    __slots__ = ("joint", "axis")

    def __init__(self, joint, axis: Ref):
        self.joint, self.axis = joint, axis


def _collect_joints(x, out: dict) -> None:
    if isinstance(x, _TabledAxis):
        out[id(x.joint)] = x.joint
    elif isinstance(x, (tuple, list)):
        for e in x:
            _collect_joints(e, out)
    elif getattr(x, "type", None) is not None and hasattr(x, "calc"):
        out[id(x)] = x


# --- the recorder ----------------------------------------------------------------------------

class OverBudget(Exception):
    """Raised by :func:`record` when the kernels traced so far exceed ``max_instructions``."""


class Recorder:
    """Records one algorithm into a :class:`Program` (see the module docstring)."""

    def __init__(self, name: str, cse: bool = True, fuse: int | None = None,
                 fuse_exact: bool = False, fold: bool = False,
                 max_instructions: int | None = None, gather: bool = True):
        self.name = name
        self.gather = gather
        self.gathers: list[np.ndarray] = []           # signs of each gather instruction
        self._gathered: dict[tuple, Ref] = {}         # a Ref's entries -> its gathered copy
        self._literal_at: dict[float, int] = {}       # literal value -> its table address
        self.cse = cse
        self.fuse = FUSE if fuse is None else fuse
        self.fuse_exact = fuse_exact
        self.fold = fold
        self.backend: Backend = RecordingBackend(self)
        self.kernels: list[Kernel] = []
        self._by_key: dict[Any, int] = {}
        self.instructions: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        self._w_owner: list[int] = []      # workspace address -> start of its block
        self._w_size: dict[int, int] = {}  # block start -> size
        self._c_owner: list[int] = []
        # the same two maps as arrays (grown by doubling), for the lookups of each step call
        self._w_owner_a = np.zeros(1024, dtype=np.int64)
        self._c_owner_a = np.zeros(1024, dtype=np.int64)
        self._c_values: list[float] = []
        self._casadi: Any = None
        self._consts: dict[int, Any] = {}
        self._axes: dict[int, Ref] = {}
        self._fused_by_key: dict[Any, int] = {}
        self._patterns: dict[int, tuple[Ref, tuple[tuple, int]]] = {}   # see _pattern
        self.t_trace = 0.0
        self.max_instructions = max_instructions
        self.n_traced = 0                  # SX instructions of the traced kernels with results

    # memory
    @staticmethod
    def _grown(a: np.ndarray, n: int) -> np.ndarray:
        if n <= a.size:
            return a
        b = np.zeros(max(n, 2 * a.size), dtype=a.dtype)
        b[:a.size] = a
        return b

    def _alloc(self, n: int) -> int:
        start = len(self._w_owner)
        self._w_owner.extend([start] * n)
        self._w_owner_a = self._grown(self._w_owner_a, start + n)
        self._w_owner_a[start:start + n] = start
        self._w_size[start] = n
        return start

    def _alloc_const(self, values) -> int:
        start = len(self._c_owner)
        values = [float(v) for v in values]
        self._c_owner.extend([start] * len(values))
        self._c_owner_a = self._grown(self._c_owner_a, start + len(values))
        self._c_owner_a[start:start + len(values)] = CONST_BIT + start
        self._c_values.extend(values)
        return CONST_BIT + start

    def _owners(self, addr: np.ndarray) -> np.ndarray:
        """:meth:`_owner` of each (non-negative) address of ``addr``."""
        work = addr < CONST_BIT
        own = np.empty_like(addr)
        own[work] = self._w_owner_a[addr[work]]
        own[~work] = self._c_owner_a[addr[~work] - CONST_BIT]
        return own

    def _folded(self, ref: Ref) -> Ref:
        """``ref`` with its table entries that are exactly 0, 1 or -1 as literals (``fold``)."""
        table = ref.addr >= CONST_BIT
        if not self.fold or not table.any():
            return ref
        addr, lit, sign = ref.addr.copy(), ref.lit.copy(), ref.sign.copy()
        for idx in zip(*np.nonzero(table)):
            v = self._c_values[int(addr[idx]) - CONST_BIT] * int(sign[idx])
            if v in (0.0, 1.0, -1.0):
                addr[idx], lit[idx], sign[idx] = -1, v + 0.0, 1
        return Ref(addr, lit, sign)

    def _owner(self, addr: int) -> int:
        if addr >= CONST_BIT:
            return CONST_BIT + self._c_owner[addr - CONST_BIT]
        return self._w_owner[addr]

    def input(self, n: int) -> tuple[Ref, int]:
        start = self._alloc(n)
        return Ref(np.arange(start, start + n).reshape(n, 1)), start

    # model constants: one table block per body
    def model_constants(self, model):
        from ...model import ModelConstants

        if id(model) in self._consts:
            return self._consts[id(model)]
        num = model.constants(_numpy_backend())
        Xtree: list[Transform] = []
        I: list[Ref] = []
        params: list[tuple[Ref, Ref, Ref]] = []
        arm: list[Ref | None] = []
        for i in range(model.N):
            X, Ii = num.Xtree[i], np.asarray(num.I[i], dtype=float)
            m, c, Ic = num.inertia_params[i]
            E, r = np.asarray(X.E, dtype=float), np.asarray(X.r, dtype=float).reshape(3)
            pi = _inertia_table(Ii)
            ic = np.asarray(Ic, dtype=float)
            sym6 = [ic[0, 0], ic[0, 1], ic[0, 2], ic[1, 1], ic[1, 2], ic[2, 2]]
            a = num.armature[i]
            diag = [] if a is None else list(np.diag(np.asarray(a, dtype=float)))
            base = self._alloc_const([*E.reshape(-1), *r, *pi, float(m),
                                      *np.asarray(c, dtype=float).reshape(3), *sym6, *diag])
            f = self._folded
            Xtree.append(Transform(f(Ref((base + np.arange(9)).reshape(3, 3))),
                                   f(Ref((base + 9 + np.arange(3)).reshape(3, 1)))))
            I.append(f(_inertia_ref(base + 12, Ii)))
            o = base + 22
            sym = np.array([[0, 1, 2], [1, 3, 4], [2, 4, 5]])
            params.append((f(Ref([[o]])), f(Ref((o + 1 + np.arange(3)).reshape(3, 1))),
                           f(Ref(o + 4 + sym))))
            if a is None:
                arm.append(None)
            else:
                k = len(diag)
                addr = np.full((k, k), -1)
                addr[np.arange(k), np.arange(k)] = o + 10 + np.arange(k)
                arm.append(f(Ref(addr)))
        a_grav = Ref.literal(np.asarray(num.a_grav, dtype=float).reshape(6, 1))
        self._consts[id(model)] = ModelConstants(tuple(Xtree), tuple(I), a_grav, tuple(params),
                                                 tuple(arm))
        return self._consts[id(model)]

    # steps
    def _table_axes(self, args: tuple) -> tuple:
        out = []
        for x in args:
            spec = getattr(x, "axis_spec", None)
            if isinstance(spec, tuple) and hasattr(x, "calc"):
                ref = self._axes.get(id(x))
                if ref is None:
                    a = self._alloc_const(x.axis)
                    ref = self._axes[id(x)] = Ref((a + np.arange(3)).reshape(3, 1))
                x = _TabledAxis(x, ref)
            out.append(x)
        return tuple(out)

    def _dense(self, ref: Ref) -> Ref:
        """``ref`` as one block in row-major order: itself where it is one already, else a
        gathered copy (one per distinct ``ref``; see the module's note on gathers)."""
        addr = ref.addr.reshape(-1)
        n = addr.size
        if n and addr[0] >= 0 and addr[0] < CONST_BIT and (ref.sign > 0).all() and \
                (addr == addr[0] + np.arange(n)).all() and \
                self._w_owner[int(addr[-1])] == self._w_owner[int(addr[0])]:
            return ref
        key = (ref.shape, addr.tobytes(), ref.sign.tobytes(), ref.lit.tobytes())
        hit = self._gathered.get(key)
        if hit is not None:
            return hit
        src = addr.tolist()
        signs = ref.sign.reshape(-1).astype(np.int8)
        for e in np.flatnonzero(addr < 0).tolist():
            v = float(ref.lit.reshape(-1)[e])
            if v not in self._literal_at:
                self._literal_at[v] = self._alloc_const([v])
            src[e], signs[e] = self._literal_at[v], 1
        start = self._alloc(n)
        self.instructions.append((-1 - len(self.gathers), tuple(src), (start,)))
        self.gathers.append(signs)
        out = self._gathered[key] = Ref((start + np.arange(n)).reshape(ref.shape))
        return out

    def call(self, fn: Callable, args: tuple):
        args = self._table_axes(args)
        leaves: list = []
        tree = _flatten(args, leaves)
        for leaf in leaves:
            if not isinstance(leaf, Ref):
                raise TypeError(f"step {fn.__name__} got a {type(leaf).__name__}; a recorded "
                                "algorithm passes only recorded values between steps")
        if self.gather and getattr(fn, "dense_arguments", False):
            leaves = [self._dense(leaf) for leaf in leaves]
        # argument groups: the memory blocks the dynamic entries come from, in address order
        # (workspace blocks, then table blocks), each spanning the entries the call reads
        if len(leaves) == 1:
            flat, sign, lit = (x.reshape(-1) for x in (leaves[0].addr, leaves[0].sign,
                                                       leaves[0].lit))
        elif leaves:
            flat = np.concatenate([leaf.addr.reshape(-1) for leaf in leaves])
            sign = np.concatenate([leaf.sign.reshape(-1) for leaf in leaves])
            lit = np.concatenate([leaf.lit.reshape(-1) for leaf in leaves])
        else:
            flat, sign, lit = np.zeros(0, dtype=np.int64), np.zeros(0, np.int8), np.zeros(0)
        dyn_mask = flat >= 0
        dyn = flat[dyn_mask]
        srt = np.sort(dyn)                  # blocks are address ranges: sorted, they are runs
        nw = int(np.searchsorted(srt, CONST_BIT))   # workspace addresses, then the table's
        own = np.concatenate((self._w_owner_a[srt[:nw]],
                              self._c_owner_a[srt[nw:] - CONST_BIT]))
        starts = np.flatnonzero(np.concatenate(([True], own[1:] != own[:-1]))) if srt.size \
            else np.zeros(0, dtype=np.int64)
        lo = srt[starts]
        hi = srt[np.concatenate((starts[1:], [srt.size])) - 1] if srt.size else lo
        inv = np.searchsorted(lo, dyn, side="right") - 1
        rel = dyn - lo[inv]
        sizes = tuple((hi - lo + 1).tolist())
        key = (fn, _static_key(tree), tuple([leaf.addr.shape for leaf in leaves]),
               dyn_mask.tobytes(), inv.tobytes(), rel.tobytes(), sign[dyn_mask].tobytes(),
               lit[~dyn_mask].tobytes(), sizes)
        k = self._by_key.get(key)
        if k is None:
            g_all = np.full(flat.shape, -1, dtype=np.int64)
            rel_all = np.full(flat.shape, -1, dtype=np.int64)
            g_all[dyn_mask] = inv
            rel_all[dyn_mask] = rel
            patterns = []
            at = 0
            for leaf in leaves:
                cut = slice(at, at + leaf.addr.size)
                at += leaf.addr.size
                dyn_leaf = dyn_mask[cut].reshape(leaf.shape)
                patterns.append((leaf.shape, g_all[cut].tobytes(), rel_all[cut].tobytes(),
                                 np.where(dyn_leaf, leaf.sign, 1).tobytes(),
                                 np.where(dyn_leaf, 0.0, leaf.lit).tobytes()))
            joints: dict = {}
            _collect_joints(args, joints)
            k = self._trace(fn, tree, leaves, patterns, sizes, joints)
            self._by_key[key] = k
        kern = self.kernels[k]
        kern.calls += 1
        outs = tuple(self._alloc(n) for n in kern.out_sizes)
        lo_list = lo.tolist()
        if outs:
            self.instructions.append((k, tuple(lo_list), outs))
        self._last = (fn, args, leaves, k, lo_list, inv, dyn_mask)
        return _rebuild(kern.out_tree, outs, leaves)

    def call_loop(self, fn: Callable, calls: Sequence[tuple]) -> list:
        """:meth:`call` of each argument tuple of ``calls``: calls independent of each other
        that differ from the first only in which memory blocks some arguments are (an ancestor
        loop: the same pattern at other addresses) are recorded from the first's kernel and
        argument groups, without tracing or matching them again; any other is a full call."""
        out: list = []
        ref = None
        for args in calls:
            r = self._like(fn, args, ref) if ref is not None else None
            if r is None:
                r = self.call(fn, args)
                ref = self._loop_reference()
            out.append(r)
        return out

    def changed(self, ref: Ref) -> None:
        """``ref`` is being changed in place: forget what was known of it (:meth:`_pattern`)."""
        self._patterns.pop(id(ref), None)

    def _loop_reference(self):
        """What :meth:`_like` compares a call with: the last full call, with per argument leaf
        the one argument group holding all its entries (None: spread over several, shared with
        another leaf, or none)."""
        fn, args, leaves, k, lo, inv, dyn_mask = self._last
        if (self.gather and getattr(fn, "dense_arguments", False)) or \
                any(not isinstance(a, (Ref, int, float, bool, type(None))) for a in args):
            return None
        groups: list = []
        at = 0
        inv_at = 0
        for leaf in leaves:
            n = leaf.addr.size
            dm = dyn_mask[at:at + n]
            m = int(dm.sum())
            g = inv[inv_at:inv_at + m]
            groups.append(int(g[0]) if m and (g == g[0]).all() else None)
            at += n
            inv_at += m
        for p, g in enumerate(groups):
            if g is not None and groups.count(g) > 1:
                groups[p] = None
        return (fn, args, [self._pattern(leaf) for leaf in leaves], k, lo, groups)

    def _pattern(self, ref: Ref) -> tuple[tuple, int]:
        """``(pattern, base)`` of a Ref: its entries as offsets from its least dynamic address
        ``base``, signs and literals (equal patterns: the same value at another address).
        Memoized per Ref object (the loop's varying arguments recur, e.g. a body's motion
        subspace in every loop over its descendants)."""
        memo = self._patterns
        hit = memo.pop(id(ref), None)
        if hit is not None and hit[0] is ref:
            memo[id(ref)] = hit          # most recent last
            return hit[1]
        dyn = ref.addr >= 0
        base = int(ref.addr[dyn].min()) if dyn.any() else -1
        key = (ref.addr.shape, np.where(dyn, ref.addr - base, -1).tobytes(), ref.sign.tobytes(),
               np.where(dyn, 0.0, ref.lit).tobytes())
        memo[id(ref)] = (ref, (key, base))   # (holding ref: its id is not reused meanwhile)
        if len(memo) > PATTERNS_KEPT:
            del memo[next(iter(memo))]
        return key, base

    def _like(self, fn, args: tuple, ref) -> Any:
        """The call ``fn(*args)`` recorded like the reference call ``ref``
        (:meth:`_loop_reference`) where it differs from it only in whole argument groups at
        other addresses: each moved group within one workspace block, the groups in the same
        address order, each in a block of its own; else None."""
        rfn, rargs, rpatterns, k, lo, groups = ref
        if fn is not rfn or len(args) != len(rargs):
            return None
        new_lo = list(lo)
        leaves: list = []
        p = 0
        for a, ra in zip(args, rargs):
            if not isinstance(ra, Ref):
                if isinstance(a, Ref) or a != ra or type(a) is not type(ra):
                    return None
                continue
            if not isinstance(a, Ref):
                return None
            leaves.append(a)
            pa, pr = self._pattern(a), rpatterns[p]
            if pa[0] != pr[0]:
                return None
            if pa[1] != pr[1]:
                g = groups[p]
                if g is None:
                    return None
                start = lo[g] + pa[1] - pr[1]
                end = start + self.kernels[k].function.size1_in(g) - 1
                # the group's entries at their new place: in one workspace block (table blocks
                # and entries across blocks: a full call, which makes its own groups)
                if lo[g] >= CONST_BIT or start < 0 or end >= len(self._w_owner) or \
                        self._w_owner[start] != self._w_owner[end]:
                    return None
                new_lo[g] = start
            p += 1
        if any(new_lo[i] >= new_lo[i + 1] for i in range(len(new_lo) - 1)) or \
                len({self._owner(a) for a in new_lo}) != len(new_lo):
            return None
        kern = self.kernels[k]
        kern.calls += 1
        outs = tuple(self._alloc(n) for n in kern.out_sizes)
        if outs:
            self.instructions.append((k, tuple(new_lo), outs))
        return _rebuild(kern.out_tree, outs, leaves)

    def _trace(self, fn, tree, leaves, patterns, sizes, joints) -> int:
        t0 = time.perf_counter()
        B = self._casadi_backend()
        syms = [ca.SX.sym(f"a{g}", n) for g, n in enumerate(sizes)]
        traced = []
        for leaf, (shape, g, rel, sign, lit) in zip(leaves, patterns):
            g = np.frombuffer(g, dtype=np.int64).reshape(shape)
            rel = np.frombuffer(rel, dtype=np.int64).reshape(shape)
            sg = np.frombuffer(sign, dtype=np.int8).reshape(shape)
            lv = np.frombuffer(lit, dtype=float).reshape(shape)
            rows = []
            for r in range(shape[0]):
                rows.append([syms[g[r, c]][int(rel[r, c])] * int(sg[r, c]) if g[r, c] >= 0
                             else ca.SX(float(lv[r, c])) for c in range(shape[1])])
            traced.append(ca.sparsify(ca.vertcat(*[ca.horzcat(*row) for row in rows])))
        args = _unflatten(tree, traced, joints)
        result = fn(B, *args)
        out_leaves: list = []
        out_tree = _flatten(result, out_leaves)
        outs: list = []
        leaf_patterns: list[tuple] = []
        for leaf in out_leaves:
            leaf = ca.SX(ca.DM(np.atleast_2d(leaf))) if isinstance(leaf, np.ndarray) else \
                ca.SX(leaf)
            same = [j for j, t in enumerate(traced) if t.shape == leaf.shape and
                    not t.is_constant() and ca.is_equal(t, leaf, 1)]
            if same:                # an argument passed through: the result is its memory
                leaf_patterns.append(("I", same[0]))
                continue
            shape = leaf.shape
            addr = np.full(shape, -1, dtype=np.int64)
            sign = np.ones(shape, dtype=np.int8)
            lit = np.zeros(shape)
            uniq: list = []
            where: dict[int, int] = {}
            for r in range(shape[0]):
                for c in range(shape[1]):
                    e = leaf[r, c]
                    if e.is_constant():
                        lit[r, c] = float(ca.DM(e))
                        continue
                    s = 1
                    if e.is_op(ca.OP_NEG):
                        e, s = e.dep(0), -1
                    h = e.element_hash()
                    if h not in where:
                        where[h] = len(uniq)
                        uniq.append(e)
                    addr[r, c], sign[r, c] = where[h], s
            block = -1
            if uniq:
                block = len(outs)
                outs.append(ca.vertcat(*uniq))
            leaf_patterns.append(("P", block, addr, sign, lit))
        name = f"{self.name}_k{len(self.kernels)}"
        f = ca.Function(name, syms, outs, {"cse": bool(self.cse)})
        kern = Kernel(f, fn.__name__, len(syms), tuple(o.numel() for o in outs),
                      _with_patterns(out_tree, leaf_patterns))
        if self.gather and getattr(fn, "matmul", False):
            kern.native = _matmul_layout(leaves, patterns, sizes, kern)
        self.kernels.append(kern)
        self.t_trace += time.perf_counter() - t0
        if outs and kern.native is None:   # kernels without results get no instruction
            self.n_traced += f.n_instructions()
            if self.max_instructions is not None and self.n_traced > self.max_instructions:
                raise OverBudget(f"{self.name}: traced kernels exceed {self.max_instructions} "
                                 "SX instructions")
        return len(self.kernels) - 1

    def _casadi_backend(self):
        if self._casadi is None:
            from ...backends import get_backend

            self._casadi = get_backend("casadi")
        return self._casadi

    def _reuse_workspace(self, inputs, outputs, placed) -> tuple[Callable[[int], int], int]:
        """Give blocks whose values are dead back to later calls (linear scan over the program):
        the workspace holds what is live, not every value ever computed. Returns the address
        map and the workspace size."""
        end = len(self.instructions)
        last: dict[int, int] = {}
        for t, (_, args, outs) in enumerate(self.instructions):
            for b in outs:
                last.setdefault(b, t)
            for a in args:
                if a < CONST_BIT:
                    last[self._w_owner[a]] = t
        for ref in outputs:
            for a in ref.addr[(ref.addr >= 0) & (ref.addr < CONST_BIT)].tolist():
                last[self._w_owner[a]] = end
        free: dict[int, list[int]] = {}
        expire: dict[int, list[int]] = {}
        new: dict[int, int] = {}
        top = 0

        def place(b: int) -> None:
            nonlocal top
            if b in placed:
                return
            n = self._w_size[b]
            pool = free.get(n)
            if pool:
                new[b] = pool.pop()
            else:
                new[b], top = top, top + n
            expire.setdefault(last.get(b, -1), []).append(b)

        for start, _ in inputs:
            place(start)
        for b in expire.pop(-1, []):
            free.setdefault(self._w_size[b], []).append(new[b])
        for t, (_, _, outs) in enumerate(self.instructions):
            for b in outs:
                place(b)
            for b in expire.pop(t, []):
                free.setdefault(self._w_size[b], []).append(new[b])

        def remap(a: int) -> int:
            if a >= CONST_BIT:
                return encode(CONSTANTS, a - CONST_BIT)
            b = self._w_owner[a]
            if b in placed:
                o, e = placed[b]
                return encode(RESULT0 + o, e + (a - b))
            return encode(WORK, new[b] + (a - b))

        return remap, top

    def _fuse_runs(self, width: int) -> None:
        """Consecutive calls of one kernel that do not read each other's results (an ancestor
        loop in root coordinates, the bodies of a level) become one call of a kernel that does
        ``width`` of them: one dispatch instead of several, shared arguments read once, and
        independent work the compiler can interleave."""
        if width < 2:
            return
        runs: list[list] = []
        run: list = []
        written: set[int] = set()
        for ins in self.instructions:
            k, args, outs = ins
            reads = {self._w_owner[a] for a in args if a < CONST_BIT}
            if run and (k != run[0][0] or len(run) == width or reads & written):
                runs.append(run)
                run, written = [], set()
            run.append(ins)
            written.update(outs)
        if run:
            runs.append(run)
        full: dict[int, int] = {}
        for r in runs:
            if len(r) == width:
                full[r[0][0]] = full.get(r[0][0], 0) + 1
        fused: list = []
        for r in runs:
            # (a gather's run is one call; a native kernel is a loop: nothing to fuse)
            if len(r) == 1 or self.kernels[r[0][0]].native is not None or \
                    (self.fuse_exact and (len(r) < width or full[r[0][0]] < FUSE_EXACT_MIN_RUNS)):
                fused.extend(r)         # fuse_exact: only frequent runs of ``width``
            else:
                fused.append(self._fused_call(r))
        self.instructions = fused

    def _fused_call(self, run: list):
        k = run[0][0]
        f = self.kernels[k].function
        uniq: dict[tuple[int, int], int] = {}
        maps = []
        for _, args, _ in run:
            maps.append(tuple(uniq.setdefault((a, f.size1_in(j)), len(uniq))
                              for j, a in enumerate(args)))
        key = (k, tuple(maps))
        kf = self._fused_by_key.get(key)
        if kf is None:
            sizes = [n for (_, n) in uniq]
            syms = [ca.SX.sym(f"a{u}", n) for u, n in enumerate(sizes)]
            outs = [o for m in maps for o in f.call([syms[u] for u in m])]
            g = ca.Function(f"{self.name}_k{len(self.kernels)}", syms, outs,
                            {"cse": bool(self.cse)})
            kern = self.kernels[k]
            self.kernels.append(Kernel(g, f"{kern.step}x{len(run)}", len(syms),
                                       kern.out_sizes * len(run), None))
            kf = self._fused_by_key[key] = len(self.kernels) - 1
        self.kernels[kf].calls += 1
        return (kf, tuple(a for (a, _) in uniq), tuple(b for _, _, outs in run for b in outs))

    def _place_outputs(self, inputs, outputs) -> dict[int, tuple[int, int]]:
        """Blocks of one value that no step reads and that are an entry of a result are written
        by their kernel straight into the result (``{block: (output, entry)}``): no copy at the
        end and no workspace for them."""
        read = {self._w_owner[a] for _, args, _ in self.instructions for a in args
                if a < CONST_BIT}
        read |= {start for start, _ in inputs}
        placed: dict[int, tuple[int, int]] = {}
        for o, ref in enumerate(outputs):
            flat, sign = ref.addr.reshape(-1), ref.sign.reshape(-1)
            for e in np.flatnonzero((flat >= 0) & (flat < CONST_BIT) & (sign > 0)).tolist():
                b = self._w_owner[int(flat[e])]
                if b not in placed and b not in read and self._w_size[b] == 1:
                    placed[b] = (o, e)
        return placed

    def program(self, inputs: Sequence[tuple[int, int]], outputs: Sequence[Ref]) -> Program:
        if max((ref.addr.size for ref in outputs), default=0) > OFFSET_MASK or \
                len(self._c_values) > OFFSET_MASK or len(self._w_owner) > OFFSET_MASK:
            raise ValueError("result or constant table too large for the recursive form "
                             f"({OFFSET_MASK} entries at most)")
        self._fuse_runs(self.fuse)
        used = {k for k, _, _ in self.instructions if k >= 0}
        placed = self._place_outputs(inputs, outputs)
        remap, size = self._reuse_workspace(inputs, outputs, placed)
        direct = {(o, e) for o, e in placed.values()}
        outs: list[tuple[Any, Any, Any, tuple[int, ...]]] = []
        lit_index: dict[float, int] = {}
        for o, ref in enumerate(outputs):
            entries, codes, signs = [], [], []
            flat_sign = ref.sign.reshape(-1)
            for e, (a, v) in enumerate(zip(ref.addr.reshape(-1).tolist(),
                                          ref.lit.reshape(-1).tolist())):
                if (o, e) in direct:
                    continue
                literal = a < 0
                if literal:
                    if v not in lit_index:
                        lit_index[v] = self._alloc_const([v]) - CONST_BIT
                    a = CONST_BIT + lit_index[v]
                entries.append(e)
                codes.append(remap(a))
                signs.append(1 if literal else int(flat_sign[e]))
            outs.append((np.array(entries, dtype=np.int64), np.array(codes, dtype=np.int64),
                         np.array(signs, dtype=np.int8), ref.shape))
        instructions = [(k, tuple(remap(a) for a in args), tuple(remap(b) for b in bs))
                        for k, args, bs in self.instructions]
        prog = Program(self.kernels, instructions, np.array(self._c_values, dtype=float),
                       size, [(remap(a), n) for a, n in inputs], outs, used=used,
                       gathers=self.gathers)
        prog.stats["n_direct"] = len(placed)
        return prog


def _matmul_layout(leaves, patterns, sizes, kern: Kernel) -> tuple | None:
    """``("matmul", a, x, m, k, n)`` (:attr:`Kernel.native`) where a step marked ``matmul``
    (``A @ X``) reads A and X each as one whole argument group in row-major order and writes
    its m x n result as one block in row-major order (gathered arguments of distinct blocks);
    else None (the traced kernel runs)."""
    if len(leaves) != 2:
        return None
    groups = []
    for leaf, (shape, g, rel, sign, lit) in zip(leaves, patterns):
        g = np.frombuffer(g, dtype=np.int64)
        n = int(np.prod(shape))
        if g.size == 0 or (g != g[0]).any() or sizes[int(g[0])] != n or \
                (np.frombuffer(rel, dtype=np.int64) != np.arange(n)).any() or \
                (np.frombuffer(sign, dtype=np.int8) != 1).any():
            return None
        groups.append(int(g[0]))
    (m, k), (k2, n) = leaves[0].shape, leaves[1].shape
    tree = kern.out_tree
    if groups[0] == groups[1] or k != k2 or tree[0] != "P" or kern.out_sizes != (m * n,):
        return None
    _, block, addr, sign, _ = tree
    if block != 0 or addr.shape != (m, n) or (addr.reshape(-1) != np.arange(m * n)).any() or \
            (sign != 1).any():
        return None
    return ("matmul", groups[0], groups[1], m, k, n)


def _with_patterns(tree, patterns):
    tag = tree[0]
    if tag == "#":
        return patterns[tree[1]]
    if tag == "X":
        return ("X", _with_patterns(tree[1], patterns), _with_patterns(tree[2], patterns))
    if tag == "N":
        return ("N", tree[1], tuple(_with_patterns(e, patterns) for e in tree[2]))
    if tag in ("T", "L"):
        return (tag, tuple(_with_patterns(e, patterns) for e in tree[1]))
    return tree


def _rebuild(tree, out: tuple[int, ...], args: list):
    """The step's results as Refs: computed entries in the call's result blocks ``out``, an
    argument passed through as the caller's own Ref (``args``: the call's array arguments)."""
    tag = tree[0]
    if tag == "P":
        _, block, addr, sign, lit = tree
        return Ref._of(np.where(addr >= 0, addr + (out[block] if block >= 0 else 0), -1), lit,
                       sign)
    if tag == "I":
        return args[tree[1]]
    if tag == "X":
        return Transform(_rebuild(tree[1], out, args), _rebuild(tree[2], out, args))
    if tag == "N":
        return tree[1](*(_rebuild(e, out, args) for e in tree[2]))
    if tag in ("T", "L"):
        vals = [_rebuild(e, out, args) for e in tree[1]]
        return tuple(vals) if tag == "T" else vals
    if tag == "S":
        return tree[1]
    raise AssertionError(tag)


def _numpy_backend():
    from ...backends import get_backend

    return get_backend("numpy")


# Rigid-body inertia from its 10 parameters [Ixx, Ixy, Ixz, Iyy, Iyz, Izz, hx, hy, hz, m]
# (Ibar about the frame origin, h = m c): I = [[Ibar, S(h)], [S(h)^T, m 1]]; entries as
# (parameter index, sign), None for a structural zero.
_INERTIA = [[(0, 1), (1, 1), (2, 1), None, (8, -1), (7, 1)],
            [(1, 1), (3, 1), (4, 1), (8, 1), None, (6, -1)],
            [(2, 1), (4, 1), (5, 1), (7, -1), (6, 1), None],
            [None, (8, 1), (7, -1), (9, 1), None, None],
            [(8, -1), None, (6, 1), None, (9, 1), None],
            [(7, 1), (6, -1), None, None, None, (9, 1)]]


def _inertia_table(I: np.ndarray) -> list[float]:
    """The 10 parameters of a 6x6 spatial inertia (checked to rebuild it exactly)."""
    p = [I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2], I[2, 4], I[0, 5], I[1, 3], I[3, 3]]
    rebuilt = np.array([[0.0 if e is None else e[1] * p[e[0]] for e in row] for row in _INERTIA])
    if not np.allclose(rebuilt, I, rtol=1e-12, atol=1e-14 * max(1.0, float(np.abs(I).max()))):
        raise ValueError("a body inertia is not of the rigid-body form [[Ibar, S(h)], "
                         "[S(h)^T, m 1]]; the recursive form cannot table it")
    return [float(x) for x in p]


def _inertia_ref(base: int, I: np.ndarray) -> Ref:
    addr = np.full((6, 6), -1, dtype=np.int64)
    sign = np.ones((6, 6), dtype=np.int8)
    for r, row in enumerate(_INERTIA):
        for c, e in enumerate(row):
            if e is not None:
                addr[r, c], sign[r, c] = base + e[0], e[1]
    return Ref(addr, None, sign)


def record(model, algorithm: Callable, input_sizes: Sequence[int], *, name: str,
           cse: bool = True, fuse: int | None = None, fuse_exact: bool = False,
           fold: bool = False, max_instructions: int | None = None, gather: bool = True,
           **options) -> Program:
    """Record ``algorithm(model, *inputs, backend=<recording>, **options)`` into a
    :class:`Program` whose inputs are vectors of ``input_sizes`` (``fuse``: see
    :meth:`Recorder._fuse_runs`; default :data:`FUSE`; 1 keeps every call; ``fuse_exact``:
    fuse only runs of exactly ``fuse`` calls of kernels with at least ``FUSE_EXACT_MIN_RUNS``
    of them, the rest stay single: one fused variant per frequent kernel instead of one per
    run length; ``fold``: the model's constants that are exactly 0, 1 or -1 (identity tree
    rotations, zero offsets, zero products of inertia) become literals of the kernels instead of
    table entries: kernels specialize on them, so fewer operations run and more kernels are
    traced; ``max_instructions``: raise :class:`OverBudget` as soon as the kernels traced so far
    hold more SX instructions than this, before the rest is recorded. With ``fuse=1`` every
    kernel with results is used, so that is exactly ``stats["n_instructions"] > max_instructions``
    without the cost of recording the whole algorithm); ``gather``: copy the arguments of dense
    steps into blocks of their own first (gather instructions; see the note above
    :data:`FUSE`)."""
    rec = Recorder(name, cse=cse, fuse=fuse, fuse_exact=fuse_exact, fold=fold,
                   max_instructions=max_instructions, gather=gather)
    refs, inputs = [], []
    for n in input_sizes:
        ref, start = rec.input(n)
        refs.append(ref)
        inputs.append((start, n))
    t0 = time.perf_counter()
    result = algorithm(model, *refs, backend=rec.backend, **options)
    t_record = time.perf_counter() - t0
    results = list(result) if isinstance(result, tuple) else [result]
    for r in results:
        if not isinstance(r, Ref):
            raise TypeError(f"{getattr(algorithm, '__name__', algorithm)} returned a "
                            f"{type(r).__name__}; the recursive form needs matrix results")
    prog = rec.program(inputs, results)
    prog.stats = {**prog.stats, "t_record": t_record - rec.t_trace, "t_trace": rec.t_trace,
                  "n_kernels": len(prog.used), "n_calls": len(prog.instructions),
                  "n_steps": sum(rec.kernels[k].calls for k in prog.used
                                 if rec.kernels[k].out_tree is not None),
                  "n_instructions": sum(rec.kernels[k].function.n_instructions()
                                        for k in prog.used if rec.kernels[k].native is None),
                  "n_native": sum(1 for k in prog.used if rec.kernels[k].native is not None),
                  "work": sum(rec.kernels[k].function.n_instructions() if k >= 0 else
                              len(args) for k, args, _ in prog.instructions),
                  "n_gathers": len(prog.gathers),
                  "workspace": prog.workspace, "n_constants": int(prog.constants.size),
                  "fold": bool(fold)}
    return prog


def evaluate(prog: Program, *inputs) -> list[np.ndarray]:
    """Run a :class:`Program` at numbers (CasADi calls per instruction): the reference semantics
    of the generated C loop, for tests."""
    results = _run(prog, [np.asarray(x, dtype=float).reshape(-1) for x in inputs], float,
                   np.array, lambda v: np.asarray(v, dtype=float).reshape(-1).tolist())
    return [np.array(res).reshape(shape) for res, (*_, shape) in zip(results, prog.outputs)]


def lower(prog: Program, inputs: Sequence[Any]) -> list[list[Any]]:
    """The unrolled graph of a :class:`Program`: its instructions run on CasADi SX columns
    ``inputs``, each kernel call inlined, so that the model's table constants fold into the
    kernels' expressions. Returns each result's entries in row-major order (C order for rank-3
    results) as SX scalars. This is the lowering behind :func:`symdyn.codegen.casadi_function`:
    unrolled C and the JAX graph route evaluate it."""
    return _run(prog, [ca.SX(x) for x in inputs], ca.SX, lambda xs: ca.vertcat(*xs),
                lambda v: [v[i] for i in range(v.numel())])


def _run(prog: Program, inputs: list, scalar: Callable, column: Callable,
         entries: Callable) -> list:
    """The program's instructions in order over memory held as Python lists of entries
    (``scalar(x)`` of a number, NaN where nothing was written): ``column(entries)`` makes a
    kernel argument, ``entries(value)`` splits a kernel result."""
    unset = scalar(np.nan)
    constants = [scalar(c) for c in prog.constants.tolist()]
    w: list = [unset] * prog.workspace
    results: list[list] = [[unset] * int(np.prod(shape)) for *_, shape in prog.outputs]
    bases = [w, constants, *results]
    for (start, n), x in zip(prog.inputs, inputs):
        start = decode(start)[1]
        w[start:start + n] = entries(x)[:n]
    for k, args, outs in prog.instructions:
        if k < 0:                                     # a gather: signed copies of entries
            base, off = decode(outs[0])
            dst = bases[base]
            for e, (a, sg) in enumerate(zip(args, prog.gathers[-1 - k].tolist())):
                b, o = decode(a)
                dst[off + e] = bases[b][o] if sg > 0 else -bases[b][o]
            continue
        f = prog.kernels[k].function
        vals = []
        for j, a in enumerate(args):
            base, off = decode(a)
            vals.append(column(bases[base][off:off + f.size1_in(j)]))
        for out, val in zip(outs, f.call(vals)):
            base, off = decode(out)
            e = entries(val)
            bases[base][off:off + len(e)] = e
    for res, (where, codes, signs, _) in zip(results, prog.outputs):
        for e, a, sg in zip(where.tolist(), codes.tolist(), signs.tolist()):
            base, off = decode(a)
            res[e] = sg * bases[base][off]
    return results
