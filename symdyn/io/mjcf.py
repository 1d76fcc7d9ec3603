"""MJCF files: :func:`load_mjcf` compiles one with MuJoCo (optional extra ``mujoco``:
``pip install "symdyn[mujoco]"``) and converts the result with
:func:`symdyn.interop.mujoco.from_mujoco`, whose docstring lists the conventions mapped."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from ..interop.mujoco import MJCFError, MJCFWarning, from_mujoco, model_name, require_mujoco
from ..model import Model
from ..snapping import SNAP_TOLERANCE, check_snap_tolerance

__all__ = ["MJCFError", "MJCFWarning", "load_mjcf"]


def load_mjcf(source: str | os.PathLike[str], name: str | None = None,
              strict: bool = False, snap: float | None = SNAP_TOLERANCE) -> Model:
    """Compile an MJCF file (path, or an XML string starting with ``<``) with MuJoCo and convert
    it with :func:`from_mujoco`.

    ``snap``: rotation and joint-axis entries within this tolerance of 0, +1 or -1 are made exact,
    as :func:`symdyn.load_urdf` does (:meth:`Model.snapped <symdyn.model.Model.snapped>`; default
    :data:`symdyn.snapping.SNAP_TOLERANCE`, ``0`` or ``None``: MuJoCo's values as compiled).

    Raises ``FileNotFoundError`` for a missing path and :class:`MJCFError` naming the file, the
    element and the problem when MuJoCo cannot compile it (MuJoCo's own message, with the element
    and line) or symdyn cannot represent it."""
    snap = check_snap_tolerance(snap)
    mujoco = require_mujoco()
    if isinstance(source, str) and not source.strip():
        raise MJCFError("load_mjcf: the source is empty (expected a path or an XML string)")
    if isinstance(source, str) and source.lstrip().startswith("<"):
        label = "<MJCF string>"
        try:
            mj = mujoco.MjModel.from_xml_string(source)
        except ValueError as exc:
            raise MJCFError(f"{label}: MuJoCo could not compile it: {exc}") from None
    else:
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"MJCF file not found: {path}")
        label = str(path)
        try:
            mj = mujoco.MjModel.from_xml_path(label)
        except ValueError as exc:
            raise MJCFError(f"{label}: MuJoCo could not compile it: {exc}") from None
    if name is None:
        name = model_name(mj) or (Path(label).stem if label != "<MJCF string>" else "mjcf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MJCFWarning)
        model = from_mujoco(mj, name=name, strict=strict, source=label)
    for w in caught:  # re-issued so that they point at the caller
        warnings.warn(w.message, w.category, stacklevel=2)
    return model.snapped(snap) if snap else model
