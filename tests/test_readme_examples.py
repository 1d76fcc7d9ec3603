"""The Python blocks of the README's "Examples" section run and do what the text says."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def example_blocks() -> list[str]:
    text = README.read_text()
    start = text.index("\n## Examples\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def run_block(source: str) -> dict:
    ns: dict = {"__name__": "readme_example"}
    exec(compile(source, str(README), "exec"), ns)
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
