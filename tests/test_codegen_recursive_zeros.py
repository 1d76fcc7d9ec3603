"""The recursive form writes the entries off a tree's sparsity (literal zeros) as runs of stores:
every entry of every result is written, whatever the result memory held before (the vector
kernels leave them to the batch wrapper: tests/test_codegen_simd.py)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import requires_cc
from symdyn.algorithms import coriolis_matrix, rnea_derivatives
from symdyn.codegen.recursive import record
from symdyn.codegen.recursive.csource import _is_zero, _runs
from symdyn.models import random_tree

pytestmark = requires_cc


def test_runs_of_consecutive_entries():
    assert _runs([3]).tolist() == [3, 1]
    assert _runs([0, 1, 2, 7, 8, 20]).tolist() == [0, 3, 7, 2, 20, 1]


def test_shallow_tree_results_are_mostly_zero_runs():
    model = random_tree(12, seed=2)                    # branched: most blocks off the tree
    prog = record(model, coriolis_matrix, (model.nq, model.nv), name="c", frame="root")
    zeros = sum(_is_zero(prog, c) for _, codes, _, _ in prog.outputs for c in codes.tolist())
    assert zeros > 0.3 * 3 * model.nv ** 2


@pytest.mark.parametrize("alg", ["coriolis_matrix", "rnea_derivatives"])
def test_every_entry_is_written_into_dirty_memory(tmp_path, alg):
    from symdyn.codegen import build

    model = random_tree(12, seed=2)
    lib = build(model, [alg], form="recursive", opt="-O1", cache_dir=tmp_path, progress=False)
    f = lib[alg]
    rng = np.random.default_rng(3)
    n = 5
    Q = np.stack([model.random_q(rng) for _ in range(n)])
    QD, QDD = rng.uniform(-1, 1, (n, model.nv)), rng.uniform(-1, 1, (n, model.nv))
    args = (Q, QD) if alg == "coriolis_matrix" else (Q, QD, QDD)
    outs = tuple(np.full((n, *s), np.nan) for s in f.output_shapes)   # dirty result memory
    f.batch(*args, out=outs, threads=1, stream=False)
    fn = coriolis_matrix if alg == "coriolis_matrix" else rnea_derivatives
    for s in range(n):
        ref = fn(model, *(a[s] for a in args))
        for got, want in zip(outs, ref):
            assert not np.isnan(got[s]).any()
            np.testing.assert_allclose(got[s], want, atol=1e-10)
