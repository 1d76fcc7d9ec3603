"""Progress messages of long code-generation work (tracing, C generation, compiling).

``progress`` arguments of :func:`symdyn.codegen.build` and friends:

* ``True``: every message to stderr; ``False``: none; a callable: every message to it.
* ``None`` (default): on a terminal, messages start once the build has run for more than 2 s or
  a step is known to be slow (a quick cache hit stays silent). When stderr is *not* a terminal
  (a log file, CI) the same messages go out, plus a ``still ...`` line every
  :data:`HEARTBEAT_LOG` seconds while one step (tracing a big graph, writing its C, compiling)
  runs, so that a log never stays silent for minutes.

Every message also goes to the ``symdyn.codegen`` logger.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Any, Callable, Iterator

log = logging.getLogger("symdyn.codegen")

PROGRESS_AFTER = 2.0     # seconds before automatic messages start
HEARTBEAT_TTY = 5.0      # seconds between "still ..." lines on a terminal
HEARTBEAT_LOG = 10.0     # ... and in a log (stderr not a terminal)


def _stderr_is_tty() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


class Progress:
    """Progress messages of one build (see the module docstring for ``mode``)."""

    def __init__(self, mode: bool | None | Callable[[str], Any], label: str):
        self.mode, self.label, self.t0 = mode, label, time.perf_counter()
        self._lock = threading.Lock()

    @property
    def heartbeat(self) -> float:
        """Seconds between ``still ...`` lines during one step."""
        return HEARTBEAT_TTY if _stderr_is_tty() else HEARTBEAT_LOG

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def shown(self, slow: bool = False) -> bool:
        """Whether a message (``slow``: of a step known to be slow) is shown now."""
        if callable(self.mode):
            return True
        if self.mode is None:
            return slow or self.elapsed() > PROGRESS_AFTER
        return bool(self.mode)

    def __call__(self, msg: str, slow: bool = False) -> None:
        text = f"[symdyn codegen {self.label} {self.elapsed():6.1f}s] {msg}"
        log.info(text)
        with self._lock:
            if callable(self.mode):
                self.mode(text)
            elif self.shown(slow):
                print(text, file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def step(self, what: str, slow: bool = False, interval: float | None = None) -> Iterator[None]:
        """Announce ``what`` and, while the block runs, print ``still <what> (Ns)`` every
        ``interval`` seconds (default :attr:`heartbeat`) from a daemon thread."""
        self(what, slow=slow)
        if self.mode is False:
            yield
            return
        interval = self.heartbeat if interval is None else float(interval)
        done = threading.Event()
        t0 = time.perf_counter()

        def beat():
            while not done.wait(interval):
                self(f"still {what} ({time.perf_counter() - t0:.0f}s)", slow=True)

        thread = threading.Thread(target=beat, name="symdyn-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
