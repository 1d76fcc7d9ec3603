"""The ``symdyn`` command.

``symdyn demo [--model SPEC] [--repeat N]`` evaluates M, tau and the nonlinear effects on a
built-in model and times each backend. Other modules add subcommands: every module named in
:data:`_SUBCOMMANDS` exposes ``register(subparsers)``, which adds its parsers with
``parser.set_defaults(func=handler)``; ``handler(args) -> int`` returns the exit code.

Errors. Usage errors (argparse) and user errors print one line, ``symdyn COMMAND: error: MESSAGE``,
on stderr and exit with code 2, whichever subcommand raised them. User errors are the exception
types symdyn raises on purpose for bad input or a failing environment (:data:`USER_ERRORS`):
``ValueError`` (with ``ModelError``, ``URDFError``, ``SpecError``), ``TypeError`` (with
``BackendError``), ``OSError`` (missing files, a compiler that cannot run), ``ImportError`` (an
optional package that is not installed) and :class:`symdyn.codegen.BuildError` (code
generation or compilation failed; the one line quotes the compiler's first error). Everything
else (``AttributeError``, ``KeyError``, ``IndexError``, other ``RuntimeError`` ...) is a bug in
symdyn and surfaces with its traceback. ``symdyn --traceback COMMAND ...`` re-raises user errors
too, with the full message (e.g. the whole compiler output). Ctrl-C exits with code 130.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from typing import Sequence

# Modules that add subcommands (each exposes register(subparsers)); append yours here.
_SUBCOMMANDS: tuple[str, ...] = ("symdyn.codegen.cli", "symdyn.symbolic.cli", "symdyn.experiments")

_DEMO_ALGORITHMS = ("rnea", "crba", "aba")


def _version() -> str:
    from .. import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with the built-in and the registered subcommands."""
    from .specs import LOCK_HELP, SPEC_HELP

    parser = argparse.ArgumentParser(
        prog="symdyn",
        description="Rigid-body dynamics (RNEA, CRBA, ABA, Coriolis, Christoffel, derivatives) "
                    "written once over NumPy, SymPy and CasADi.")
    parser.add_argument("--version", action="version", version=f"symdyn {_version()}")
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, show the full traceback and message instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="M, tau and nonlinear effects on a built-in model, with backend timings",
        description="Evaluate M (crba), tau (rnea) and the nonlinear effects at a random state "
                    "and time each backend: NumPy evaluation, SymPy expression construction, "
                    "CasADi SX graph construction and casadi.Function evaluation.",
        epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--model", default="serial:6", metavar="SPEC",
                      help="model spec (default: serial:6; see below)")
    demo.add_argument("--lock", default=None, metavar="NAME[=VALUE],...", help=LOCK_HELP)
    demo.add_argument("--repeat", type=_positive, default=20, metavar="N",
                      help="evaluations timed per backend, the median is shown (default: 20)")
    demo.add_argument("--backends", default="numpy,sympy,casadi", metavar="LIST",
                      help="comma-separated backends to time (default: numpy,sympy,casadi)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the random state (default: 0)")
    demo.set_defaults(func=_demo)
    for modname in _SUBCOMMANDS:
        importlib.import_module(modname).register(sub)
    return parser


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


# exception types that are user errors (one line, exit code 2); see the module docstring
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, ImportError)
_MAX_MESSAGE = 600


def _is_user_error(exc: BaseException) -> bool:
    if isinstance(exc, USER_ERRORS):
        return True
    # codegen's BuildError (a RuntimeError), matched by name so that the CLI need not import
    # codegen (CasADi) and wherever codegen defines it
    return any(c.__name__ == "BuildError" and c.__module__.startswith("symdyn.")
               for c in type(exc).__mro__)


def error_line(exc: BaseException) -> str:
    """The one-line message of a user error: its first line, plus the first line of the rest
    that reports an error (e.g. the compiler's ``file.c:3:1: error: ...``) when there is more."""
    import re

    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    text = lines[0]
    if len(lines) > 1:
        detail = next((ln for ln in lines[1:] if re.search(r"\berror\b", ln, re.I)), None)
        if detail is not None:
            text += f": {detail}"
        text += " (symdyn --traceback ... shows the full message)"
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE - 3] + "..."
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``symdyn`` command; returns the exit code (0 success, 1 a command that
    ran but failed, e.g. an experiment, 2 usage or user error, 130 interrupted)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    where = f"symdyn {args.command}"
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `symdyn demo | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"\n{where}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - filtered below: bugs are re-raised
        if args.traceback or not _is_user_error(exc):
            raise
        print(f"{where}: error: {error_line(exc)}", file=sys.stderr)
        return 2


# --- demo ------------------------------------------------------------------------------------------

def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _once(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _fmt_s(t: float | None) -> str:
    return "-" if t is None else f"{t:.3g} s"


def _demo(args) -> int:
    import numpy as np

    from .. import algorithms as alg
    from ..models import random_state
    from .specs import from_spec

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in ("numpy", "sympy", "casadi"):
            raise ValueError(f"unknown backend {b!r} in --backends; choose from numpy, sympy, casadi")
    model = from_spec(args.model, lock=args.lock)
    if model.is_symbolic:
        backends = ["sympy"]
    q, qd, qdd = random_state(model, args.seed)
    calls = {
        "rnea": lambda B, q, qd, qdd: alg.rnea(model, q, qd, qdd, backend=B),
        "crba": lambda B, q, qd, qdd: alg.crba(model, q, backend=B),
        "aba": lambda B, q, qd, tau: alg.aba(model, q, qd, tau, backend=B),
    }
    out = print
    out(f"symdyn {_version()} demo: {model!r}")
    if model.is_symbolic:
        return _demo_symbolic(model, calls, out)
    out(f"state (seed {args.seed}): q random (angles in [0, 2 pi), unit quaternions), "
        f"qd and qdd in [0, 10]")
    np.set_printoptions(precision=4, suppress=True, linewidth=110)
    M = alg.crba(model, q)
    tau = alg.rnea(model, q, qd, qdd)
    nle = alg.nonlinear_effects(model, q, qd)
    g = alg.gravity_vector(model, q)
    out(f"\nM = crba(q)   ({model.nv} x {model.nv})\n{M}")
    out(f"\ntau = rnea(q, qd, qdd)\n{tau}")
    out(f"\nnonlinear effects C(q, qd) qd + g(q) = rnea(q, qd, 0)\n{nle}")
    out(f"\ngravity g(q)\n{g}")
    err = np.abs(alg.aba(model, q, qd, tau) - qdd).max()
    out(f"\ncheck: max |aba(q, qd, tau) - qdd| = {err:.2e};  "
        f"max |M qdd + nle - tau| = {np.abs(M @ qdd + nle - tau).max():.2e}")

    # aba takes tau in place of qdd
    args_of = {"rnea": (q, qd, qdd), "crba": (q, qd, qdd), "aba": (q, qd, tau)}
    rows, diffs = [], {}
    if "numpy" in backends:
        rows.append(("numpy", f"evaluate (median of {args.repeat})",
                     [_median_time(lambda a=a: calls[a]("numpy", *args_of[a]), args.repeat)
                      for a in _DEMO_ALGORITHMS]))
    if "sympy" in backends:
        r, d = _demo_sympy(model, calls, args_of)
        rows.append(("sympy", "build expressions", r))
        diffs["sympy"] = d
    if "casadi" in backends:
        build, func, evals, d = _demo_casadi(model, calls, args_of, args.repeat)
        rows.append(("casadi", "build SX graph", build))
        rows.append(("casadi", "build casadi.Function", func))
        rows.append(("casadi", f"evaluate Function (median of {args.repeat})", evals))
        diffs["casadi"] = d
    out(f"\ntimings in seconds (model {model.name}, nv = {model.nv})")
    width = max(len(w) for _, w, _ in rows) if rows else 10
    out(f"  {'backend':<8} {'what':<{width}} " + " ".join(f"{a:>11}" for a in _DEMO_ALGORITHMS))
    for b, what, ts in rows:
        out(f"  {b:<8} {what:<{width}} " + " ".join(f"{_fmt_s(t):>11}" for t in ts))
    for b, d in diffs.items():
        out(f"  {b} results evaluated at the state agree with numpy to max |diff| = {d:.1e}")
    return 0


def _symbols(B: str, model):
    if B == "sympy":
        import sympy as sp

        return (sp.Matrix(sp.symbols(f"q0:{model.nq}")), sp.Matrix(sp.symbols(f"qd0:{model.nv}")),
                sp.Matrix(sp.symbols(f"u0:{model.nv}")))
    import casadi as ca

    return ca.SX.sym("q", model.nq), ca.SX.sym("qd", model.nv), ca.SX.sym("u", model.nv)


def _demo_sympy(model, calls, args_of):
    import numpy as np

    from ..backends import get_backend

    syms = _symbols("sympy", model)
    times, diff = [], 0.0
    flat = [s for v in syms for s in v]
    for a in _DEMO_ALGORITHMS:
        expr, t = _once(lambda a=a: calls[a]("sympy", *syms))
        times.append(t)
        vals = [x for v in args_of[a] for x in np.asarray(v, float)]
        num = get_backend("sympy").evaluate(expr, dict(zip(flat, vals)))
        ref = np.asarray(calls[a]("numpy", *args_of[a]), float)
        diff = max(diff, float(np.abs(num.reshape(ref.shape) - ref).max()))
    return times, diff


def _demo_casadi(model, calls, args_of, repeat):
    import casadi as ca
    import numpy as np

    syms = _symbols("casadi", model)
    build, func, evals, diff = [], [], [], 0.0
    for a in _DEMO_ALGORITHMS:
        expr, t = _once(lambda a=a: calls[a]("casadi", *syms))
        build.append(t)
        f, t = _once(lambda: ca.Function(a, list(syms), [expr]))
        func.append(t)
        vals = [np.asarray(v, float) for v in args_of[a]]
        evals.append(_median_time(lambda: f(*vals), repeat))
        ref = np.asarray(calls[a]("numpy", *args_of[a]), float)
        diff = max(diff, float(np.abs(np.array(f(*vals), float).reshape(ref.shape) - ref).max()))
    return build, func, evals, diff


def _demo_symbolic(model, calls, out) -> int:
    """Models with SymPy parameters run on the sympy backend only: print M symbolically."""
    import sympy as sp

    syms = _symbols("sympy", model)
    M, t = _once(lambda: calls["crba"]("sympy", *syms))
    out(f"\nparameters: {', '.join(map(str, model.parameters()))}")
    out(f"\nM = crba(q) with q = {list(syms[0])}  ({t:.3g} s to build)")
    for i in range(M.shape[0]):
        for j in range(i, M.shape[1]):
            out(f"  M[{i},{j}] = {sp.simplify(M[i, j])}")
    tau, t = _once(lambda: calls["rnea"]("sympy", *syms))
    out(f"\ntau = rnea(q, qd, qdd) with qd = {list(syms[1])}, qdd = {list(syms[2])}: "
        f"{sum(sp.count_ops(e) for e in tau)} operations ({t:.3g} s to build)")
    return 0

