"""C identifiers from arbitrary model and robot names."""
from __future__ import annotations

import hashlib
import re

# C keywords (C11 and common extensions) and names the generated code itself uses.
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary asm typeof main casadi_real casadi_int
""".split())

MAX_LEN = 48


def c_identifier(name: str, fallback: str = "model") -> str:
    """A valid, non-reserved C identifier derived from ``name``.

    Characters outside ``[A-Za-z0-9_]`` become ``_`` (runs collapsed), a leading digit or
    underscore gets an ``m`` prefix, reserved words and ``casadi*`` names get an ``m_`` prefix,
    and names longer than 48 characters are cut and suffixed with a hash of the original, so that
    distinct long names stay distinct. An empty result falls back to ``fallback``.
    """
    s = re.sub(r"[^A-Za-z0-9_]+", "_", str(name)).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s:
        s = fallback
    if s[0].isdigit():
        s = "m" + s
    if s in _RESERVED or s.lower().startswith("casadi"):
        s = "m_" + s
    if len(s) > MAX_LEN:
        digest = hashlib.sha256(str(name).encode()).hexdigest()[:8]
        s = s[:MAX_LEN - 9].rstrip("_") + "_" + digest
    return s
