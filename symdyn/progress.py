"""Progress messages of long work: building and simplifying closed forms (:mod:`symdyn.symbolic`),
tracing, generating C and compiling (:mod:`symdyn.codegen`).

Messages are lines ``"<label>: <message>"``. On a terminal a message within a step rewrites one
status line in place (``\\r``). Anywhere else (a log file, CI, a pipe) rewriting makes no sense
and silence for many minutes reads as a hang, so whole lines are printed instead: one when each
step starts and ends, and within a long loop or a long single step at most one every
``interval`` seconds (10 s by default), e.g.::

    christoffel of planar8: building expressions (symengine, algorithm2)
    christoffel of planar8: still building expressions (10 s)
    christoffel of planar8: built the expressions in 14.2 s
    christoffel of planar8: simplifying 288 entries
    christoffel of planar8: simplified 97/288 entries (10.0 s)
    christoffel of planar8: simplified 288/288 entries in 31.7 s

The ``progress`` argument of the functions that take one (:func:`make_progress`): ``True``
every message on stderr; ``False`` none; a callable, every line passed to it; ``None``
(automatic, the default of :func:`symdyn.codegen.build`): messages start once the job has run
for :data:`AUTO_AFTER` seconds or for a step known to be slow (a quick cache hit stays silent);
or a :class:`Progress` (another stream or interval). Every message also goes to the
``symdyn.progress`` logger.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TextIO

log = logging.getLogger("symdyn.progress")

DEFAULT_INTERVAL = 10.0   # seconds between lines within a step, in a log
HEARTBEAT_TTY = 5.0       # seconds between "still ..." messages on a terminal
AUTO_AFTER = 2.0          # mode None: seconds before messages start

Mode = bool | None | Callable[[str], Any]


class Progress:
    """Progress lines ``"<label>: <message>"`` of one job.

    ``mode``: who sees them (module docstring). ``stream``: where they go (default
    ``sys.stderr`` at the time of each message); ``tty`` forces the terminal or line mode
    (default: ``stream.isatty()``); ``interval``: the least time between two lines within a step
    in line mode (default :data:`DEFAULT_INTERVAL`, read when the Progress is made; on a terminal
    the status line is refreshed at most 10 times a second). ``clock``: seconds (for tests)."""

    def __init__(self, label: str = "symdyn", mode: Mode = True, *, stream: TextIO | None = None,
                 interval: float | None = None, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        interval = DEFAULT_INTERVAL if interval is None else interval
        if isinstance(interval, bool) or not (isinstance(interval, (int, float)) and interval >= 0):
            raise ValueError(f"progress interval must be a number >= 0 (seconds), got {interval!r}")
        if not (mode is None or isinstance(mode, bool) or callable(mode)):
            raise TypeError(f"progress mode must be True, False, None or a callable, got "
                            f"{type(mode).__name__}")
        self.label, self.mode = label, mode
        self._stream, self._tty = stream, tty
        self.interval = float(interval)
        self.clock = clock
        self.t0 = clock()
        self._last = -float("inf")      # time of the last line within the current step
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

    @property
    def heartbeat(self) -> float:
        """Seconds between ``still ...`` messages during one step."""
        return HEARTBEAT_TTY if self.tty else self.interval

    def elapsed(self) -> float:
        """Seconds since the Progress was made."""
        return self.clock() - self.t0

    def shown(self, slow: bool = False) -> bool:
        """Whether a message (``slow``: of a step known to be slow) is shown now."""
        if self.mode is None:
            return slow or self.elapsed() > AUTO_AFTER
        return self.mode is not False

    def _write(self, text: str, status: bool = False, slow: bool = False) -> None:
        """A whole line, or (terminal, ``status``) the rewritable status line."""
        line = f"{self.label}: {text}"
        log.info(line)
        with self._lock:
            if callable(self.mode):
                self.mode(line)
                return
            if not self.shown(slow):
                return
            s = self.stream
            if self.tty and status:
                s.write(f"\r\033[K{line}")
                self._open = True
            else:
                if self._open and self.tty:
                    s.write("\r\033[K")
                self._open = False
                s.write(line + "\n")
            s.flush()

    def line(self, text: str, slow: bool = False) -> None:
        """A step message: printed as a whole line (``slow``: shown in automatic mode too)."""
        self._write(text, slow=slow)
        self._last = self.clock()

    __call__ = line

    def update(self, text: str, final: bool = False, slow: bool = False) -> None:
        """A message within a step: on a terminal the status line (at most 10 per second), in
        line mode a line at most every ``interval`` seconds; ``final`` always prints a line."""
        now = self.clock()
        if final:
            self._write(text, slow=slow)
            self._last = now
            return
        if now - self._last >= (0.1 if self.tty else self.interval):
            self._write(text, status=True, slow=slow)
            self._last = now

    # --- steps -----------------------------------------------------------------------------------
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
    def running(self, what: str, detail: str = "", *, slow: bool = False,
                interval: float | None = None) -> Iterator[None]:
        """A single long step (building expressions, compiling): a start line, then
        ``still <what> (N s)`` every ``interval`` seconds (default :attr:`heartbeat`) from a
        background thread until the step returns; ``slow`` as in :meth:`line`."""
        self.line(f"{what}" + (f" ({detail})" if detail else ""), slow=slow)
        if self.mode is False:
            yield
            return
        t0 = self.clock()
        period = self.heartbeat if interval is None else float(interval)
        stop = threading.Event()

        def beat():
            while not stop.wait(period if period > 0 else 1.0):
                self.update(f"still {what} ({self.clock() - t0:.0f} s)", slow=True)

        thread = threading.Thread(target=beat, name="symdyn-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    step = running


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


def make_progress(progress: Mode | Progress, label: str) -> Progress:
    """A ``progress`` argument (module docstring) -> a :class:`Progress` labelled ``label``
    (a given Progress keeps a label of its own and takes ``label`` in place of the default)."""
    if isinstance(progress, Progress):
        if progress.label == "symdyn":
            progress.label = label
        return progress
    if progress is None or isinstance(progress, bool) or callable(progress):
        return Progress(label, progress)
    raise TypeError(f"progress must be True, False, None, a callable or a symdyn.progress.Progress, "
                    f"got {type(progress).__name__}")
