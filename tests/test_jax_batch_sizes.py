"""symdyn.jax.compile_many(..., batch_sizes=B) with one integer B means (B,); other
non-sequences are refused with a TypeError naming batch_sizes (symdyn/jax/arguments.py)."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

import symdyn as sd  # noqa: E402
import symdyn.jax as sjax  # noqa: E402
from symdyn.jax.arguments import batch_sizes  # noqa: E402
from symdyn.models import serial_chain  # noqa: E402


@pytest.mark.parametrize("sizes, expected", [(5, (5,)), (np.int64(7), (7,)), ((4, 8), (4, 8)),
                                             ([3], (3,)), ((), ())])
def test_batch_sizes_accepts_an_integer(sizes, expected):
    assert batch_sizes(sizes) == expected


@pytest.mark.parametrize("bad", [5.0, "5", None, True, object()])
def test_batch_sizes_refuses_non_integers(bad):
    with pytest.raises(TypeError, match="batch_sizes"):
        batch_sizes(bad)


def test_compile_many_with_one_integer_batch_size():
    model = serial_chain(2)
    fs = sjax.compile_many(model, ["rnea"], batch_sizes=5, workers=1)
    rng = np.random.default_rng(0)
    Q, QD, QDD = (rng.uniform(-1, 1, (5, 2)) for _ in range(3))
    tau = np.asarray(fs["rnea"](Q, QD, QDD))
    np.testing.assert_allclose(tau[0], sd.rnea(model, Q[0], QD[0], QDD[0]), atol=1e-12)
    with pytest.raises(TypeError, match="batch_sizes"):
        sjax.compile_many(model, ["rnea"], batch_sizes=5.0)
