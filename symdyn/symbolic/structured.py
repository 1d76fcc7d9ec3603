"""Structured closed forms: shared intermediate definitions in recursion order, then per-entry
expressions in terms of them.

The flattened closed forms of :mod:`symdyn.symbolic.core` write every entry as one expression of q
and simplify it to a trigonometric normal form; for real 6- and 7-DoF arms those expressions blow
up (robot:panda: Gamma did not finish in 13 minutes, M took 82 s and 270k operations). Here the
algorithm (the same generic code) is traced once with CasADi SX on
:func:`symdyn.codegen.functions.exact_rotations` of the model (numerically-zero rotation entries
made exact), CasADi folds constants, drops exact zeros and shares common subexpressions, and its
instruction list (straight-line code in the order of the algorithm's recursion) is converted into
SymPy assignments:

* ``s1 = sin(q1)``, ``c1 = cos(q1)``, ... name the sines and cosines of the joint angles;
* ``t1, t2, ...`` name every value used more than once (per-body rotation entries, velocities,
  composite inertias, force blocks, ...), each written in terms of earlier names; values used once
  are inlined into their single consumer, so the definitions stay short;
* ``entries`` hold the per-entry expressions in terms of these names.

Simplification is bounded and local: per definition, ``sin^2 + cos^2`` of one joint angle is
replaced by 1 where that is shorter, constants that are integers or halves print exactly, and
nothing is ever expanded globally, so the emitted operation count stays at the size of the CasADi
graph (the issue-14 target is <= 1.5x; the report measures it).

Use :func:`christoffel`, :func:`coriolis_matrix`, :func:`mass_matrix` (also reachable as
``symdyn.symbolic.christoffel(model, structured=True)`` etc.), :func:`regressor` (the joint-torque
regressor Y(q, qd, qdd), tau = Y pi) and ``parameters="inertial"`` (the 10 N inertial parameters
pi as symbols; entries are then explicit linear combinations ``sum_p Y_p pi_p`` of them). The
result exports with :meth:`StructuredResult.to_python`, :meth:`~StructuredResult.to_c`,
:meth:`~StructuredResult.to_latex` (``symdyn.symbolic.to_python(result)`` etc. dispatch here) and
evaluates with :meth:`~StructuredResult.evaluate` or :meth:`~StructuredResult.lambdify`.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ..progress import Progress, make_progress
from .export import flat_index
from .simplify import operation_count

#: algorithm name -> (codegen algorithm, output name, inputs of the closed form)
_KINDS = {
    "christoffel": ("christoffel", "Gamma", ("q",)),
    "mass_matrix": ("crba", "M", ("q",)),
    "coriolis_matrix": ("coriolis_matrix", "C", ("q", "qd")),
    "joint_torque_regressor": ("joint_torque_regressor", "Y", ("q", "qd", "qdd")),
}



_OPS_MEMO: dict = {}


def _ops(e) -> int:
    """A fast estimate of ``count_ops`` (binary operations of the tree, a sign as one operation;
    memoized on the expression), used for the local decisions of the conversion."""
    hit = _OPS_MEMO.get(e)
    if hit is not None:
        return hit
    if e.is_Atom:
        n = 0
    elif e.is_Add:
        # a - b: one SUB, no NEG of b (a term -1*b costs nothing beyond the SUB)
        n = len(e.args) - 1 + sum(_ops(a) - (1 if a.is_Mul and a.args[0] == -1 else 0)
                                  for a in e.args)
    elif e.is_Mul:
        n = len(e.args) - 1 + sum(_ops(a) for a in e.args)   # -x: NEG, counted as the product
    else:
        n = 1 + sum(_ops(a) for a in e.args)
    if len(_OPS_MEMO) > 200_000:
        _OPS_MEMO.clear()
    _OPS_MEMO[e] = n
    return n


@dataclass
class StructuredResult:
    """A closed form as ordered definitions plus per-entry expressions.

    ``definitions``: ordered list of ``(symbol, expression)``; each expression uses the inputs
    (``inputs``: name -> list of SymPy symbols, e.g. ``{"q": [q1, ...]}``), the parameters
    ``params`` (empty unless ``parameters="inertial"``) and earlier symbols only.
    ``entries``: 0-based index tuple -> expression in terms of the definitions (nonzero unique
    entries: M stores i <= j; Gamma stores j <= k when ``symmetric_jk``; Y stores (i, p)).
    ``operations`` counts SymPy operations (``count_ops``) of definitions and entries together;
    ``casadi_instructions`` is ``n_instructions()`` of the CasADi Function of the same quantity
    (inputs, constants and outputs included) and ``casadi_operations`` its arithmetic
    instructions only. ``seconds``: wall time of the stages.
    """

    kind: str
    model_name: str
    shape: tuple
    definitions: list
    entries: dict
    inputs: dict
    params: list = field(default_factory=list)
    symmetric: bool = False
    symmetric_jk: bool = False
    seconds: dict = field(default_factory=dict)
    casadi_instructions: int | None = None
    casadi_operations: int | None = None
    simplified: int = 0            # definitions shortened by the local sin^2 + cos^2 rule

    # --- sizes -----------------------------------------------------------------------------------
    @property
    def q(self) -> list:
        return list(self.inputs.get("q", []))

    @property
    def qd(self) -> list:
        return list(self.inputs.get("qd", []))

    @property
    def operations(self) -> int:
        return operation_count([e for _, e in self.definitions] + list(self.entries.values()))

    @property
    def n_definitions(self) -> int:
        return len(self.definitions)

    def __repr__(self) -> str:
        return (f"<StructuredResult {self.kind} of {self.model_name!r}: shape {self.shape}, "
                f"{len(self.definitions)} definitions, {len(self.entries)} nonzero unique entries, "
                f"{self.operations} ops>")

    # --- expansion (small models only) -----------------------------------------------------------
    def flat_entries(self) -> dict:
        """Entries with every definition substituted (expressions of the inputs only). The size
        grows quickly with the model: meant for small models and tests."""
        env: dict = {}
        for s, e in self.definitions:
            env[s] = e.xreplace(env)
        return {k: e.xreplace(env) for k, e in self.entries.items()}

    # --- evaluation and printing (symdyn.symbolic.export) ----------------------------------------
    def lambdify(self):
        """A NumPy function ``f(*inputs[, p])`` returning the full array (see :meth:`to_python`)."""
        from .export import lambdify

        return lambdify(self)

    def evaluate(self, *args):
        """The full quantity at numbers: ``evaluate(q)`` (``q, qd`` for C*, ``q, qd, qdd`` for Y;
        a last argument ``pi`` when the result has parameters)."""
        return self.lambdify()(*args)

    def to_python(self, function_name: str | None = None) -> str:
        """Source of a module with ``NAME(q[, qd[, qdd]][, pi]) -> numpy array`` (full shape)."""
        from .export import to_python

        return to_python(self, function_name)

    def to_c(self, function_name: str | None = None) -> str:
        """C source of ``void NAME(const double *q, [const double *qd, ...] [const double *pi,]
        double *out)`` writing the full quantity row-major (Gamma as out[(i*n + j)*n + k])."""
        from .export import to_c

        return to_c(self, function_name)

    def to_latex(self, document: bool = True) -> str:
        """The definitions as an aligned list, then the entries (1-based indices)."""
        from .export import to_latex

        return to_latex(self, document)


# --- CasADi instruction list -> SymPy assignments ------------------------------------------------
def _number(x: float):
    """Integers and halves exactly (1, -1, 0.5 print as such), other constants as Floats that print
    with round-trip precision."""
    if x == int(x) and abs(x) < 2 ** 31:
        return sp.Integer(int(x))
    if 2 * x == int(2 * x) and abs(x) < 2 ** 30:
        return sp.Rational(int(2 * x), 2)
    return sp.Float(x, 17)       # exact double; printed by repr() (shortest round trip)


def _ops_table():
    import casadi as ca

    binary = {
        ca.OP_ADD: lambda a, b: a + b, ca.OP_SUB: lambda a, b: a - b,
        ca.OP_MUL: lambda a, b: a * b, ca.OP_DIV: lambda a, b: a / b,
        ca.OP_POW: lambda a, b: a ** b, ca.OP_CONSTPOW: lambda a, b: a ** b,
        ca.OP_ATAN2: lambda a, b: sp.atan2(a, b),
    }
    unary = {
        ca.OP_NEG: lambda a: -a, ca.OP_SQ: lambda a: a ** 2, ca.OP_TWICE: lambda a: 2 * a,
        ca.OP_SIN: sp.sin, ca.OP_COS: sp.cos, ca.OP_SQRT: sp.sqrt, ca.OP_INV: lambda a: 1 / a,
        ca.OP_EXP: sp.exp, ca.OP_LOG: sp.log, ca.OP_TAN: sp.tan, ca.OP_FABS: sp.Abs,
        ca.OP_ASSIGN: lambda a: a,
    }
    return binary, unary


def casadi_ops(f) -> int:
    """Arithmetic instructions of a casadi.Function (inputs, outputs and constants excluded)."""
    import casadi as ca

    skip = {ca.OP_INPUT, ca.OP_OUTPUT, ca.OP_CONST}
    return sum(1 for k in range(f.n_instructions()) if f.instruction_id(k) not in skip)


def from_casadi(f, input_symbols: list, *, output: int = 0, trig_names: list | None = None,
                prefix: str = "t", progress: Progress | None = None,
                local: bool = True) -> tuple[list, list, int]:
    """Convert output ``output`` of the SX Function ``f`` into ``(definitions, values, n_simplified)``.

    ``input_symbols[i]`` are the SymPy symbols of input i (one per nonzero). Nodes used more than
    once become definitions (``s_i``/``c_i`` for sin/cos of input i of ``trig_names``, else
    ``t1, t2, ...``), nodes used once are inlined; ``values`` is the output's nonzeros as
    expressions of the definitions (dense output: one value per element, zeros included).
    """
    import casadi as ca

    binary, unary = _ops_table()
    n = f.n_instructions()
    op = [0] * n
    args: list = [()] * n
    value: list = [None] * n       # leaves: the SymPy input symbol or number
    reg: dict = {}                 # work register -> node (instruction index)
    outputs: dict = {}             # nonzero -> node
    uses = [0] * n
    for k in range(n):
        o = f.instruction_id(k)
        op[k] = o
        if o == ca.OP_INPUT:
            i, nz = f.instruction_input(k)
            value[k] = input_symbols[i][nz]
            reg[f.instruction_output(k)[0]] = k
        elif o == ca.OP_CONST:
            value[k] = _number(f.instruction_constant(k))
            reg[f.instruction_output(k)[0]] = k
        elif o == ca.OP_OUTPUT:
            node = reg[f.instruction_input(k)[0]]
            oi, nz = f.instruction_output(k)
            if oi == output:
                outputs[nz] = node
                uses[node] += 1
        else:
            ins = f.instruction_input(k)
            nargs = 2 if o in binary else 1
            a = tuple(reg[r] for r in ins[:nargs])
            args[k] = a
            for x in a:
                uses[x] += 1
            reg[f.instruction_output(k)[0]] = k
    # which nodes are named (definitions)
    named = [False] * n
    for k in range(n):
        if op[k] in (ca.OP_INPUT, ca.OP_CONST) or uses[k] == 0:
            continue
        if uses[k] >= 2 or op[k] in (ca.OP_SIN, ca.OP_COS):
            named[k] = True
    # an Add/Sub that a constant multiplies would be distributed by SymPy (2*(a + b) -> 2*a + 2*b):
    # keep it named so that the emitted code keeps CasADi's factorization
    for k in range(n):
        if op[k] in (ca.OP_MUL, ca.OP_TWICE, ca.OP_NEG, ca.OP_DIV):
            a = args[k]
            consts = [x for x in a if op[x] == ca.OP_CONST]
            if op[k] in (ca.OP_TWICE, ca.OP_NEG) or consts:
                for x in a:
                    if op[x] in (ca.OP_ADD, ca.OP_SUB):
                        named[x] = True
    trig_index = {}
    if trig_names is not None:
        for i, s in enumerate(trig_names):
            trig_index[s] = i + 1
    linear_ops = {ca.OP_ADD, ca.OP_SUB, ca.OP_NEG, ca.OP_TWICE, ca.OP_ASSIGN}
    expr: list = [None] * n        # the node as emitted: a symbol when named, else an expression
    lin: list = [None] * n         # its bounded linear form (see _LINEAR_TERMS), or the same as expr
    defs: list = []
    seen: dict = {}                # linear form of a definition -> its symbol (duplicates merged)
    counter = 0
    report = progress.loop("converting", n, "CasADi instructions") if progress is not None else None
    simplified = 0
    for k in range(n):
        o = op[k]
        if o in (ca.OP_INPUT, ca.OP_CONST):
            expr[k] = lin[k] = value[k]
            continue
        if o == ca.OP_OUTPUT or uses[k] == 0:
            continue
        a = tuple(expr[x] for x in args[k])
        e = binary[o](*a) if o in binary else unary[o](*a)
        lk = None
        if local:
            la = [lin[x] for x in args[k]]
            if o in linear_ops or (o in (ca.OP_MUL, ca.OP_DIV) and op[args[k][-1]] == ca.OP_CONST) \
                    or (o == ca.OP_MUL and op[args[k][0]] == ca.OP_CONST):
                lk = binary[o](*la) if o in binary else unary[o](*la)
                if len(sp.Add.make_args(lk)) > _LINEAR_TERMS:
                    lk = None
            if lk is not None and lk != e and _ops(lk) < _ops(e):
                e = lk
                simplified += 1
        if named[k]:
            arg0 = a[0]
            key = lk if lk is not None else e
            if local and not key.is_Number:
                hit = seen.get(key)
                if hit is not None:
                    expr[k], lin[k] = hit, (lk if lk is not None else hit)
                    simplified += 1
                    continue
                hit = seen.get(-key)
                if hit is not None:
                    expr[k], lin[k] = -hit, (lk if lk is not None else -hit)
                    simplified += 1
                    continue
            if e.is_Number or e.is_Symbol:
                expr[k] = lin[k] = e
                continue
            if o in (ca.OP_SIN, ca.OP_COS) and arg0 in trig_index:
                sym = sp.Symbol(f"{'s' if o == ca.OP_SIN else 'c'}{trig_index[arg0]}", real=True)
            else:
                counter += 1
                sym = sp.Symbol(f"_{prefix}{counter}", real=True)
            if local:
                e2 = _pythagoras(e)
                if e2 is not e:
                    simplified += 1
                    e = e2
                seen[key] = sym
            defs.append((sym, e))
            expr[k] = sym
            lin[k] = lk if lk is not None else sym
        else:
            expr[k] = e
            lin[k] = lk if lk is not None else e
        if report is not None and k % 500 == 0:
            report(k)
    if report is not None:
        report(n)
    nnz = f.nnz_out(output)
    values = [expr[outputs[i]] if i in outputs else sp.S.Zero for i in range(nnz)]
    if local:
        values = [_pythagoras(v) for v in values]
    defs, values = _prune_and_number(defs, values, prefix)
    return defs, values, simplified


#: a value whose linear form (in earlier names) has at most this many terms is also known by that
#: form: like terms of linked definitions combine (0.088 t - (-0.088 t) = 0.176 t) and equal
#: definitions are merged; the shorter of the form and the instruction's own expression is emitted
_LINEAR_TERMS = 8


def _prune_and_number(defs: list, values: list, prefix: str):
    """Drop definitions nobody uses (after local simplification), inline those used once where
    that costs no operation, and number the remaining ``t`` names 1, 2, ... in order."""
    uses: dict = {}

    def count(e, sign=1):
        for sym in e.free_symbols:
            if sym in index:
                uses[sym] = uses.get(sym, 0) + sign
    index = {sym: i for i, (sym, _) in enumerate(defs)}
    for e in values:
        count(e)
    alive = [False] * len(defs)
    body = [e for _, e in defs]
    for i in range(len(defs) - 1, -1, -1):       # reverse order: consumers before producers
        sym = defs[i][0]
        if uses.get(sym, 0) > 0:
            alive[i] = True
            count(body[i])
    # inline definitions used once (never s_i / c_i) when that does not add operations
    users: dict = {}
    for i in range(len(defs)):
        if alive[i]:
            for sym in body[i].free_symbols:
                if sym in index:
                    users.setdefault(sym, []).append(("d", i))
    for r, e in enumerate(values):
        for sym in e.free_symbols:
            if sym in index:
                users.setdefault(sym, []).append(("v", r))
    for i in range(len(defs)):
        sym = defs[i][0]
        if not alive[i] or not sym.name.startswith("_") or len(users.get(sym, ())) != 1:
            continue
        if uses.get(sym, 0) != 1:
            continue
        where, j = users[sym][0]
        old = body[j] if where == "d" else values[j]
        new = old.xreplace({sym: body[i]})
        if _ops(new) <= _ops(old) + _ops(body[i]):
            if where == "d":
                body[j] = new
            else:
                values[j] = new
            alive[i] = False
            for s2 in body[i].free_symbols:      # body i's symbols are now used by j
                if s2 in index:
                    users[s2] = [(where, j) if u == ("d", i) else u for u in users.get(s2, [])]
    ren, out, m = {}, [], 0
    for i, (sym, _) in enumerate(defs):
        if alive[i] and sym.name.startswith("_"):
            m += 1
            ren[sym] = sp.Symbol(f"{prefix}{m}", real=True)
    for i, (sym, _) in enumerate(defs):
        if alive[i]:
            out.append((ren.get(sym, sym), body[i].xreplace(ren)))
    return out, [v.xreplace(ren) for v in values]


_TRIG_NAME = re.compile(r"([sc])(\d+)$")


def _pythagoras(e):
    """Bounded local simplification: where s_i**2 and c_i**2 (the named sine and cosine of one
    joint angle) both occur in a short sum, replace s_i**2 -> 1 - c_i**2 if that is shorter."""
    if not e.is_Add or len(e.args) > 12:
        return e
    pows: dict = {}
    for p in e.atoms(sp.Pow):
        if p.exp == 2 and p.base.is_Symbol:
            m = _TRIG_NAME.match(p.base.name)
            if m:
                pows.setdefault(m.group(2), {})[m.group(1)] = p.base
    best = e
    for pair in pows.values():
        if len(pair) == 2:
            cand = sp.expand(best.xreplace({pair["s"] ** 2: 1 - pair["c"] ** 2}))
            if _ops(cand) < _ops(best):
                best = cand
    return best


# --- the closed forms ----------------------------------------------------------------------------
def _symbols(model, names, params: bool):
    syms = {}
    for name in names:
        n = model.nq if name == "q" else model.nv
        syms[name] = list(sp.symbols(f"{name}1:{n + 1}", real=True))
    pi = list(sp.symbols(f"pi1:{10 * model.N + 1}", real=True)) if params else []
    return syms, pi


def _model(model, what):
    from .results import as_model

    model = as_model(model, what)
    if model.is_symbolic:
        raise ValueError(f"{what}: structured closed forms need numeric model parameters "
                         f"(model {model.name!r} has SymPy parameters); use parameters='inertial' "
                         "for symbolic inertial parameters, or the flat closed forms")
    return model


def snap_rotations(model, tol: float):
    """``model`` with rotation entries (tree transforms, frames) and joint-axis entries within
    ``tol`` of 0, 1 or -1 made exact (:func:`symdyn.snapping.snap_model`: URDF angles such as
    ``rpy="1.570796325 0 0"`` (ur5_gripper) leave entries of 1.8e-9 that are not rounding errors
    but the file's precision of pi/2)."""
    from ..snapping import snap_model

    return snap_model(model, tol)


def structured(model, kind: str, *, parameters: str | None = None, progress: bool | Progress = False,
               prefix: str = "t", snap: float | None = None,
               local: bool = True) -> StructuredResult:
    """Structured closed form of ``kind`` ('christoffel', 'mass_matrix', 'coriolis_matrix' or
    'joint_torque_regressor') of a numeric ``model`` (a Model or a spec string).

    ``parameters="inertial"``: the 10 N inertial parameters (Pinocchio's order,
    :func:`symdyn.inertial_parameters`) are symbols ``pi1 ... pi{10N}`` and every entry is
    an explicit linear combination ``sum_p Y_p(q, ...) pi_p`` whose coefficients are written in
    terms of the (parameter-free) definitions.

    ``snap``: also make rotation entries within ``snap`` of 0, +-1 exact (:func:`snap_rotations`;
    by default only those within 4 eps are, so values equal the model's to rounding). Models
    loaded from files are already snapped at :data:`symdyn.SNAP_TOLERANCE` (the 1e-12 leftovers
    of URDF angles written to 10-12 digits; ``snap=0`` on the loaders keeps them). ``local=False`` skips the bounded local simplification (the CasADi graph as is).
    """
    import casadi as ca

    from ..codegen.functions import casadi_function

    if kind not in _KINDS:
        raise ValueError(f"unknown kind {kind!r}; use one of {', '.join(_KINDS)}")
    if parameters not in (None, "inertial"):
        raise ValueError(f"parameters must be None or 'inertial', got {parameters!r}")
    if parameters and kind == "joint_torque_regressor":
        raise ValueError("the regressor is already the coefficient form: leave parameters out")
    model = _model(model, kind)
    if snap is not None:
        model = snap_rotations(model, float(snap))
    prog = make_progress(progress, f"{kind} of {model.name} (structured)")
    alg, oname, in_names = _KINDS[kind]
    seconds: dict = {}
    t0 = time.perf_counter()
    opts: dict[str, Any] = {"parameters": "inertial"} if parameters else {}
    with prog.running(f"tracing {alg} with CasADi SX", f"nv = {model.nv}"):
        f = casadi_function(model, alg, layout="numpy", **opts)
    sx_in = [ca.SX.sym(nm, f.nnz_in(i)) for i, nm in enumerate(f.name_in())]
    out = f.call(sx_in)[f.name_out().index(oname)]
    nv = model.nv
    keys: list[tuple[int, ...]]
    shape: tuple[int, ...]
    if kind == "christoffel":
        from .results import symmetric_jk

        sym_jk = symmetric_jk(model)
        keys = [(i, j, k) for i in range(nv) for j in range(nv) for k in range(nv)
                if not sym_jk or j <= k]
        shape = (nv, nv, nv)
    elif kind == "mass_matrix":
        sym_jk = False
        keys = [(i, j) for i in range(nv) for j in range(i, nv)]
        shape = (nv, nv)
    elif kind == "coriolis_matrix":
        sym_jk = False
        keys = [(i, j) for i in range(nv) for j in range(nv)]
        shape = (nv, nv)
    else:
        sym_jk = False
        shape = (nv, 10 * model.N)
        keys = [(i, p) for i in range(shape[0]) for p in range(shape[1])]
    flat = [flat_index(shape, key) for key in keys]
    sel = ca.vertcat(*[out[i] for i in flat]) if flat else ca.SX(0, 1)
    syms, pi = _symbols(model, in_names, bool(parameters))
    base_inputs = sx_in[:len(in_names)]
    if parameters:
        # coefficients of the linear map pi -> entries: the Jacobian, free of pi by linearity
        piv = sx_in[len(in_names)]
        jac = ca.jacobian(sel, piv)
        if ca.depends_on(jac, piv):
            raise RuntimeError(f"{kind} is not linear in the inertial parameters")
        target = ca.vec(ca.densify(jac))          # column-major: entry r, parameter p at p*m + r
        g = ca.Function("g", base_inputs, [target], {"cse": True})
        ref = ca.Function("ref", sx_in, [sel], {"cse": True})
    else:
        g = ca.Function("g", base_inputs, [sel], {"cse": True})
        ref = g
    seconds["trace"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    defs, values, nsimp = from_casadi(g, [syms[nm] for nm in in_names], trig_names=syms["q"],
                                      prefix=prefix, progress=prog, local=local)
    if parameters:
        m = len(keys)
        entries = {}
        for r, key in enumerate(keys):
            e = sp.Add(*[values[p * m + r] * pi[p] for p in range(len(pi)) if values[p * m + r] != 0])
            if e != 0:
                entries[key] = e
    else:
        entries = {key: v for key, v in zip(keys, values) if v != 0}
    seconds["convert"] = time.perf_counter() - t0
    res = StructuredResult(kind, model.name, shape, defs, entries, syms, pi,
                           symmetric=(kind == "mass_matrix"), symmetric_jk=sym_jk, seconds=seconds,
                           casadi_instructions=ref.n_instructions(), casadi_operations=casadi_ops(ref),
                           simplified=nsimp)
    if prog.mode is not False:   # counting the operations takes a while on big results
        prog.line(f"{len(defs)} definitions, {len(entries)} entries, {res.operations} operations "
                  f"(CasADi graph: {res.casadi_instructions} instructions) in "
                  f"{sum(seconds.values()):.1f} s")
    return res


def christoffel(model, *, parameters: str | None = None, progress: bool | Progress = False, **options):
    """Structured closed-form Christoffel symbols Gamma[i, j, k] (paper 000 Algorithm 2)."""
    return structured(model, "christoffel", parameters=parameters, progress=progress, **options)


def mass_matrix(model, *, parameters: str | None = None, progress: bool | Progress = False, **options):
    """Structured closed-form M(q) (CRBA); entries i <= j."""
    return structured(model, "mass_matrix", parameters=parameters, progress=progress, **options)


def coriolis_matrix(model, *, parameters: str | None = None, progress: bool | Progress = False, **options):
    """Structured closed-form Christoffel-consistent C*(q, qd) (paper 000 Algorithm 1)."""
    return structured(model, "coriolis_matrix", parameters=parameters, progress=progress, **options)


def regressor(model, *, progress: bool | Progress = False, **options):
    """Structured closed-form joint-torque regressor Y(q, qd, qdd): tau = Y pi with pi the 10 N
    inertial parameters (:func:`symdyn.algorithms.regressors.joint_torque_regressor`)."""
    return structured(model, "joint_torque_regressor", progress=progress, **options)
