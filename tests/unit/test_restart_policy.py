"""The keeper's back-off: pure bookkeeping of deaths, restarts and failed starts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.restart_policy import (
    RestartPolicy,
    ServiceLife,
    describe,
    died,
    restart_due,
    restarted,
    seen_running,
    start_failed,
)

POLICY = RestartPolicy(first_delay=1.0, max_delay=60.0, stable_seconds=60.0)


@given(st.integers(min_value=1, max_value=10_000))
def test_delay_doubles_from_the_first_up_to_the_cap(n: int) -> None:
    assert POLICY.delay(1) == 1.0
    assert POLICY.first_delay <= POLICY.delay(n) <= POLICY.max_delay
    assert POLICY.delay(n + 1) >= POLICY.delay(n)
    if POLICY.delay(n) < POLICY.max_delay:
        assert POLICY.delay(n + 1) == min(POLICY.max_delay, 2 * POLICY.delay(n))


# a service's history: ("run", seconds it ran before dying) or ("fail", a failed start)
events = st.lists(st.one_of(
    st.tuples(st.just("run"), st.floats(min_value=0, max_value=300)),
    st.tuples(st.just("fail"), st.just(0.0)),
), max_size=40)


@given(events)
def test_restarts_wait_the_policy_and_a_stable_run_resets_the_count(history) -> None:
    life, now = ServiceLife(), 1000.0
    seen_running(life, now)
    for kind, seconds in history:
        if kind == "run":  # restarted (if down), runs `seconds`, dies
            if life.is_down:
                before = life.restarts
                restarted(life, now)
                assert life.restarts == before + 1 and not life.is_down
                assert not restart_due(life, now + 1e6)
            was = life.consecutive
            now += seconds
            died(life, now, POLICY, -9, "killed")
            assert life.is_down and life.last_exit == -9
            assert life.consecutive == (was + 1 if seconds < POLICY.stable_seconds else 1)
        else:  # the restart attempt fails
            if not life.is_down:
                died(life, now, POLICY, None, None)
            was = life.consecutive
            start_failed(life, now, POLICY, "port busy")
            assert life.consecutive == was + 1 and life.last_error == "port busy"
        due = life.next_attempt_at
        assert due - now == pytest.approx(POLICY.delay(life.consecutive))
        assert not restart_due(life, due - 0.001) and restart_due(life, due)
        now = due


def test_describe_says_what_happened_and_what_comes_next() -> None:
    life = ServiceLife()
    seen_running(life, 0.0)
    assert describe(life, 5.0) == ""
    died(life, 10.0, POLICY, -9, "last log line: bye")
    text = describe(life, 10.5)
    assert "exit -9" in text and "attempt 1 in 0s" in text and "bye" in text
    restarted(life, 11.0)
    assert "restarted 1x" in describe(life, 20.0)
    died(life, 12.0, POLICY, None, None)
    text = describe(life, 12.0)
    assert "exit status unknown" in text and "attempt 2 in 2s" in text


def test_a_service_someone_else_started_is_no_longer_down() -> None:
    life = ServiceLife()
    died(life, 10.0, POLICY, 1, None)
    seen_running(life, 11.0)  # e.g. `cdclab up` ran before the keeper's attempt
    assert not life.is_down and life.started_at == 11.0 and not restart_due(life, 99.0)


def test_life_round_trips_through_json_and_ignores_unknown_keys() -> None:
    life = ServiceLife(restarts=3, consecutive=2, last_exit=-9, last_error="x")
    assert ServiceLife.from_json({**life.to_json(), "future_key": 1}) == life


def test_a_start_gives_up_at_once_when_what_it_needs_dies() -> None:
    """The keeper waits on a start under the stack lock: when postgres dies while the
    emitter starts, the wait ends at once, naming it, instead of after the emitter's
    300 s start-up timeout (while nothing restarts postgres)."""
    import time

    import pytest

    from cdclab.services.base import ServiceError, wait_until

    started = time.monotonic()
    with pytest.raises(ServiceError, match="postgres died while it was starting"):
        wait_until(lambda: False, 300, "emitter",
                   abort=lambda: "postgres died while it was starting")
    assert time.monotonic() - started < 5
    wait_until(lambda: True, 1, "emitter", abort=lambda: None)  # no reason: healthy wins


def test_a_start_waits_on_while_it_makes_progress_and_fails_once_it_stalls() -> None:
    """A full load takes as long as the table's size needs: each new progress restarts
    the wait; a load that stops moving fails one timeout after its last progress."""
    import time

    import pytest

    from cdclab.services.base import ServiceError, wait_until

    started = time.monotonic()
    said: list[str] = []

    def files() -> str:  # a LOAD file every 0.1 s, done after 4 s
        return f"{int((time.monotonic() - started) * 10)} file(s)"

    # a timeout 10 polls long, met 20 polls in: only the progress keeps it waiting
    wait_until(lambda: time.monotonic() - started > 4.0, 2.0, "emitter", progress=files,
               say=said.append)
    assert len(said) >= 4 and said[0].startswith("emitter: ")
    stalled = time.monotonic()
    with pytest.raises(ServiceError, match="within 0s of its last progress"):
        wait_until(lambda: False, 0.4, "emitter", progress=lambda: "3 file(s)")
    assert time.monotonic() - stalled < 2
    with pytest.raises(ServiceError, match=r"within 0s\."):  # no progress reported at all
        wait_until(lambda: False, 0.3, "emitter", progress=lambda: None)


def test_services_depend_only_on_services_started_before_them() -> None:
    from cdclab.supervisor import all_services

    order = [s.name for s in all_services()]
    for position, service in enumerate(all_services()):
        assert set(service.depends_on) <= set(order[:position]), service.name
    by_name = {s.name: s for s in all_services()}
    assert set(by_name["emitter"].depends_on) == {"postgres", "minio"}


def test_a_wall_clock_step_back_does_not_postpone_a_restart():
    policy = RestartPolicy(first_delay=1.0, max_delay=60.0)
    life = ServiceLife()
    died(life, 7200.0, policy, 1, None)
    assert not restart_due(life, 7200.0, policy)  # the back-off is waited out...
    assert restart_due(life, 7201.0, policy)
    assert restart_due(life, 3600.0, policy)  # ...but not an hour more after a step back



def test_the_keeper_restarts_what_a_service_needs_before_the_service() -> None:
    """Postgres and the emitter killed together, the emitter's back-off due first: the
    keeper must not start the emitter (its start would wait on a dead postgres, holding
    the stack lock, so postgres would never come back); it waits for postgres."""
    from types import SimpleNamespace

    from cdclab.keeper import Keeper
    from cdclab.supervisor import Stack

    started: list[list[str]] = []
    running = {"postgres": None, "emitter": None}
    stack = SimpleNamespace(
        services={"postgres": SimpleNamespace(depends_on=()),
                  "emitter": SimpleNamespace(depends_on=("postgres", "minio"))},
        pid_of=lambda name: running.get(name),
        up=lambda names, keep: started.append(list(names)),
        exit_code=lambda name: -9,
        ctx=SimpleNamespace(log_path=lambda name: f"/nonexistent/{name}.log"),
    )
    stack.dependencies_down = lambda name, among=None: Stack.dependencies_down(
        stack, name, among)  # the stack's own answer, on this fake's services
    keeper = Keeper(stack, RestartPolicy(first_delay=0.0))
    life = ServiceLife()
    keeper.tend_one("emitter", life, ["postgres", "emitter"])  # minio: not wanted here
    assert started == [] and life.last_error == "waiting for postgres to be back"
    running["postgres"] = 4242
    keeper.tend_one("emitter", life, ["postgres", "emitter"])
    assert started == [["emitter"]] and life.restarts == 1


def test_a_long_start_gives_way_to_a_command_waiting_for_the_stack_lock(tmp_path) -> None:
    """A full load may hold the stack lock for as long as it moves: past the service's
    usual start time, a command waiting for the lock (cdclab down) makes it give way."""
    import time
    from types import SimpleNamespace

    from cdclab.supervisor import LOCK_WANTED_FILE, Stack

    stack = SimpleNamespace(state_dir=tmp_path, dependencies_down=lambda name: [])
    service = SimpleNamespace(name="emitter", startup_timeout=lambda: 0.2)
    dead = Stack._needs(stack, service)
    (tmp_path / LOCK_WANTED_FILE).touch()
    assert dead() is None  # within its usual time: it goes on
    time.sleep(0.25)
    assert "waiting for the stack lock" in dead()
    (tmp_path / LOCK_WANTED_FILE).unlink()
    assert dead() is None  # nobody waits: it goes on as long as it moves
