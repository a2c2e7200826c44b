"""Polling for a condition in tests: one helper, so every timeout says what it awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 60.0, what: str = "it",
             every: float = 0.2) -> T:
    """Call `check` every `every` seconds until it returns something truthy; return that.
    Fails the test after `timeout` seconds, naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
