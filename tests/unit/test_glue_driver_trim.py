"""The warm driver collects its heap once it has idled (glue_local.driver.Driver.trim):
twice per idle spell (the second takes what Spark's cleaner released after the first),
never while a run holds it. A stand-in session counts the JVM's
System.gc() calls; the memory it gives back is measured by bench/bench_freshness.py."""

from __future__ import annotations

from types import SimpleNamespace

from glue_local.driver import Driver, collect_compactly, trim_native_heap


class StandInSession:
    """What Driver touches of a SparkSession: the context's liveness, the JVM's gc() and
    its manageable flags (HotSpotDiagnosticMXBean), which refuse min > max as HotSpot does."""

    def __init__(self) -> None:
        self.collections = 0
        self.flags = {"MinHeapFreeRatio": 40, "MaxHeapFreeRatio": 70}
        self.ratios_at_gc: list[dict] = []
        bean = SimpleNamespace(
            getVMOption=lambda name: SimpleNamespace(getValue=lambda: str(self.flags[name])),
            setVMOption=self._set)
        lang = SimpleNamespace(
            System=SimpleNamespace(gc=self._gc), Class=SimpleNamespace(forName=str),
            management=SimpleNamespace(ManagementFactory=SimpleNamespace(
                getPlatformMXBean=lambda cls: bean)))
        jsc = SimpleNamespace(sc=lambda: SimpleNamespace(isStopped=lambda: False),
                              getPersistentRDDs=lambda: {})
        self.sparkContext = SimpleNamespace(
            _jsc=jsc, _jvm=SimpleNamespace(java=SimpleNamespace(lang=lang)))
        self.catalog = SimpleNamespace(clearCache=lambda: None)

    def _set(self, name: str, value: str) -> None:
        flags = {**self.flags, name: int(value)}
        if flags["MinHeapFreeRatio"] > flags["MaxHeapFreeRatio"]:
            raise ValueError(f"{name}: value violates its flag's constraint")
        self.flags = flags

    def _gc(self) -> None:
        self.collections += 1
        self.ratios_at_gc.append(dict(self.flags))


def started_driver() -> tuple[Driver, StandInSession]:
    session = StandInSession()
    driver = Driver(lambda env, extra_conf=None: session, {})
    driver._session = session  # started: Driver.session() would build a real one
    return driver, session


def test_an_idle_driver_collects_once_per_idle_spell() -> None:
    driver, session = started_driver()
    born = driver._idle_since
    assert not driver.trim((10.0,), now=born + 9.9)  # not idle long enough yet
    assert driver.trim((10.0,), now=born + 10.0) and session.collections == 1
    assert not driver.trim((10.0,), now=born + 60.0)  # once per idle spell
    with driver.use({}):
        pass  # a run used it: a new idle spell begins at its end
    ended = driver._idle_since
    assert ended > born and not driver.trim((10.0,), now=ended + 5.0)
    assert driver.trim((10.0,), now=ended + 10.0) and session.collections == 2
    # it collected keeping at most 30 % free; the runs get the JVM's own ratios back
    assert session.ratios_at_gc == [{"MinHeapFreeRatio": 10, "MaxHeapFreeRatio": 30}] * 2
    assert session.flags == {"MinHeapFreeRatio": 40, "MaxHeapFreeRatio": 70}


def test_the_second_collection_comes_as_long_after_the_first_as_the_schedule_says() -> None:
    driver, session = started_driver()
    born = driver._idle_since
    assert driver.trim((10.0, 15.0), now=born + 10.0)
    assert not driver.trim((10.0, 15.0), now=born + 14.9)
    assert driver.trim((10.0, 15.0), now=born + 15.1) and session.collections == 2
    assert not driver.trim((10.0, 15.0), now=born + 600.0)  # two per idle spell
    with driver.use({}):
        pass
    ended = driver._idle_since
    # a late first collection (the runner's loop was busy) still leaves the cleaner its
    # 5 s after it ends (here: at once) before the second, rather than collecting twice
    assert driver.trim((10.0, 15.0), now=ended + 40.0) and session.collections == 3
    assert not driver.trim((10.0, 15.0), now=ended + 44.0)
    assert driver.trim((10.0, 15.0), now=ended + 45.1) and session.collections == 4


def test_a_driver_in_use_or_not_started_is_never_collected() -> None:
    driver, session = started_driver()
    with driver.use({}):
        assert not driver.trim((0.0,), now=driver._idle_since + 3600)
    assert session.collections == 0
    idle = Driver(lambda env, extra_conf=None: session, {})  # no session started
    assert not idle.trim((0.0,), now=idle._idle_since + 3600)
    assert session.collections == 0


def test_a_jvm_without_the_native_trim_still_has_its_heap_collected() -> None:
    # the stand-in's JVM has no DiagnosticCommand MBean, as a JDK before 17.0.9 lacks
    # System.trim_native_heap: the collection and the ratios' reset are not held up
    session = StandInSession()
    assert trim_native_heap(session.sparkContext._jvm) is None
    assert collect_compactly(session.sparkContext._jvm) is None
    assert session.collections == 1
    assert session.flags == {"MinHeapFreeRatio": 40, "MaxHeapFreeRatio": 70}
