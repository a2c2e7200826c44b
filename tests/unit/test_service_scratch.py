"""A supervised service's temp dir: its own, under the state dir, emptied at each start."""

from __future__ import annotations

import json
import os
import sys

from cdclab import credentials
from cdclab.services.base import ProcessSpec, Service, StackContext, start_process
from cdclab.services.iceberg_rest import IcebergRestService
from dms_emitter.launcher import EmitterService
from glue_local.launcher import GlueApiService
from pipeline_contract.settings import load_pipeline


class _PrintEnv(Service):
    name = "printenv"

    def process(self, ctx: StackContext) -> ProcessSpec:
        return ProcessSpec(argv=[sys.executable, "-c",
                                 "import json, os; print(json.dumps(dict(os.environ)))"])

    def healthy(self, ctx: StackContext) -> bool:
        return True


class _Scratch(_PrintEnv):
    scratch = True


def _seen_env(ctx: StackContext) -> dict[str, str]:
    return json.loads(ctx.log_path("printenv").read_text())


def test_a_scratch_service_gets_its_own_temp_dir_emptied_at_each_start(tmp_path) -> None:
    """A killed JVM never removes its temp files (Spark's jar copies: ~380 MB a start):
    the next start of the service removes them."""
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path, env=credentials.generate())
    stale = ctx.scratch_dir("printenv") / "spark-left-by-a-kill" / "a.jar"
    stale.parent.mkdir(parents=True)
    stale.write_text("x")
    start_process(_Scratch(), ctx).wait(30)
    assert _seen_env(ctx)["TMPDIR"] == str(ctx.scratch_dir("printenv"))
    assert not stale.parent.exists() and ctx.scratch_dir("printenv").is_dir()
    assert (ctx.scratch_dir("printenv").stat().st_mode & 0o777) == 0o700


def test_other_services_keep_the_callers_temp_dir(tmp_path) -> None:
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path, env=credentials.generate())
    start_process(_PrintEnv(), ctx).wait(30)
    assert _seen_env(ctx).get("TMPDIR") == os.environ.get("TMPDIR")
    assert not (tmp_path / "tmp").exists()


def test_the_jvm_services_have_scratch() -> None:
    assert GlueApiService.scratch and IcebergRestService.scratch
    assert not EmitterService.scratch
