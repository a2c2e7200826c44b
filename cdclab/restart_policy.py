"""When the embedded supervisor restarts a service that died: pure bookkeeping, no I/O.

Like systemd's `Restart=always` with a growing delay, or Kubernetes' CrashLoopBackOff: the
first restart comes at once (one second), each further death soon after a start doubles
the wait up to a cap, and a service that ran for `stable_seconds` before dying starts the
count again. A start that fails counts as a death.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class RestartPolicy:
    first_delay: float = 1.0
    max_delay: float = 60.0
    stable_seconds: float = 60.0  # a run this long resets the back-off

    def delay(self, consecutive: int) -> float:
        """The wait before the restart that follows `consecutive` quick deaths (>= 1)."""
        exponent = min(max(consecutive, 1) - 1, 32)  # 2**32 s is far past any cap
        return min(self.max_delay, self.first_delay * 2.0 ** exponent)


@dataclass
class ServiceLife:
    """What the supervisor knows of one service's runs (kept in keeper.json)."""

    restarts: int = 0  # successful restarts by the supervisor
    consecutive: int = 0  # deaths since the service last ran stable_seconds
    started_at: float | None = None  # this run's start (or when first seen running)
    down_since: float | None = None  # set while the service is dead
    next_attempt_at: float | None = None
    last_death_at: float | None = None
    last_exit: int | None = None  # None: not known (not our child, or still starting)
    last_restart_at: float | None = None
    last_error: str | None = None  # the failed start's message, or the log's last line

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ServiceLife:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def is_down(self) -> bool:
        return self.down_since is not None


def seen_running(life: ServiceLife, now: float) -> None:
    """The service is up (we started it, or someone else did)."""
    if life.started_at is None or life.is_down:
        life.started_at = now
    life.down_since = None
    life.next_attempt_at = None


def died(life: ServiceLife, now: float, policy: RestartPolicy, exit_code: int | None,
         last_words: str | None) -> None:
    """The service was found dead: count it and schedule the restart."""
    quick = life.started_at is not None and now - life.started_at < policy.stable_seconds
    life.consecutive = life.consecutive + 1 if quick else 1
    life.down_since = life.last_death_at = now
    life.last_exit = exit_code
    life.last_error = last_words
    life.next_attempt_at = now + policy.delay(life.consecutive)


def restart_due(life: ServiceLife, now: float, policy: RestartPolicy | None = None) -> bool:
    """Down and its back-off waited out. An attempt time further ahead than the longest
    back-off means the wall clock stepped back since: due now, not in an hour."""
    if not life.is_down or life.next_attempt_at is None:
        return False
    wait = life.next_attempt_at - now
    return wait <= 0 or wait > (policy or RestartPolicy()).max_delay


def restarted(life: ServiceLife, now: float) -> None:
    life.restarts += 1
    life.last_restart_at = now
    life.started_at = now
    life.down_since = None
    life.next_attempt_at = None


def start_failed(life: ServiceLife, now: float, policy: RestartPolicy, error: str) -> None:
    """A restart attempt failed: wait longer before the next one."""
    life.consecutive += 1
    life.last_error = error
    life.next_attempt_at = now + policy.delay(life.consecutive)


def describe(life: ServiceLife, now: float) -> str:
    """One line for `cdclab status`: what happened and what comes next."""
    exit_text = (f"exit {life.last_exit}" if life.last_exit is not None
                 else "exit status unknown")
    if life.is_down:
        wait = max(0.0, (life.next_attempt_at or now) - now)
        why = f"; {life.last_error}" if life.last_error else ""
        return (f"died {now - (life.down_since or now):.0f}s ago ({exit_text}); restart "
                f"attempt {life.consecutive} in {wait:.0f}s{why}")
    if life.restarts and life.last_restart_at is not None:
        return (f"restarted {life.restarts}x by the supervisor, last "
                f"{now - life.last_restart_at:.0f}s ago after {exit_text}")
    return ""
