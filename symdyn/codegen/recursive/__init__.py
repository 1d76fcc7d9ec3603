"""The compiled form that keeps the recursion: per-step kernels and a C loop over a program.

Every compiled evaluator starts from the program recorded here. The unrolled form
(:func:`symdyn.codegen.casadi_function`) inlines all its kernel calls into one SX graph
(:func:`lower`): fastest for small models, but its code grows with the number of bodies (with N^2
for nv x nv results, N^3 for Christoffel symbols) until gcc and the instruction cache give out.
This form keeps the program's loop instead. Recording (the algorithms' loop bodies are
:func:`~symdyn.algorithms.steps.step` functions):

* the algorithm runs once with a *recording backend* whose values are :class:`Ref` s (where an
  entry lives in memory, or a literal); a step called with them is traced with CasADi once per
  *signature* (the step, its static arguments such as the joint kind, and the memory pattern of
  its array arguments) into a kernel, and every call becomes one instruction
  ``kernel(arguments...) -> a fresh block of the workspace``; a loop of calls independent of
  each other (:func:`~symdyn.algorithms.steps.loop_step`: christoffel's ancestor loops in root
  coordinates) is matched once, its other calls taken as the first's kernel on other blocks of
  the same pattern (the same program, recorded without matching each call again);
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

Modules: :mod:`.program` (recording: values as memory references, kernels, the program, its
Python reference semantics and its lowering to one graph) and :mod:`.csource` (the C file:
CasADi's kernels, the tables, the loop). The choice between the two forms is :mod:`symdyn.codegen.choose`'s, shared with
:func:`symdyn.jax.compile`; this package re-exports it under the names the build uses.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import choose as _choose
from ..choose import (FORMS, RECURSIVE_ALGORITHMS, RECURSIVE_OPTIONS, check_form,  # noqa: F401
                      choose_form)
from . import csource, program
from .csource import kernel_prefix, write_c
from .program import (CONSTANTS, RESULT0, WORK, Kernel, OverBudget, Program, Recorder,
                      RecordingBackend, Ref, decode, encode, evaluate, lower, record)

__all__ = ["AUTO_CALL_COST", "AUTO_COMPARE_MIN", "AUTO_MAX_UNROLLED", "AUTO_WORK_PER_INSTRUCTION",
           "AUTO_WORK_RATIO", "CONSTANTS", "FORMS",
           "RECURSIVE_ALGORITHMS", "RECURSIVE_FUSE", "RECURSIVE_OPTIONS", "RECURSIVE_FRAME",
           "RESULT0", "WORK", "Kernel", "OverBudget", "Program",
           "Recorder", "RecordingBackend", "Ref", "check_form", "choose_by_size", "choose_form",
           "csource", "decode", "encode", "evaluate", "kernel_prefix", "lower", "program", "record",
           "write_c"]

# fuse / fuse_exact of program.record where its default is not the best: aba_derivatives' AZA
# steps come in runs of every length, whose variants double its kernel code for no speed over
# runs of exactly 4 (experiments/scaling.py); SO-IDSVA's pair and triple steps have kernels of
# hundreds of instructions each, whose fused variants made talos' rnea_second_derivatives 5x
# the code (118k SX instructions against 22k), 3.7x the compile time and 1.4x slower per call
# (experiments/second_order.py)
RECURSIVE_FUSE: dict[str, dict[str, Any]] = {
    "aba_derivatives": {"fuse": 4, "fuse_exact": True},
    "constraint_dynamics_derivatives": {"fuse": 4, "fuse_exact": True},   # AZA inside
    "rnea_second_derivatives": {"fuse": 1}, "aba_second_derivatives": {"fuse": 1}}
# the frame of crba, coriolis_matrix and christoffel when not given: in root coordinates an
# ancestor block is a few dot products and a column's blocks fuse (experiments/scaling.py)
RECURSIVE_FRAME = "root"
# form="auto": the C limits of the one chooser (symdyn.codegen.choose.C), under the names the
# build cache key records
AUTO_MAX_UNROLLED = _choose.C.max_unrolled
AUTO_WORK_RATIO = _choose.C.work_ratio
AUTO_COMPARE_MIN = _choose.C.compare_min
AUTO_WORK_PER_INSTRUCTION = _choose.C.work_per_instruction
AUTO_CALL_COST = _choose.C.call_cost


def choose_by_size(program: Program, trace_unrolled: Callable[[], Any]) -> tuple[str, str]:
    """``form="auto"`` of the C library: :func:`symdyn.codegen.choose.choose_by_size` with
    :data:`symdyn.codegen.choose.C`; ``trace_unrolled()`` returns the unrolled
    ``casadi.Function`` and is called only where the recorded work leaves it in question."""
    choice = _choose.choose_by_size(program.stats["work"],
                                    lambda: trace_unrolled().n_instructions(), _choose.C,
                                    calls=program.stats.get("n_calls", 0))
    return choice.form, choice.reason
