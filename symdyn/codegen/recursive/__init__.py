"""The compiled form that keeps the recursion: per-step kernels and a C loop over a program.

The unrolled form (:mod:`symdyn.codegen.generate`) traces a whole algorithm into one SX graph:
fastest for small models, but its code grows with the number of bodies (with N^2 for nv x nv
results, N^3 for Christoffel symbols) until gcc and the instruction cache give out. This form
records the same algorithm source instead (its loop bodies are :func:`~symdyn.algorithms.steps.
step` functions):

* the algorithm runs once with a *recording backend* whose values are :class:`Ref` s (where an
  entry lives in memory, or a literal); a step called with them is traced with CasADi once per
  *signature* (the step, its static arguments such as the joint kind, and the memory pattern of
  its array arguments) into a kernel, and every call becomes one instruction
  ``kernel(arguments...) -> a fresh block of the workspace``;
* model constants (tree transforms, inertias by their 10 parameters, armature) are read from a
  table of numbers, one block per body, so that bodies of one joint kind share their kernels;
* literal values (a joint's motion subspace, zeros, gravity) are baked into the kernels, and a
  kernel's outputs keep one slot per distinct entry (symmetric blocks, structural zeros, repeated
  masses cost nothing);
* the finished program fuses up to ``program.FUSE`` consecutive calls of one kernel that do not
  read each other's results (ancestor loops in root coordinates) into one call, lets kernels
  write single-value results straight into the outputs, passes arguments through without
  copies and reuses the workspace blocks of dead values;
* the generated C holds the kernels (CasADi), the program (an int table), the constant table and
  one generic loop that runs the program; its entry point has CasADi's calling convention, so the
  call/batch wrapper, loader and cache of :mod:`symdyn.codegen` serve both forms. Tables of
  more than 4096 entries are byte strings (gcc's memory on initializer lists is the limit).

The code size grows with the number of distinct kernels (joint kinds x step kinds), the tables
with the number of step calls (O(N) for rnea/aba, O(N d) for crba, coriolis_matrix and
rnea_derivatives, O(N d^2) for christoffel, O(N^2) for aba_derivatives: one AZA column chunk
per body through every body). Measured against the unrolled form and Pinocchio in
reports/scaling.md (``experiments/scaling.py``).

Modules: :mod:`.program` (recording: values as memory references, kernels, the program and its
Python reference semantics) and :mod:`.csource` (the C file: CasADi's kernels, the tables, the
loop). This package's top level holds the form rules of :func:`symdyn.codegen.generate.
generate_sources`.
"""
from __future__ import annotations

from typing import Any, Callable

from . import csource, program
from .csource import kernel_prefix, write_c
from .program import (CONSTANTS, RESULT0, WORK, Kernel, OverBudget, Program, Recorder,
                      RecordingBackend, Ref, decode, encode, evaluate, record)

__all__ = ["AUTO_COMPARE_MIN", "AUTO_MAX_UNROLLED", "AUTO_WORK_PER_INSTRUCTION",
           "AUTO_WORK_RATIO", "CONSTANTS", "FORMS",
           "RECURSIVE_ALGORITHMS", "RECURSIVE_FUSE", "RECURSIVE_OPTIONS", "RECURSIVE_FRAME",
           "RESULT0", "WORK", "Kernel", "OverBudget", "Program",
           "Recorder", "RecordingBackend", "Ref", "check_form", "choose_by_size", "choose_form",
           "csource", "decode", "encode", "evaluate", "kernel_prefix", "program", "record",
           "write_c"]

FORMS = ("auto", "unrolled", "recursive")
# algorithms whose every computation is in steps (recordable)
RECURSIVE_ALGORITHMS = ("rnea", "crba", "aba", "nonlinear_effects", "gravity_vector",
                        "coriolis_matrix", "christoffel", "rnea_derivatives", "aba_derivatives")
# options whose other values compute outside steps (no recursive form): aba_derivatives'
# "dmm" (a dense product) and "ltdl" (scalar loops) routes
RECURSIVE_OPTIONS = {"aba_derivatives": {"method": ("auto", "aza")}}
# fusion per algorithm (program.record's fuse / fuse_exact) where the default (runs of 2..FUSE
# calls, one fused kernel variant per run length) is not the best: aba_derivatives' AZA steps
# come in runs of every length (chunks per body), and their variants would double its kernel
# code (g1: 58.8k SX instructions, random_tree(160, seed=2) 95k: gcc at -Og) for no speed
# over frequent runs of exactly 4 (g1 29.9k, random_tree(160) 29.0k: -O2; g1 22.1 us a call
# with runs of 2..8 or of 4, 25.8 us unfused, both at -O2)
RECURSIVE_FUSE: dict[str, dict[str, Any]] = {"aba_derivatives": {"fuse": 4, "fuse_exact": True}}
# the frame of crba, coriolis_matrix and christoffel in the recursive form when not given: in
# root coordinates an ancestor block costs a few dot products instead of moving force blocks,
# and the blocks of one column are independent, so they fuse (crba on serial_chain(160, seed=1):
# 0.26x Pinocchio in root vs 0.55x in body coordinates, one loaded run)
RECURSIVE_FRAME = "root"
# form="auto" (choose_by_size): the unrolled graph is kept while it has at most this many SX
# instructions (code that compiles in seconds at -O2 and stays in the instruction cache; beyond
# it gcc's time and memory and the run time grow faster than the recursive form's, measured in
# reports/scaling.md); a recorded program doing more than AUTO_WORK_RATIO times as many
# operations per call is not traced unrolled at all (the unrolled graph has at least ~0.2x the
# recursive work on every model measured, so it would exceed the bound).
AUTO_MAX_UNROLLED = 40000
AUTO_WORK_RATIO = 5
# Below AUTO_MAX_UNROLLED the recursive form is still taken where the unrolled graph has at
# least AUTO_COMPARE_MIN instructions and the recorded program does at most
# AUTO_WORK_PER_INSTRUCTION operations per unrolled instruction: kernels in a loop run at about
# the speed of straight-line code, which from ~15k instructions no longer stays in the
# instruction cache. Fitted on reports/scaling.md (f0a9052: 72 model x algorithm pairs with both
# forms measured): it turns 7 slower picks into faster ones (aba serial_chain(40, seed=1)
# 0.75 -> 0.41x Pinocchio, serial_chain(20) 0.54 -> 0.42, random_tree(40) 0.52 -> 0.42,
# coriolis_matrix random_tree(40) 0.80 -> 0.63, christoffel random_tree(20) 0.05 -> 0.03,
# rnea serial_chain(80) 0.42 -> 0.37) and no faster pick into a slower one; at 1.5 it would
# (crba serial_chain(40): 0.47 unrolled vs 0.58 recursive, work ratio 1.48).
AUTO_COMPARE_MIN = 15000
AUTO_WORK_PER_INSTRUCTION = 1.4


def check_form(form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    return form


def choose_form(model, algorithm: str, form: str = "auto", *,
                parameters: str | None = None, options: dict | None = None) -> tuple[str, str]:
    """``(form, reason)`` for one compiled function: ``form`` as asked; for ``"auto"`` the
    unrolled form where the algorithm has no recursive one (or not with these ``options``,
    :data:`RECURSIVE_OPTIONS`), else ``"measure"``: the choice is made by
    :func:`choose_by_size` once both sizes are known."""
    check_form(form)
    bad = [f"{k}={v!r}" for k, allowed in RECURSIVE_OPTIONS.get(algorithm, {}).items()
           for v in [(options or {}).get(k, allowed[0])] if v not in allowed]
    supported = algorithm in RECURSIVE_ALGORITHMS and parameters is None and not bad
    if form == "recursive":
        if not supported:
            what = (f"parameters={parameters!r}" if parameters is not None else
                    f"{algorithm!r} with {', '.join(bad)}" if bad else f"{algorithm!r}")
            raise ValueError(f"form='recursive' is not available for {what}; it exists for "
                             f"{', '.join(RECURSIVE_ALGORITHMS)} without parameters= "
                             "(aba_derivatives with method 'auto' or 'aza')")
        return "recursive", "asked for"
    if form == "unrolled":
        return "unrolled", "asked for"
    if not supported:
        return "unrolled", ("no recursive form with parameters=" if parameters is not None else
                            f"no recursive form with {', '.join(bad)}" if bad else
                            "no recursive form")
    return "measure", "auto"


def choose_by_size(program: Program, trace_unrolled: Callable[[], Any]) -> tuple[str, str]:
    """``form="auto"``: the unrolled form while its graph has at most ``AUTO_MAX_UNROLLED``
    instructions, else the recursive one; the recursive one also from ``AUTO_COMPARE_MIN``
    instructions on where the recorded work is at most ``AUTO_WORK_PER_INSTRUCTION`` per
    unrolled instruction; ``trace_unrolled()`` (returning the casadi.Function)
    is called only when the recorded program's work leaves the unrolled form in question."""
    work = program.stats["work"]
    if work > AUTO_WORK_RATIO * AUTO_MAX_UNROLLED:
        return "recursive", (f"auto: {work} operations per call recorded > "
                             f"{AUTO_WORK_RATIO} x {AUTO_MAX_UNROLLED}")
    n = trace_unrolled().n_instructions()
    if n > AUTO_MAX_UNROLLED:
        return "recursive", f"auto: unrolled graph {n} > {AUTO_MAX_UNROLLED} instructions"
    if n >= AUTO_COMPARE_MIN and work <= AUTO_WORK_PER_INSTRUCTION * n:
        return "recursive", (f"auto: recorded work {work} <= {AUTO_WORK_PER_INSTRUCTION} x "
                             f"unrolled graph {n} (>= {AUTO_COMPARE_MIN} instructions)")
    return "unrolled", f"auto: unrolled graph {n} <= {AUTO_MAX_UNROLLED} instructions"
