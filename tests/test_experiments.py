"""The experiment runner (`symdyn experiments`) and the passivity study's key properties."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from symdyn import experiments as ex
from symdyn.cli import main

ISSUE_EXPERIMENTS = {"verification", "table1_timing", "derivatives_compiled", "passivity",
                     "com_coordinates"}


@pytest.fixture(scope="module")
def passivity():
    sys.path.insert(0, str(ex.EXPERIMENTS_DIR))
    try:
        yield importlib.import_module("passivity")
    finally:
        sys.path.remove(str(ex.EXPERIMENTS_DIR))


def test_list_names_every_experiment_and_script(capsys):
    assert ISSUE_EXPERIMENTS <= set(ex.EXPERIMENTS)
    for e in ex.EXPERIMENTS.values():
        assert (ex.EXPERIMENTS_DIR / e.script).is_file(), e.script
        assert e.reports[0].endswith(".md")
    assert main(["experiments", "list"]) == 0
    out = capsys.readouterr().out
    for name in ex.EXPERIMENTS:
        assert name in out


def test_quick_run_writes_report_and_index(tmp_path, capsys):
    repo_runs = ex.REPORTS_DIR / "runs.json"
    before = repo_runs.stat().st_mtime_ns if repo_runs.exists() else None
    rc = main(["experiments", "run", "com_coordinates", "--quick", "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "[1/1] com_coordinates: ok" in out          # progress lines
    md = (tmp_path / "com_coordinates.md").read_text()
    assert "Remark 6" in md and "Regenerate with `python experiments/com_coordinates.py --quick`" in md
    assert (tmp_path / "com_coordinates.png").stat().st_size > 10_000
    runs = json.loads((tmp_path / "runs.json").read_text())
    assert runs["com_coordinates"]["preset"] == "quick"
    index = (tmp_path / "README.md").read_text()
    assert "[com_coordinates.md](com_coordinates.md)" in index
    assert "symdyn experiments run com_coordinates --quick" in index
    assert "verification.md (not generated)" in index
    assert (repo_runs.stat().st_mtime_ns if repo_runs.exists() else None) == before


def test_bad_names_and_reports_only_scripts(tmp_path, capsys, monkeypatch):
    import dataclasses

    import symdyn.experiments as ex

    assert main(["experiments", "run", "no_such_experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["experiments", "run", "all", "verification"]) == 2
    # a script that can only write to reports/: with --out-dir it is skipped, not run
    fixed = dataclasses.replace(ex.EXPERIMENTS["coriolis_scaling"], name="reports_only",
                                out_option=None)
    monkeypatch.setitem(ex.EXPERIMENTS, "reports_only", fixed)
    rc = main(["experiments", "run", "reports_only", "--out-dir", str(tmp_path)])
    assert rc == 1
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "coriolis_scaling.md").exists()


def test_torsion_term_is_totally_skew_and_power_free(passivity):
    rng = np.random.default_rng(0)
    qd = rng.normal(size=3)
    Tt = passivity.torsion_tensor(3, {(0, 1, 2): 2.5})
    np.testing.assert_allclose(Tt @ qd, 2.5 * passivity.cross_matrix(qd), atol=1e-14)
    Tt = passivity.torsion_tensor(6, {c: rng.normal() for c in [(0, 1, 2), (1, 3, 5), (0, 2, 4)]})
    for perm, sign in (((1, 0, 2), -1), ((0, 2, 1), -1), ((2, 0, 1), 1)):
        np.testing.assert_allclose(Tt.transpose(perm), sign * Tt, atol=1e-14)
    qd = rng.normal(size=6)
    T = Tt @ qd
    np.testing.assert_allclose(T, -T.T, atol=1e-14)          # skew: Mdot - 2(C + T) stays skew
    np.testing.assert_allclose(T @ qd, 0, atol=1e-13)        # same dynamics: (C + T) qd = C qd
    assert np.abs(T).max() > 0.1


def test_passivity_short_horizon(passivity):
    """Exact parameters: V = 1/2 s^T M s decreases for C* and for C* + k [qd x], yet the torsion
    twists the path out of the plane. Mass mismatch: V's rate equals the torsion-free formula."""
    T, dt = 1.5, 5e-3
    r0 = passivity.run_point_mass(0.0, T, dt, compiled=False, mhat=passivity.PM["m"])
    r1 = passivity.run_point_mass(3.0, T, dt, compiled=False, mhat=passivity.PM["m"])
    for r in (r0, r1):
        assert np.all(np.diff(r.V) <= 1e-12)
        assert r.V[-1] < 0.5 * r.V[0]
    np.testing.assert_allclose(r0.q[:, 2], 0, atol=1e-12)        # C*: stays in the plane z = 0
    assert np.abs(r1.q[:, 2]).max() > 0.05                       # torsion: leaves it
    np.testing.assert_allclose(r1.V, r0.V, rtol=0.2, atol=1e-3)  # nearly identical V (Fig. 7)
    rm = passivity.run_point_mass(3.0, T, dt, compiled=False)    # mhat != m
    dV = np.gradient(rm.V, rm.t)[2:-2]
    assert np.abs(dV - rm.Vdot_formula[2:-2]).max() < 1e-3 * np.abs(rm.Vdot_formula).max()
    mismatch_term = rm.Vdot_formula + passivity.PM["K"] * (rm.s ** 2).sum(1)  # s^T Y a_tilde
    assert np.abs(mismatch_term).max() > 0.05   # the parameter error does enter V's rate
