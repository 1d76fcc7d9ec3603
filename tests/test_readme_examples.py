"""The Python blocks of the README and of the user guide's "Examples" section run and do what
the text says; the README stays a guide (its size, and no run logs)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"


def example_blocks() -> list[str]:
    text = GUIDE.read_text()
    start = text.index("\n## Examples\n")
    end = text.find("\n## ", start + 1)
    end = len(text) if end < 0 else end                          # the next section, or the end
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def run_block(source: str) -> dict:
    ns: dict = {"__name__": "readme_example"}
    exec(compile(source, str(GUIDE), "exec"), ns)
    return ns


def test_examples_section_has_both_blocks():
    blocks = example_blocks()
    assert len(blocks) == 2
    assert "casadi" in blocks[0] and "Opti" in blocks[0]
    assert "slotine_li_regressor" in blocks[1]


@pytest.mark.slow
def test_trajectory_optimisation_example(capsys):
    ca = pytest.importorskip("casadi")
    try:
        x = ca.SX.sym("x")
        ca.nlpsol("probe", "ipopt", {"x": x, "f": x ** 2})
    except RuntimeError:
        pytest.skip("CasADi without the ipopt plugin")
    ns = run_block(example_blocks()[0])
    assert "final hand position error" in capsys.readouterr().out
    assert ns["err"] < 1e-6
    lim, sol, X, U, nv = ns["lim"], ns["sol"], ns["X"], ns["U"], ns["nv"]
    x, u = sol.value(X), sol.value(U)
    tol = 1e-6
    # the limits hold at every node (opti.bounded broadcasts the per-joint vectors over columns)
    assert np.all(x[:nv] >= lim.lower[:, None] - tol) and np.all(x[:nv] <= lim.upper[:, None] + tol)
    assert np.all(np.abs(x[nv:]) <= lim.velocity[:, None] + tol)
    assert np.all(np.abs(u) <= lim.effort[:, None] + tol)
    assert np.allclose(x[:, 0], np.r_[ns["q0"], np.zeros(nv)], atol=tol)


def test_adaptive_control_example(capsys):
    ns = run_block(example_blocks()[1])
    assert "RMS |q - q_des| per second" in capsys.readouterr().out
    rms = ns["rms"]
    assert all(b < a for a, b in zip(rms, rms[1:]))          # decreasing second by second
    assert rms[-1] < 0.1 * rms[0]


def test_readme_python_blocks_run(capsys):
    """Every Python block of the README runs as written (the quick start prints True)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    for source in blocks:
        exec(compile(source, str(README), "exec"), {"__name__": "readme_block"})
    assert "True" in capsys.readouterr().out


# Patterns of a lab notebook, not of a user's guide: commit ids, run-by-run narration, hosts,
# scratch paths, history.
_LOG_PATTERNS = {
    "a commit id": r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b",
    "run narration": r"(?i)\b(measured on|load average|loaded machine|latest run|run before|"
                     r"earlier (run|host)|this (host|machine)|interleaved)\b",
    "a scratch path": r"/tmp/",
    "history": r"(?i)\b(formerly|used to be|no longer|was \d)",
}
# In the package's source, a run's figures: "a -> b us", CPUs, machine loads. Constants give a
# one-line reason and name the experiment that measures them instead.
_CODE_LOG_PATTERNS = {
    **{k: v for k, v in _LOG_PATTERNS.items() if k != "a commit id"},
    "a commit id": r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w.+-])",
    "a run's timings": r"\b\d+(\.\d+)? ?((->|vs\.?|against) ?\d+(\.\d+)? ?(us|ns|ms|s)\b|"
                       r"(us|ns|ms) (a|per) (call|state|evaluation|entry))",
    "a host": r"(?i)\b(amd epyc|intel\(r\)|\d-core|idle machine|at a load of|load \d)",
    "an issue number": r"(?i)\bissue \d+",
}


@pytest.mark.parametrize("path", [README, GUIDE], ids=["README", "guide"])
def test_user_docs_read_as_a_guide_not_a_log(path):
    text = path.read_text()
    if path == README:
        assert len(text.splitlines()) <= 200, "README.md should stay a guide of about 200 lines"
    found = {what: re.findall(pat, text) for what, pat in _LOG_PATTERNS.items()}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"{path.name} reads like a log: {found}"


def test_package_source_reads_as_code_not_a_log():
    hits = []
    for path in sorted([*ROOT.joinpath("symdyn").rglob("*.py"), *ROOT.joinpath("symdyn").rglob("*.c")]):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for what, pat in _CODE_LOG_PATTERNS.items():
                if re.search(pat, line):
                    hits.append(f"{path.relative_to(ROOT)}:{n}: {what}: {line.strip()[:90]}")
    assert not hits, "the package's source narrates runs:\n" + "\n".join(hits)
