"""Progress messages of long symbolic work (building expressions, simplifying them).

On a terminal one status line is rewritten in place (``\\r``). Anywhere else (a log file, CI, a
pipe) rewriting makes no sense and silence for many minutes reads as a hang, so whole lines are
printed instead: one when each stage starts and ends, and within a long loop or a long single step
at most one every ``interval`` seconds (10 s by default), e.g.::

    christoffel of planar8: building expressions (symengine, algorithm2)
    christoffel of planar8: still building expressions (10 s)
    christoffel of planar8: built 288 entries in 14.2 s
    christoffel of planar8: simplifying 288 entries
    christoffel of planar8: simplified 97/288 entries (10.0 s)
    christoffel of planar8: simplified 288/288 entries in 31.7 s

The functions of :mod:`symdyn.symbolic.core` take ``progress=True`` (this, on stderr), ``False``
(nothing, the default of the Python API) or a :class:`Progress` (another stream or interval). The
``symdyn christoffel|coriolis|mass-matrix --symbolic`` commands show progress unless ``--quiet``.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

DEFAULT_INTERVAL = 10.0


class Progress:
    """Progress lines ``"<label>: <message>"`` on ``stream`` (default: ``sys.stderr`` at the time
    of each message). ``tty`` forces the terminal or line mode (default: ``stream.isatty()``);
    ``interval`` is the least time between two lines within a stage in line mode (on a terminal
    the status line is refreshed at most 10 times a second)."""

    def __init__(self, label: str = "symdyn", stream: TextIO | None = None,
                 interval: float = DEFAULT_INTERVAL, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        if not (isinstance(interval, (int, float)) and interval >= 0):
            raise ValueError(f"progress interval must be a number >= 0 (seconds), got {interval!r}")
        self.label = label
        self._stream = stream
        self.interval = float(interval)
        self._tty = tty
        self.clock = clock
        self._last = -float("inf")      # time of the last line within the current stage
        self._open = False              # a terminal status line is being rewritten
        self._lock = threading.Lock()

    # --- output ----------------------------------------------------------------------------------
    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):  # closed or file-like without isatty
            return False

    def _write(self, text: str, status: bool = False) -> None:
        """A whole line, or (terminal, ``status``) the rewritable status line."""
        with self._lock:
            s = self.stream
            if self.tty and status:
                s.write(f"\r\033[K{self.label}: {text}")
                self._open = True
            else:
                if self._open and self.tty:
                    s.write("\r\033[K")
                self._open = False
                s.write(f"{self.label}: {text}\n")
            s.flush()

    def line(self, text: str) -> None:
        """A stage message: always printed, as a whole line."""
        self._write(text)
        self._last = self.clock()

    def update(self, text: str, final: bool = False) -> None:
        """A message within a stage: on a terminal the status line (at most 10 per second), in
        line mode a line at most every ``interval`` seconds; ``final`` always prints a line."""
        now = self.clock()
        if final:
            self._write(text)
            self._last = now
            return
        wait = 0.1 if self.tty else self.interval
        if now - self._last >= wait:
            self._write(text, status=True)
            self._last = now

    # --- helpers for the symbolic functions ------------------------------------------------------
    def loop(self, what: str, total: int, unit: str = "entries") -> Callable[[int], None]:
        """A ``report(done)`` for a loop over ``total`` items (``unit``: what they are): a start
        line, periodic updates and an end line with the time taken."""
        t0 = self.clock()
        self.line(f"{what} {total} {unit}")

        def report(done: int) -> None:
            el = self.clock() - t0
            if done >= total:
                self.update(f"{_past(what)} {done}/{total} {unit} in {el:.1f} s", final=True)
            else:
                self.update(f"{_past(what)} {done}/{total} {unit} ({el:.1f} s)")
        return report

    @contextmanager
    def running(self, what: str, detail: str = "") -> Iterator[None]:
        """A single long step (e.g. building expressions): a start line, then a heartbeat every
        ``interval`` seconds (line mode; on a terminal the elapsed time every second) from a
        background thread until the step returns."""
        self.line(f"{what}" + (f" ({detail})" if detail else ""))
        t0 = self.clock()
        stop = threading.Event()
        period = 1.0 if self.tty else self.interval

        def beat():
            while not stop.wait(period if period > 0 else 1.0):
                self.update(f"still {what} ({self.clock() - t0:.0f} s)")

        thread = threading.Thread(target=beat, name="symdyn-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _past(what: str) -> str:
    """'simplifying' -> 'simplified', 'building' -> 'built' (for the periodic lines)."""
    irregular = {"building": "built"}
    if what in irregular:
        return irregular[what]
    if what.endswith("ying"):
        return what[:-4] + "ied"
    if what.endswith("ing"):
        return what[:-3] + "ed"
    return what


def make_progress(progress, label: str) -> Progress | None:
    """``progress`` argument of the symbolic functions -> a :class:`Progress` or None."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return Progress(label)
    if isinstance(progress, Progress):
        return progress if progress.label != "symdyn" else _relabel(progress, label)
    raise TypeError(f"progress must be True, False or a symdyn.symbolic.progress.Progress, got "
                    f"{type(progress).__name__}")


def _relabel(p: Progress, label: str) -> Progress:
    p.label = label
    return p
