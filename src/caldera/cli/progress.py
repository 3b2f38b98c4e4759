"""A progress bar on stderr while manifests are read: only on a terminal, and only once reading
has taken a couple of seconds (a small input never shows one; piped or captured stderr never
does)."""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..api.reader import reading_progress

DELAY_S = 2.0


class LoadProgress:
    """A `reader.ReadProgress` callback drawing one bar per file, from DELAY_S seconds on."""

    def __init__(self, console: Any = None, delay: float = DELAY_S):
        self.console = console
        self.delay = delay
        self.start = time.monotonic()
        self.progress: Any = None
        self.tasks: dict[str, Any] = {}

    def __call__(self, source: str, done: int, total: int) -> None:
        if self.progress is None:
            if time.monotonic() - self.start < self.delay:
                return
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
            self.progress = Progress(TextColumn("reading {task.description}"), BarColumn(), TaskProgressColumn(),
                                     TimeRemainingColumn(), console=self.console or Console(stderr=True),
                                     transient=True)
            self.progress.start()
        task = self.tasks.get(source)
        if task is None:
            task = self.tasks[source] = self.progress.add_task(source, total=total)
        self.progress.update(task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@contextmanager
def loading(enabled: bool | None = None) -> Iterator[None]:
    """Within the block, reading manifests draws a progress bar when `enabled` (default: stderr
    is a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    bar = LoadProgress()
    try:
        with reading_progress(bar):
            yield
    finally:
        bar.close()
