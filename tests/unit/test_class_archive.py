"""The driver's class-data-sharing archive: named by what it must match, used only when
made (glue_local.class_archive; tests/integration/test_jit_warmup.py starts drivers)."""

from __future__ import annotations

from glue_local import class_archive
from glue_local.spark_session import session_conf


def test_the_archive_is_named_by_the_jars_and_used_only_once_it_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv("CDCLAB_CACHE", str(tmp_path / "cache"))
    one, other = tmp_path / "a.jar", tmp_path / "b.jar"
    one.write_bytes(b"x")
    other.write_bytes(b"yy")
    path = class_archive.archive_path([one])
    assert path.parent == tmp_path / "cache" / "jvm"
    assert path == class_archive.archive_path([one])  # stable
    assert path != class_archive.archive_path([one, other])  # another jar set
    one.write_bytes(b"xyz")
    assert path != class_archive.archive_path([one])  # a jar rebuilt
    assert class_archive.java_options([one]) == ""  # not made: drivers start without it
    made = class_archive.archive_path([one])
    made.parent.mkdir(parents=True)
    made.write_bytes(b"archive")
    assert class_archive.java_options([one]) == (
        f" -XX:SharedArchiveFile={made} -Xshare:auto -Xlog:cds*=off")


def test_a_driver_maps_the_archive_of_its_own_jars(tmp_path, monkeypatch):
    asked = []

    def archive_of(jars):
        asked.append([str(j) for j in jars])
        return tmp_path / "driver.jsa"

    monkeypatch.setattr(class_archive, "archive_path", archive_of)
    env = {"CDCLAB_STATE_DIR": str(tmp_path / "state")}
    conf = session_conf(env, {})
    assert "SharedArchiveFile" not in conf["spark.driver.extraJavaOptions"]
    assert asked[-1] == conf["spark.jars"].split(",")  # named by the jars it runs with
    (tmp_path / "driver.jsa").write_bytes(b"archive")
    assert (f"-XX:SharedArchiveFile={tmp_path / 'driver.jsa'} -Xshare:auto -Xlog:cds*=off"
            in session_conf(env, {})["spark.driver.extraJavaOptions"])


def test_another_virtualenv_has_its_own_archive_and_a_gone_one_s_is_pruned(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("CDCLAB_CACHE", str(tmp_path / "cache"))
    venvs = [tmp_path / "a" / "jars", tmp_path / "b" / "jars"]
    for jars in venvs:
        jars.mkdir(parents=True)
        (jars / "spark-core.jar").write_bytes(b"same")
    paths = []
    for jars in venvs:
        monkeypatch.setattr(class_archive, "_pyspark_jars", lambda jars=jars: jars)
        paths.append(class_archive.archive_path([]))
    assert paths[0] != paths[1]  # the JVM checks the class path's folder too
    folder = paths[0].parent
    folder.mkdir(parents=True)
    for path, jars in zip(paths, venvs, strict=True):
        path.write_bytes(b"archive")
        path.with_name(f"{path.name}.source").write_text(f"{jars}\n")
    (venvs[0] / "spark-core.jar").unlink()
    venvs[0].rmdir()  # that checkout was removed
    class_archive.prune(folder)
    assert not paths[0].exists() and paths[1].exists()
