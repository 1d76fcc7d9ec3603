"""Sphinx configuration for the symdyn API reference.

Build (warnings are errors, as in CI)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
from __future__ import annotations

import os
import sys

# Document the checkout this file belongs to, installed or not.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import symdyn  # noqa: E402

project = "symdyn"
author = "symdyn developers"
release = version = symdyn.__version__
copyright = "symdyn developers"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]

# Docstrings are short prose with NumPy/Google-style sections in places.
napoleon_google_docstring = True
napoleon_numpy_docstring = True
# Signatures show the annotations; they are not cross-referenced in the descriptions, so
# backend array aliases (Any) and third-party types never become unresolved references.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_preserve_defaults = True
# Keep the names of symdyn's type aliases in signatures (they are typing.Any underneath).
autodoc_type_aliases = {
    "Array": "symdyn.types.Array",
    "Backend": "symdyn.types.Backend",
    "ExternalForces": "symdyn.types.ExternalForces",
    "Seed": "symdyn.types.Seed",
}
nitpicky = False

exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
