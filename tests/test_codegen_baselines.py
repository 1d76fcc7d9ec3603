"""The derivative baselines of papers 003/004 (RNEA_CR, ABA_CR, FD_CR, body-coordinate IDSVA, the
ancestor loop) compile like every registered algorithm and equal the analytical ones."""
from __future__ import annotations

import numpy as np
import pytest

import symdyn as sd
from symdyn.codegen import available_algorithms, build
from symdyn.models import random_tree

from conftest import requires_cc  # the build's own compiler lookup

pytestmark = requires_cc

BASELINES = ["rnea_derivatives_cr", "aba_derivatives_cr", "fd_derivatives_cr",
             "rnea_derivatives_body", "rnea_derivatives_ancestor"]


def test_baselines_are_a_group():
    assert available_algorithms("baselines") == BASELINES
    assert not set(BASELINES) & set(available_algorithms())


def test_compiled_baselines_equal_the_analytical_derivatives(tmp_path):
    model = random_tree(4, seed=2, joint_kinds=("revolute", "prismatic", "spherical"),
                        floating_base=True)
    lib = build(model, BASELINES, cache_dir=tmp_path, progress=False)
    rng = np.random.default_rng(0)
    q, qd, a = model.random_q(rng), rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
    ref_id = sd.rnea_derivatives(model, q, qd, a)
    ref_fd = sd.aba_derivatives(model, q, qd, a)
    for name in BASELINES:
        ref = ref_fd if name in ("aba_derivatives_cr", "fd_derivatives_cr") else ref_id
        out = getattr(lib, name)(q, qd, a)
        assert len(out) == len(ref)
        for x, y in zip(out, ref):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10 * max(1, np.abs(y).max()))


def test_aba_derivatives_auto_method_follows_the_graph_sizes(monkeypatch):
    """method='auto' in generated code traces the routes of AUTO_METHODS and keeps the smallest
    graph, AZA's weighted by 1 / AZA_MAX_RATIO (the measured crossover), recording the choice."""
    import symdyn.codegen.functions as fns
    from symdyn.codegen import casadi_function
    from symdyn.models import paper004_chain

    model = paper004_chain(6)
    sizes = {m: casadi_function(model, "aba_derivatives", method=m).n_instructions()
             for m in fns.AUTO_METHODS}
    info: dict = {}
    f = casadi_function(model, "aba_derivatives", info=info)
    weighted = {m: n / (fns.AZA_MAX_RATIO if m == "aza" else 1.0) for m, n in sizes.items()}
    expect = min(weighted, key=weighted.get)
    assert info["method"] == expect and f.n_instructions() == sizes[expect]
    monkeypatch.setattr(fns, "AZA_MAX_RATIO", 10.0)          # AZA always "small enough"
    info = {}
    casadi_function(model, "aba_derivatives", info=info)
    assert info["method"] == "aza"
    info = {}
    casadi_function(model, "aba_derivatives", method="dmm", info=info)
    assert "method" not in info                              # an explicit method is kept
