"""The embedded stack's keeper: restarts any wanted service that dies, with back-off.

`cdclab up` starts it (python -m cdclab.keeper); `cdclab down` stops it first. Every
second it takes the stack lock, looks at each service `up` asked for, and restarts the
dead ones when restart_policy says so. What it saw goes to keeper.json, which
`cdclab status` shows; what it did goes to logs/keeper.log. Every 30 s it also rotates
the logs (log_rotation), so a stack left running keeps bounded logs. The containers' equivalent is
compose's `restart: unless-stopped`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from datetime import UTC, datetime

from cdclab.log_rotation import rotate_all
from cdclab.restart_policy import (
    RestartPolicy,
    ServiceLife,
    died,
    restart_due,
    restarted,
    seen_running,
    start_failed,
)
from cdclab.services.base import tail_lines
from cdclab.supervisor import KEEPER, Stack
from pipeline_contract import settings

PASS_SECONDS = 1.0
MAX_FAILED_PASS_WAIT = 10.0  # a pass that failed (a full disk) is tried again, backing off
ROTATE_EVERY_SECONDS = 30.0  # log sizes are checked this often (log_rotation)
MAX_ERROR_CHARS = 400


def log(msg: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # its log may be on a full disk too: keeping the services matters more
    with contextlib.suppress(OSError):
        print(f"{stamp} keeper: {msg}", flush=True)


def last_log_line(stack: Stack, name: str) -> str | None:
    """The dead service's last words, from the end of its log."""
    try:
        lines = [x for x in tail_lines(stack.ctx.log_path(name), 20) if x.strip()]
    except OSError:
        return None
    return lines[-1][-MAX_ERROR_CHARS:] if lines else None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:MAX_ERROR_CHARS]


class Keeper:
    def __init__(self, stack: Stack, policy: RestartPolicy | None = None):
        self.stack = stack
        self.policy = policy or RestartPolicy()

    def still_in_charge(self) -> bool:
        """False once `down` stopped everything or another keeper was started."""
        return self.stack.pid_of(KEEPER) == os.getpid() and bool(self.stack.wanted())

    def tend(self) -> bool:
        """One pass; False when there is nothing left to keep."""
        if not self.stack.state_dir.is_dir():
            return False  # the state dir was removed: the stack is gone
        with self.stack.locked():
            if not self.still_in_charge():
                return False
            lives = self.stack.lives()
            before = {n: life.to_json() for n, life in lives.items()}
            wanted = self.stack.wanted()
            for name in list(lives):
                if name not in wanted:
                    del lives[name]
            for name in wanted:  # start order: infrastructure before the pipeline
                self.tend_one(name, lives.setdefault(name, ServiceLife()), wanted)
            if {n: life.to_json() for n, life in lives.items()} != before:
                self.stack.save_lives(lives)  # only on change: no fsync every second
        return True

    def tend_one(self, name: str, life: ServiceLife, wanted: list[str]) -> None:
        now = time.time()
        if self.stack.pid_of(name) is not None:
            seen_running(life, now)
            return
        if not life.is_down:
            words = last_log_line(self.stack, name)
            died(life, now, self.policy, self.stack.exit_code(name),
                 f"last log line: {words}" if words else None)
            exit_text = "unknown" if life.last_exit is None else life.last_exit
            log(f"{name} died (exit {exit_text}); restart in "
                f"{life.next_attempt_at - now:.0f}s (attempt {life.consecutive})")
        if not restart_due(life, now, self.policy):
            return
        # A service it needs is down too (killed together): that one comes back first, in
        # start order; starting this one now could only fail.
        waiting_for = self.stack.dependencies_down(name, among=wanted)
        if waiting_for:
            why = f"waiting for {', '.join(waiting_for)} to be back"
            if life.last_error != why:
                life.last_error = why
                log(f"{name}: {why}")
            return
        log(f"restarting {name} (attempt {life.consecutive})")
        try:
            self.stack.up([name], keep=False)
        except Exception as exc:  # any failure to start is retried later, never fatal
            start_failed(life, time.time(), self.policy, first_line(exc))
            log(f"{name} did not start: {life.last_error}; next attempt in "
                f"{life.next_attempt_at - time.time():.0f}s")
        else:
            restarted(life, time.time())
            log(f"{name} is back (restart {life.restarts})")


def rotate_logs(stack: Stack) -> None:
    try:
        rotated = rotate_all(stack.state_dir / "logs")
    except OSError as exc:  # a full disk must not stop the restarts
        log(f"log rotation failed: {exc}")
        return
    if rotated:
        log(f"rotated {', '.join(rotated)}")


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    stack = Stack(settings.state_dir(), progress=log, pipeline=settings.load_pipeline())
    keeper = Keeper(stack)
    log(f"keeping {', '.join(stack.wanted()) or 'nothing'} in {stack.state_dir}")
    last_rotation, failed = 0.0, 0
    while True:
        try:
            if not keeper.tend():
                break
            failed = 0
        except Exception as exc:  # e.g. ENOSPC writing keeper.json: never the keeper's end
            failed += 1
            log(f"pass failed ({first_line(exc)}); trying again (`cdclab status` shows the "
                "disk space left)")
        if time.monotonic() - last_rotation > ROTATE_EVERY_SECONDS:
            rotate_logs(stack)
            last_rotation = time.monotonic()
        time.sleep(min(MAX_FAILED_PASS_WAIT, PASS_SECONDS * 2 ** failed))
    log("nothing left to keep; exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
