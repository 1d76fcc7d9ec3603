"""The report runner (experiments/runner.py), report provenance and staleness
(experiments/provenance.py), the passivity study's key properties and the solo12 trajectory
optimisation of experiments/solo12_ocp.py."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS_DIR = REPO / "experiments"
sys.path.insert(0, str(EXPERIMENTS_DIR))
import provenance as pv  # noqa: E402
import runner as ex  # noqa: E402

main = ex.main
ISSUE_EXPERIMENTS = {"verification", "table1_timing", "derivatives_compiled", "passivity",
                     "com_coordinates"}


@pytest.fixture(scope="module")
def passivity():
    return importlib.import_module("passivity")


def test_list_names_every_experiment_and_script(capsys):
    assert ISSUE_EXPERIMENTS <= set(ex.EXPERIMENTS)
    for e in ex.EXPERIMENTS.values():
        assert (EXPERIMENTS_DIR / e.script).is_file(), e.script
        assert e.reports[0].endswith(".md")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ex.EXPERIMENTS:
        assert name in out


def test_quick_run_writes_report_and_index(tmp_path, capsys):
    repo_runs = REPO / "reports" / "runs.json"
    before = repo_runs.stat().st_mtime_ns if repo_runs.exists() else None
    rc = main(["run", "com_coordinates", "--quick", "--out-dir", str(tmp_path)])
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
    assert "python experiments/runner.py run com_coordinates --quick" in index
    assert "verification.md (not generated)" in index
    assert (repo_runs.stat().st_mtime_ns if repo_runs.exists() else None) == before


def test_bad_names_and_reports_only_scripts(tmp_path, capsys, monkeypatch):
    import dataclasses

    assert main(["run", "no_such_experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["run", "all", "verification"]) == 2
    # a script that can only write to reports/: with --out-dir it is skipped, not run
    fixed = dataclasses.replace(ex.EXPERIMENTS["coriolis_scaling"], name="reports_only",
                                out_option=None)
    monkeypatch.setitem(ex.EXPERIMENTS, "reports_only", fixed)
    rc = main(["run", "reports_only", "--out-dir", str(tmp_path)])
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


# --- provenance: the commit of each report, and the index's stale flag -----------------------------

FAKE_SCRIPT = """import argparse, pathlib
p = argparse.ArgumentParser()
p.add_argument("--quick", action="store_true")
p.add_argument("--out-dir")
a = p.parse_args()
out = pathlib.Path(a.out_dir)
out.mkdir(parents=True, exist_ok=True)
(out / "fake.md").write_text("# fake report\\n")
print("fake experiment ran")


def _sources():      # never called: the runner reads what the script imports from its code
    import symdyn.core  # noqa: F401
"""


def _checkout(path: Path) -> Path:
    (path / "experiments").mkdir(parents=True)
    (path / "pyproject.toml").write_text("[project]\nname = 'symdyn'\n")
    (path / "experiments" / "_common.py").write_text("")
    (path / "experiments" / "fake.py").write_text(FAKE_SCRIPT)
    return path


@pytest.fixture
def fake_experiment(monkeypatch):
    fake = ex.Experiment("fake", "fake.py", "a fake experiment", ("fake.md",), minutes=(0.1, 0.1))
    monkeypatch.setitem(ex.EXPERIMENTS, "fake", fake)
def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_checkout(fake_experiment, tmp_path):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _checkout(tmp_path / "gitrepo")
    (repo / "symdyn").mkdir()
    (repo / "symdyn" / "__init__.py").write_text("")
    (repo / "symdyn" / "core.py").write_text("X = 1\n")
    (repo / "symdyn" / "unused.py").write_text("Z = 1\n")
    (repo / "README.txt").write_text("not a source of any report\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    return repo


def _index_row(repo: Path) -> str:
    return next(ln for ln in (repo / "reports" / "README.md").read_text().splitlines()
                if ln.startswith("| [fake.md]"))


def test_report_records_its_commit_and_index_flags_stale_sources(git_checkout, capsys):
    repo = git_checkout
    head = _git(repo, "rev-parse", "HEAD")
    assert main(["run", "fake", "--root", str(repo)]) == 0
    src = json.loads((repo / "reports" / "runs.json").read_text())["fake"]["source"]
    assert src["commit"] == head and src["dirty"] is False and src["changed"] == []
    row = _index_row(repo)
    assert f"`{head[:7]}`" in row and "stale" not in row and "dirty" not in row
    # a file outside the report's sources changes: still fresh
    (repo / "README.txt").write_text("edited\n")
    ex.write_index(repo / "reports", repo)
    assert "stale" not in _index_row(repo)
    # the script changes (uncommitted): stale, naming the file
    (repo / "experiments" / "fake.py").write_text(FAKE_SCRIPT + "# changed\n")
    ex.write_index(repo / "reports", repo)
    row = _index_row(repo)
    assert f"stale: sources changed since {head[:7]}" in row and "experiments/fake.py" in row
    # committing the change keeps it stale (the report still comes from the first commit)
    _git(repo, "commit", "-q", "-am", "second")
    ex.write_index(repo / "reports", repo)
    assert "stale: sources changed since" in _index_row(repo)
    # a module of symdyn/ the script does not import: still fresh; one it imports: stale
    assert main(["run", "fake", "--root", str(repo)]) == 0
    assert "stale" not in _index_row(repo)
    (repo / "symdyn" / "unused.py").write_text("Z = 2\n")
    (repo / "symdyn" / "new.py").write_text("Y = 2\n")
    ex.write_index(repo / "reports", repo)
    assert "stale" not in _index_row(repo)
    (repo / "symdyn" / "core.py").write_text("X = 5\n")
    ex.write_index(repo / "reports", repo)
    assert "symdyn/core.py" in _index_row(repo)
    capsys.readouterr()


def test_dirty_report_is_flagged_dirty_and_stale_only_when_the_difference_changes(git_checkout,
                                                                                   capsys):
    repo = git_checkout
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "symdyn" / "core.py").write_text("X = 2\n")          # uncommitted source change
    assert main(["run", "fake", "--root", str(repo)]) == 0
    src = json.loads((repo / "reports" / "runs.json").read_text())["fake"]["source"]
    assert src["commit"] == head and src["dirty"] is True and src["changed"] == ["symdyn/core.py"]
    row = _index_row(repo)
    assert "dirty" in row and "stale" not in row
    _git(repo, "commit", "-q", "-am", "commit the very change the report was made with")
    ex.write_index(repo / "reports", repo)
    assert "stale" not in _index_row(repo)
    (repo / "symdyn" / "core.py").write_text("X = 3\n")
    ex.write_index(repo / "reports", repo)
    assert "stale: sources changed since" in _index_row(repo)
    capsys.readouterr()


def test_report_header_and_marker_round_trip(git_checkout, monkeypatch):
    repo = git_checkout
    st = pv.source_state(repo, "fake.py")
    assert st["dirty"] is False and len(st["fingerprint"]) == 64
    assert st["commit"][:12] in pv.describe_state(st) and "clean" in pv.describe_state(st)
    report = repo / "reports" / "fake.md"
    report.parent.mkdir(exist_ok=True)
    report.write_text("# r\n\n" + pv.describe_state(st) + "\n" + pv.state_marker(st) + "\n")
    back = pv.state_from_report(report)
    assert back["commit"] == st["commit"] and back["fingerprint"] == st["fingerprint"]
    assert pv.staleness(repo, "fake.py", back) is None
    (repo / "experiments" / "fake.py").write_text(FAKE_SCRIPT + "# changed\n")
    assert "experiments/fake.py" in pv.staleness(repo, "fake.py", back)
    # the index reads the marker of a report that the runner did not run (no runs.json), and its
    # date from the report's own stamp, not from the file (a fresh clone dates every file)
    ex.write_index(repo / "reports", repo)
    assert "stale: sources changed since" in _index_row(repo)
    assert "file dated" in _index_row(repo)                     # no stamp: the file's date
    report.write_text("# r\n\nRegenerate with `x`. Generated 2020-01-02 03:04 UTC in 5 s.\n\n"
                      + pv.describe_state(st) + "\n" + pv.state_marker(st) + "\n")
    assert ex.generated_stamp(report) == "2020-01-02 03:04 UTC"
    ex.write_index(repo / "reports", repo)
    assert "| 2020-01-02 03:04 UTC (run directly, not by the runner" in _index_row(repo)
    assert ex.generated_stamp(repo / "reports" / "missing.md") is None
    assert pv.source_state(repo.parent / "nowhere", "fake.py") is None     # no git checkout
    assert "unknown" in pv.describe_state(None)


def test_sources_of_a_report_are_the_modules_its_script_imports():
    """Staleness follows what each experiment uses: the symbolic table does not depend on the C
    loader, the fast-path benchmark does; both depend on the core they import."""
    symbolic = pv.source_paths("table2_symbolic.py")
    fastpath = pv.source_paths("bench_fastpath.py")
    assert "experiments/table2_symbolic.py" in symbolic and "experiments/_common.py" in fastpath
    assert "symdyn/algorithms/christoffel.py" in symbolic and "symdyn/model.py" in symbolic
    assert "symdyn/codegen/loader.py" in fastpath
    assert "symdyn/codegen/loader.py" not in symbolic
    # the C source of the extension the loader compiles, named in fastcall.py
    assert "symdyn/codegen/_fastcall.c" in fastpath
    assert "symdyn/codegen/_fastcall.c" not in symbolic
    assert "symdyn/symbolic/core.py" in symbolic          # through symdyn.symbolic's lazy table
    # symdyn/__init__ imports every module; the NumPy verification reaches only what it names
    verification = pv.source_paths("verification.py")
    assert "symdyn/algorithms/coriolis.py" in verification
    assert not any(p.startswith(("symdyn/codegen/", "symdyn/contact/", "symdyn/jax/"))
                   for p in verification)
    assert all((REPO / p).is_file() for p in symbolic + fastpath)


def test_sources_follow_names_through_package_reexports(tmp_path):
    """``sd.X`` and ``from symdyn import X`` reach the module defining X, not every module the
    package's ``__init__`` imports; a bare use of the package (``getattr(sd, name)``) reaches them
    all; a module imported and never used is a source in full; a lazy package's name table is
    followed; provenance.py is no source."""
    root = _checkout(tmp_path / "repo")
    pkg = root / "symdyn"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .core import X\nfrom .other import Z\n"
                                     "from . import sub\n__version__ = '1'\n")
    (pkg / "core.py").write_text("from .helper import h\nX = h\n")
    (pkg / "helper.py").write_text("h = 1\n")
    (pkg / "other.py").write_text("Z = 1\n")
    (pkg / "sub" / "__init__.py").write_text("from .deep import D\nfrom .far import F\n")
    (pkg / "sub" / "deep.py").write_text("D = 1\n")
    (pkg / "sub" / "far.py").write_text("F = 1\n")
    (pkg / "lazy").mkdir()
    (pkg / "lazy" / "__init__.py").write_text(
        "import importlib\n_ATTRS = {'L': 'impl'}\n\ndef __getattr__(name):\n"
        "    return getattr(importlib.import_module(f'{__name__}.{_ATTRS[name]}'), name)\n")
    (pkg / "lazy" / "impl.py").write_text("L = 1\n")
    (root / "experiments" / "provenance.py").write_text("")
    scripts = {"attr.py": "import symdyn as sd\nprint(sd.X, sd.sub.D)\n",
               "from.py": "from symdyn import X, __version__\nfrom symdyn.sub import D\n",
               "bare.py": "import symdyn as sd\nprint(getattr(sd, 'X'))\n",
               "unused.py": "import symdyn.other  # noqa: F401\nimport provenance\n",
               "lazy.py": "from symdyn.lazy import L\n"}
    for name, text in scripts.items():
        (root / "experiments" / name).write_text(text)
    src = {name: set(pv.source_paths(name, root)) for name in scripts}
    assert src["attr.py"] == {"experiments/attr.py", "symdyn/core.py", "symdyn/helper.py",
                              "symdyn/sub/deep.py"}
    assert src["from.py"] == {"experiments/from.py", "symdyn/__init__.py", "symdyn/core.py",
                              "symdyn/helper.py", "symdyn/sub/deep.py"}
    assert {"symdyn/other.py", "symdyn/sub/far.py", "symdyn/__init__.py"} <= src["bare.py"]
    assert src["unused.py"] == {"experiments/unused.py", "symdyn/other.py"}
    assert src["lazy.py"] == {"experiments/lazy.py", "symdyn/lazy/impl.py"}   # PEP 562 table


# --- the solo12 trajectory optimisation (experiments/solo12_ocp.py) -------------------------------

@pytest.fixture(scope="module")
def solo12_ocp():
    import symdyn as sd

    if "solo12" not in sd.available_robots():
        pytest.skip("example-robot-data (solo12) is not installed")
    return importlib.import_module("solo12_ocp")


def test_solo12_ocp_euler_step_is_the_numpy_dynamics(solo12_ocp):
    """The SX step the Opti problem is built from equals sd.constraint_dynamics + sd.integrate
    on NumPy at a random state (moving base, quaternion off the identity)."""
    import symdyn as sd
    from symdyn.codegen import casadi_function

    ocp = solo12_ocp
    model = sd.load_robot("solo12")
    q0, feet = ocp.standing_state(model)
    np.testing.assert_allclose([p[2] for p in feet], 0.0, atol=1e-12)   # feet on the ground
    contacts = [sd.Contact(f, 3, "local_world_aligned", baumgarte=ocp.BAUMGARTE, target=tuple(p))
                for f, p in zip(ocp.FEET, feet)]
    dt = 0.05
    step = ocp.euler_step(model, casadi_function(model, "constraint_dynamics",
                                                 contacts=contacts), dt)
    rng = np.random.default_rng(3)
    q = model.random_q(rng)
    v, u = rng.uniform(-1, 1, model.nv), rng.uniform(-2, 2, 12)
    q_next, v_next, lam = (np.asarray(x, float).ravel() for x in step(q, v, u))
    qdd, lam_np = sd.constraint_dynamics(model, q, v, np.concatenate([np.zeros(6), u]), contacts)
    np.testing.assert_allclose(v_next, v + dt * qdd, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lam, lam_np, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q_next, sd.integrate(model, q, v_next, dt), rtol=1e-12, atol=1e-12)
    assert abs(np.linalg.norm(q_next[3:7]) - 1.0) < 1e-12
    with pytest.raises(ValueError, match="n >= 1"):
        ocp.build_problem(0)


@pytest.mark.slow
def test_solo12_ocp_tiny_horizon_solves_with_consistent_dynamics(solo12_ocp):
    """Three knots: IPOPT converges; the Euler steps, recomputed on NumPy at the returned
    solution, are violated by no more than the constraint violation IPOPT reports (inf_pr of
    its last iterate); the torque limits and friction cones hold."""
    ocp = solo12_ocp
    problem = ocp.build_problem(3, 0.05, max_iter=30)
    s = ocp.solve(problem)
    assert s.success, s.status
    assert 0 < s.iterations <= 30
    inf_pr = problem.opti.stats()["iterations"]["inf_pr"][-1]
    residual = ocp.dynamics_residual(problem, s)
    assert residual <= inf_pr + 1e-11 and residual < 1e-6, (residual, inf_pr)
    assert np.abs(s.U).max() <= ocp.U_MAX + 1e-6
    fz, fx, fy = s.lam[:, 2::3], s.lam[:, 0::3], s.lam[:, 1::3]
    assert fz.min() >= ocp.F_MIN - 1e-6
    assert np.all(np.abs(fx) <= ocp.MU * fz + 1e-6) and np.all(np.abs(fy) <= ocp.MU * fz + 1e-6)
    assert abs(s.Q[2, -1] - s.h_ref[-1]) < 0.02      # the base follows the height reference
    # a perturbed solution breaks the check: the residual is not vacuous
    bad = ocp.Solution(**{**s.__dict__, "U": s.U + 0.1})
    assert ocp.dynamics_residual(problem, bad) > 1e-4


# --- second-order derivatives (experiments/second_order.py) and DDP (experiments/ddp_arm.py) ---

@pytest.fixture(scope="module")
def second_order():
    return importlib.import_module("second_order")


@pytest.fixture(scope="module")
def ddp_arm():
    return importlib.import_module("ddp_arm")


@pytest.mark.parametrize("floating", [False, True])
def test_second_order_ad_routes_equal_so_idsva(second_order, floating):
    """Every CasADi AD route of the experiment gives symdyn's four tensors (rnea and aba), also in
    the tangent space of a floating base."""
    import symdyn as sd
    from symdyn.models import random_tree, serial_chain

    model = random_tree(2, seed=3, floating_base=True) if floating else serial_chain(2, seed=1)
    nv = model.nv
    rng = np.random.default_rng(0)
    q, v, x = model.random_q(rng), rng.normal(size=nv), rng.normal(size=nv)
    for alg, fn in (("rnea", sd.rnea_second_derivatives), ("aba", sd.aba_second_derivatives)):
        ref = fn(model, q, v, x)
        modes = second_order.AD_MODES if alg == "rnea" else ("jac_jac",)
        for mode in modes:
            f = second_order.ad_function(model, alg, mode)
            got = [np.array(o).reshape(nv, nv, nv, order="F") for o in f(q, v, x)]
            assert second_order.rel_diff(ref, got) < 1e-10, (alg, mode)
    with pytest.raises(ValueError, match="AD mode"):
        second_order.ad_function(model, "rnea", "reverse_twice")


@pytest.mark.slow
def test_second_order_measure_tiny_chain(second_order, tmp_path):
    """The whole per-model path on a 2-link chain: cold builds in child processes (time, CPU,
    memory recorded), the raw C call of symdyn's library, agreement with compiled AD."""
    r = second_order.measure("chain2", "rnea", tmp_path, np.random.default_rng(0), states=2,
                             repeat=3, timeout=300)
    assert r["err"] < 1e-12 and r["t_sd"] > 0 and r["t_ad"] > 0 and r["ratio"] > 0
    for b in (r["b_sd"], r["b_ad"]):
        assert b["t_wall"] > 0 and b["cpu"] > 0 and b["maxrss_mb"] > 10
    assert r["b_ad"]["mode"] in second_order.AD_MODES
    with pytest.raises(RuntimeError, match="over 0 s"):
        second_order.run_child("ad", "chain2", "rnea", tmp_path / "t", timeout=0.0)


def test_ddp_hessian_contraction_matches_finite_differences(ddp_arm):
    """sum_i w_i d^2 f_i of the discrete dynamics (from aba_second_derivatives) equals central
    differences of (f_x^T w, f_u^T w) built from the first-order derivatives."""
    from symdyn.models import serial_chain

    dyn = ddp_arm.ArmDynamics(serial_chain(2, seed=1))
    rng = np.random.default_rng(0)
    x, u, w, dt = rng.normal(size=4), rng.normal(size=2), rng.normal(size=4), 0.05
    Hxx, Hux, Huu = ddp_arm.step_hessian_contraction(dyn, x, u, w, dt)
    H = np.block([[Hxx, Hux.T], [Hux, Huu]])

    def grad(z):
        fx, fu = ddp_arm.step_jacobians(dyn, z[:4], z[4:], dt)
        return np.r_[fx.T @ w, fu.T @ w]

    z, e = np.r_[x, u], 1e-6
    fd = np.array([(grad(z + e * d) - grad(z - e * d)) / (2 * e) for d in np.eye(6)]).T
    assert np.abs(H - fd).max() < 1e-7 * np.abs(H).max()
    assert np.abs(H).max() > 1e-3           # the term is not vacuous
    fx, fu = ddp_arm.step_jacobians(dyn, x, u, dt)   # and f_x, f_u are the step's Jacobians
    J = np.array([(ddp_arm.step(dyn, z[:4] + e * d[:4], z[4:] + e * d[4:], dt)
                   - ddp_arm.step(dyn, z[:4] - e * d[:4], z[4:] - e * d[4:], dt)) / (2 * e)
                  for d in np.eye(6)]).T
    assert np.abs(np.hstack([fx, fu]) - J).max() < 1e-7 * np.abs(J).max()


def test_ddp_and_ilqr_decrease_the_cost_on_a_two_link_arm(ddp_arm):
    from symdyn.models import serial_chain

    dyn = ddp_arm.ArmDynamics(serial_chain(2, seed=1))
    p, U0 = ddp_arm.reach_problem(dyn, 5, 0.05)
    for second in (True, False):
        h = ddp_arm.solve(p, U0, second, max_iter=3)
        assert len(h.cost) == 4 and np.all(np.diff(h.cost) < 0), h.cost
        assert h.cost[-1] < 0.5 * h.cost[0]
        np.testing.assert_allclose(p.cost(p.rollout(h.U), h.U), h.cost[-1], rtol=1e-12)
    with pytest.raises(ValueError, match="fixed-base"):
        from symdyn.models import random_tree
        ddp_arm.ArmDynamics(random_tree(2, seed=0, floating_base=True))
