"""GlueVersion -> runtime (spark/glue_local/glue_runtimes.py): 5.1 is the lab's own Python
on the shared driver, 5.0 the Glue 5.0 venv's Python with Spark 3.5.4's jars on a driver
of its own; the pins agree with versions.env, the locks, bootstrap and the image."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glue_local import glue_runtimes as g
from glue_local.errors import GlueError
from glue_local.glue_versions import checked
from pipeline_contract import settings
from tests.unit.test_glue_protocol import glue, run_log, wait_final  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
PINS = settings.versions()
LAB, GLUE50 = Path("/lab/bin/python"), Path("/g50/bin/python")


def runtime(version: str) -> g.Runtime:
    return g.runtime_of(version, PINS, Path("/jars"), LAB, GLUE50)


def test_5_1_is_the_labs_runtime_and_5_0_its_own() -> None:
    five_one, five_zero = runtime("5.1"), runtime("5.0")
    assert (five_one.spark, five_one.iceberg, five_one.awsglue) == ("3.5.6", "1.10.0", "5.1.0")
    assert five_one.python == LAB and five_one.shared_driver
    assert (five_zero.spark, five_zero.iceberg, five_zero.awsglue) == ("3.5.4", "1.7.1", "5.0.0")
    assert five_zero.python == GLUE50 and not five_zero.shared_driver
    assert [j.name for j in five_zero.jars] == [
        "iceberg-spark-runtime-3.5_2.12-1.7.1.jar", "iceberg-aws-bundle-1.7.1.jar",
        "hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar"]
    assert [j.name for j in five_one.jars] == [p.name for p in settings.spark_jars()]


@given(st.one_of(st.none(), st.sampled_from(["5.0", "5.1"]), st.text(max_size=8)))
def test_every_accepted_glue_version_has_a_runtime(version) -> None:
    try:
        accepted = checked(version, "Job j")
    except GlueError:
        return  # refused by name at the API (test_glue_protocol)
    rt = runtime(accepted)
    assert rt.glue_version == accepted and rt.shared_driver == (accepted == "5.1")


@given(st.text(max_size=8).filter(lambda v: v not in ("5.0", "5.1")))
def test_a_version_without_a_runtime_is_refused_naming_it(version) -> None:
    with pytest.raises(ValueError, match="5.0 and 5.1"):
        g.pins(version, PINS)


def test_missing_names_what_is_absent_and_how_to_install(tmp_path) -> None:
    rt = g.runtime_of("5.0", PINS, tmp_path, tmp_path / "python", tmp_path / "python")
    (tmp_path / "python").touch()
    absent = g.missing(rt, tmp_path / "glue-jvm.jar")
    assert absent == [str(j) for j in rt.jars] + [str(tmp_path / "glue-jvm.jar")]
    text = g.not_installed(rt, absent)
    assert "AWS Glue 5.0 runtime (Spark 3.5.4, Iceberg 1.7.1" in text
    assert "make setup" in text and "iceberg-aws-bundle-1.7.1.jar" in text
    assert g.missing(runtime("5.1"), tmp_path / "none") == []  # the lab's own: always there


@given(st.dictionaries(st.sampled_from([*g.FOREIGN_ENV, "HOME", "CDCLAB_X", "PYTHONPATH"]),
                       st.text(max_size=5)))
def test_a_glue50_process_sees_neither_the_labs_spark_nor_its_site_packages(base) -> None:
    env = g.child_env(base, runtime("5.0"), pythonpath="/repo:/repo/spark")
    assert not set(g.FOREIGN_ENV) & set(env)
    assert env["PYTHONPATH"] == "/repo:/repo/spark" and env["PYSPARK_PYTHON"] == str(GLUE50)
    assert {k: v for k, v in base.items() if k in ("HOME", "CDCLAB_X")}.items() <= env.items()


def test_a_glue50_driver_keeps_the_state_dir_and_runs_in_local_mode(tmp_path) -> None:
    notes: list[str] = []
    env = {settings.ENV_SPARK_MASTER: "spark://spark:7077", "CDCLAB_X": "1"}
    assert g.driver_env(env, tmp_path, notes.append) == {
        "CDCLAB_X": "1", settings.ENV_STATE_DIR: str(tmp_path)}
    assert notes and "spark://spark:7077" in notes[0] and "local mode" in notes[0]
    assert g.driver_env({}, tmp_path, notes.append) == {settings.ENV_STATE_DIR: str(tmp_path)}
    # compose names its local master too: nothing to note then
    local = {settings.ENV_SPARK_MASTER: "local[2]"}
    assert g.driver_env(local, tmp_path, notes.append) == {settings.ENV_STATE_DIR: str(tmp_path)}
    assert len(notes) == 1


def test_child_pythonpath_is_the_repo_only() -> None:
    assert g.child_pythonpath().split(":") == [str(settings.REPO_ROOT),
                                               str(settings.REPO_ROOT / "spark")]


def pinned(file: str, name: str) -> str:
    found = re.search(rf"(?im)^{re.escape(name)}==(\S+)", (ROOT / file).read_text())
    assert found, f"{file} pins no {name}"
    return found.group(1)


def test_the_locks_hold_the_pins_of_versions_env() -> None:
    assert pinned("requirements-glue50.in", "pyspark") == PINS["GLUE50_SPARK_VERSION"]
    assert pinned("requirements-glue50.lock", "pyspark") == PINS["GLUE50_SPARK_VERSION"]
    assert pinned("requirements-glue50.lock", "awsgluedataplanepython") == \
        PINS["GLUE50_AWSGLUE_VERSION"]
    assert pinned("requirements-runtime.lock", "awsgluedataplanepython") == g.AWSGLUE_51
    assert pinned("requirements-runtime.lock", "pyspark") == PINS["SPARK_VERSION"]


def test_bootstrap_and_the_image_install_the_glue50_runtime() -> None:
    for file in ("scripts/bootstrap.sh", "spark/Dockerfile"):
        text = (ROOT / file).read_text()
        assert "requirements-glue50.lock" in text, file
        assert "iceberg-spark-runtime-3.5_${SCALA_BINARY_VERSION}:${GLUE50_ICEBERG_VERSION}" \
            in text, file
        assert "iceberg-aws-bundle:${GLUE50_ICEBERG_VERSION}" in text, file


PROBE = """
import sys
from importlib.metadata import version
print("python", sys.executable, "awsglue", version("AWSGlueDataplanePython"))
"""


def test_a_glue50_run_is_that_runtimes_python_and_fails_by_name_without_it(
        glue, tmp_path, monkeypatch) -> None:  # noqa: F811
    client, _ = glue
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    for version in ("5.0", "5.1"):
        client.create_job(Name=f"probe{version}", Role="r", GlueVersion=version,
                          Command={"Name": "glueetl", "ScriptLocation": str(script)})
    for version, python in [("5.0", g.glue50_venv() / "bin" / "python"),
                            ("5.1", Path(sys.executable))]:
        run_id = client.start_job_run(JobName=f"probe{version}")["JobRunId"]
        run = wait_final(client, run_id, f"probe{version}", timeout=60)
        log = run_log(tmp_path, run_id)
        assert run["JobRunState"] == "SUCCEEDED", (run.get("ErrorMessage"), log)
        awsglue = {"5.0": PINS["GLUE50_AWSGLUE_VERSION"], "5.1": g.AWSGLUE_51}[version]
        assert f"python {python} awsglue {awsglue}" in log
    monkeypatch.setenv(g.ENV_GLUE50_VENV, str(tmp_path / "no-venv"))
    run_id = client.start_job_run(JobName="probe5.0")["JobRunId"]
    run = wait_final(client, run_id, "probe5.0")
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"].startswith(
        "GlueRuntimeMissing: cdclab: the AWS Glue 5.0 runtime (Spark 3.5.4, Iceberg 1.7.1, "
        "AWSGlueDataplanePython 5.0.0) this job's GlueVersion 5.0 runs on is not installed "
        f"(missing {tmp_path / 'no-venv' / 'bin' / 'python'}")
    assert "run `make setup` (scripts/bootstrap.sh)" in run["ErrorMessage"]


def test_glue50s_awsglue_calls_the_same_jvm_side_as_the_labs() -> None:
    """spark/glue-jvm is written to the py4j calls of the lab's awsglue
    (test_glue_jvm_surface); AWSGlueDataplanePython 5.0.0's awsglue is file for file the
    same as 5.1.0's, so one JVM side serves both."""
    from importlib.metadata import distribution

    lab = Path(str(distribution("AWSGlueDataplanePython").locate_file("awsglue")))
    found = list((g.glue50_venv() / "lib").glob("python3.*/site-packages/awsglue"))
    assert found, f"no Glue 5.0 runtime at {g.glue50_venv()}: {g.INSTALL_HINT}"

    def sources(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}

    assert sources(found[0]) == sources(lab)
