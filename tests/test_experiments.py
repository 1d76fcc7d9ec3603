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
REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS_DIR = REPO / "experiments"


@pytest.fixture(scope="module")
def passivity():
    sys.path.insert(0, str(EXPERIMENTS_DIR))
    try:
        yield importlib.import_module("passivity")
    finally:
        sys.path.remove(str(EXPERIMENTS_DIR))


def test_list_names_every_experiment_and_script(capsys):
    assert ISSUE_EXPERIMENTS <= set(ex.EXPERIMENTS)
    for e in ex.EXPERIMENTS.values():
        assert (EXPERIMENTS_DIR / e.script).is_file(), e.script
        assert e.reports[0].endswith(".md")
    assert main(["experiments", "list"]) == 0
    out = capsys.readouterr().out
    for name in ex.EXPERIMENTS:
        assert name in out


def test_quick_run_writes_report_and_index(tmp_path, capsys):
    repo_runs = REPO / "reports" / "runs.json"
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


# --- where the runner finds the experiments (issue 12: never site-packages) ----------------------

FAKE_SCRIPT = """import argparse, pathlib
p = argparse.ArgumentParser()
p.add_argument("--quick", action="store_true")
p.add_argument("--out-dir")
a = p.parse_args()
out = pathlib.Path(a.out_dir)
out.mkdir(parents=True, exist_ok=True)
(out / "fake.md").write_text("# fake report\\n")
print("fake experiment ran")
"""


def _checkout(path: Path) -> Path:
    (path / "experiments").mkdir(parents=True)
    (path / "pyproject.toml").write_text("[project]\nname = 'symdyn'\n")
    (path / "experiments" / "_common.py").write_text("")
    (path / "experiments" / "fake.py").write_text(FAKE_SCRIPT)
    return path


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """As if symdyn were installed from a wheel: the package's parent is a site-packages
    directory without experiments/, the current directory is no checkout, no SYMDYN_ROOT."""
    site = tmp_path / "site-packages"
    (site / "symdyn").mkdir(parents=True)
    monkeypatch.setattr(ex, "_package_parent", lambda: site)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(ex.ROOT_ENV, raising=False)
    fake = ex.Experiment("fake", "fake.py", "a fake experiment", ("fake.md",), minutes=(0.1, 0.1))
    monkeypatch.setitem(ex.EXPERIMENTS, "fake", fake)
    return site


def _tree(path: Path) -> list:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_installed_package_refuses_clearly(installed, capsys):
    before = _tree(installed)
    assert main(["experiments", "run", "fake"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == f"symdyn experiments: error: {ex.NO_CHECKOUT}"
    assert "not part of the installed package" in err[0] and "--root" in err[0]
    assert main(["experiments", "list"]) == 0          # listing needs no checkout
    out = capsys.readouterr().out
    assert "fake" in out and "no source checkout found" in out
    assert _tree(installed) == before                   # nothing written next to the package


def test_root_option_runs_the_checkout_and_writes_its_reports(installed, tmp_path, capsys):
    repo = _checkout(tmp_path / "checkout")
    before = _tree(installed)
    assert main(["experiments", "run", "fake", "--root", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "fake experiment ran" in out and "[1/1] fake: ok" in out
    assert (repo / "reports" / "fake.md").read_text() == "# fake report\n"
    assert "[fake.md](fake.md)" in (repo / "reports" / "README.md").read_text()
    assert json.loads((repo / "reports" / "runs.json").read_text())["fake"]["preset"] == "full"
    assert _tree(installed) == before
    assert not (Path.cwd() / "reports").exists()


def test_environment_variable_and_current_directory(installed, tmp_path, monkeypatch, capsys):
    repo = _checkout(tmp_path / "checkout")
    monkeypatch.setenv(ex.ROOT_ENV, str(repo))
    assert ex.find_root() == repo.resolve()
    out_dir = tmp_path / "elsewhere"
    assert main(["experiments", "run", "fake", "--out-dir", str(out_dir)]) == 0
    assert (out_dir / "fake.md").is_file() and not (repo / "reports").exists()
    monkeypatch.delenv(ex.ROOT_ENV)
    monkeypatch.chdir(repo / "experiments")           # a subdirectory of the checkout
    assert ex.find_root() == repo.resolve()
    capsys.readouterr()


def test_explicit_root_that_is_not_a_checkout(installed, tmp_path, monkeypatch, capsys):
    assert main(["experiments", "run", "fake", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--root" in err and "is not a symdyn source checkout" in err and str(tmp_path) in err
    monkeypatch.setenv(ex.ROOT_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ex.CheckoutError, match="SYMDYN_ROOT .*nowhere"):
        ex.find_root()
    assert main(["experiments", "list"]) == 2          # a wrong explicit root is an error here too


def test_source_tree_is_found_from_the_package(tmp_path, monkeypatch):
    """An editable install (or the source tree on sys.path) finds its checkout from anywhere."""
    if ex._package_parent() != REPO:
        pytest.skip("symdyn is imported from an installed copy, not from this checkout")
    assert ex.is_checkout(REPO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ex.ROOT_ENV, raising=False)
    assert ex.find_root() == REPO


# --- provenance: the commit of each report, and the index's stale flag (issue 15) ----------------

def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_checkout(installed, tmp_path):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _checkout(tmp_path / "gitrepo")
    (repo / "symdyn").mkdir()
    (repo / "symdyn" / "core.py").write_text("X = 1\n")
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
    assert main(["experiments", "run", "fake", "--root", str(repo)]) == 0
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
    # an untracked module in symdyn/ is a source change too
    assert main(["experiments", "run", "fake", "--root", str(repo)]) == 0
    assert "stale" not in _index_row(repo)
    (repo / "symdyn" / "new.py").write_text("Y = 2\n")
    ex.write_index(repo / "reports", repo)
    assert "symdyn/new.py" in _index_row(repo)
    capsys.readouterr()


def test_dirty_report_is_flagged_dirty_and_stale_only_when_the_difference_changes(git_checkout,
                                                                                   capsys):
    repo = git_checkout
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "symdyn" / "core.py").write_text("X = 2\n")          # uncommitted source change
    assert main(["experiments", "run", "fake", "--root", str(repo)]) == 0
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
    st = ex.source_state(repo, "fake.py")
    assert st["dirty"] is False and len(st["fingerprint"]) == 64
    assert st["commit"][:12] in ex.describe_state(st) and "clean" in ex.describe_state(st)
    report = repo / "reports" / "fake.md"
    report.parent.mkdir(exist_ok=True)
    report.write_text("# r\n\n" + ex.describe_state(st) + "\n" + ex.state_marker(st) + "\n")
    back = ex.state_from_report(report)
    assert back["commit"] == st["commit"] and back["fingerprint"] == st["fingerprint"]
    assert ex.staleness(repo, "fake.py", back) is None
    (repo / "experiments" / "_common.py").write_text("# shared helpers changed\n")
    assert "experiments/_common.py" in ex.staleness(repo, "fake.py", back)
    # the index reads the marker of a report that the runner did not run (no runs.json), and its
    # date from the report's own stamp, not from the file (a fresh clone dates every file)
    ex.write_index(repo / "reports", repo)
    assert "stale: sources changed since" in _index_row(repo)
    assert "file dated" in _index_row(repo)                     # no stamp: the file's date
    report.write_text("# r\n\nRegenerate with `x`. Generated 2020-01-02 03:04 UTC in 5 s.\n\n"
                      + ex.describe_state(st) + "\n" + ex.state_marker(st) + "\n")
    assert ex.generated_stamp(report) == "2020-01-02 03:04 UTC"
    ex.write_index(repo / "reports", repo)
    assert "| 2020-01-02 03:04 UTC (run directly, not by the runner" in _index_row(repo)
    assert ex.generated_stamp(repo / "reports" / "missing.md") is None
    assert ex.source_state(repo.parent / "nowhere", "fake.py") is None     # no git checkout
    assert "unknown" in ex.describe_state(None)
