"""Modules Glue gives scripts that AWS does not publish (spark/glue_local/stand_ins): a
Glue Studio script with data quality on imports them, never failing with
ModuleNotFoundError; what is not evaluated locally fails by name; a script's own copy wins.
(Evaluation on a Spark frame: tests/integration/test_glue_data_quality.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What Glue Studio generates for a job with data quality on (the imports and the call).
STUDIO_DQ = '''
import sys
from awsglue.transforms import *
from awsgluedq.transforms import EvaluateDataQuality

DEFAULT_DATA_QUALITY_RULESET = """
    Rules = [
        ColumnCount > 0,
        DataFreshness "updated_at" <= 24 hours
    ]
"""
print("imported", EvaluateDataQuality.__module__)
EvaluateDataQuality().process_rows(frame=None, ruleset=DEFAULT_DATA_QUALITY_RULESET,
    publishing_options={"dataQualityEvaluationContext": "EvaluateDataQuality_node1",
                        "enableDataQualityResultsPublishing": True},
    additional_options={"dataQualityResultsPublishing.strategy": "BEST_EFFORT",
                        "observations.scope": "ALL"})
'''


def run_script(tmp_path: Path, source: str, py_paths: list[str] | None = None) -> tuple[dict, str]:
    """One run through glue_local.run_process (no Spark driver: the script needs none)."""
    script = tmp_path / "job.py"
    script.write_text(source)
    spec = {"script": str(script), "cwd": str(tmp_path), "argv": [str(script)],
            "result": str(tmp_path / "result.json"), "py_paths": py_paths or []}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "spark")])}
    done = subprocess.run([sys.executable, "-m", "glue_local.run_process"], env=env,
                          input=json.dumps(spec) + "\n", text=True, capture_output=True,
                          timeout=120)
    return json.loads((tmp_path / "result.json").read_text()), done.stdout + done.stderr


def test_an_unsupported_rule_type_fails_by_name_not_with_an_import_error(tmp_path) -> None:
    result, output = run_script(tmp_path, STUDIO_DQ)
    assert "imported awsgluedq.transforms" in output
    assert result["state"] == "FAILED"
    assert result["error"].startswith("UnsupportedLocally: cdclab: DQDL rule DataFreshness is "
                                      "not supported locally (at line 4, column 9)")
    assert "ModuleNotFoundError" not in output


def test_other_names_and_bad_calls_fail_by_name(tmp_path) -> None:
    result, _ = run_script(tmp_path, "from awsgluedq.transforms import Something\n")
    assert result == {"state": "FAILED", "error": "ImportError: cdclab: "
                      "awsgluedq.transforms.Something is not supported locally"}
    result, _ = run_script(tmp_path, "from awsgluedq.transforms import EvaluateDataQuality\n"
                           "EvaluateDataQuality.apply(frame=None, ruleset='Rules = []')\n")
    assert result == {"state": "FAILED", "error": "TypeError: cdclab: EvaluateDataQuality "
                      "frame must be a DynamicFrame, got NoneType"}
    result, _ = run_script(tmp_path, "from awsgluedq.transforms import EvaluateDataQuality\n"
                           "EvaluateDataQuality.apply(frame=None, ruleset='Rules = [ RowCount ')\n")
    assert result["error"].startswith("DQDLError: cdclab: DQDL ruleset: expected")
    result, _ = run_script(tmp_path, "from awsgluedq.transforms import EvaluateDataQuality\n"
                           "EvaluateDataQuality.apply(frame=None, ruleset='Rules = []', "
                           "publishing_options={'enableCloudWatch': True})\n")
    assert result["error"].startswith("ValueError: cdclab: EvaluateDataQuality "
                                      "publishing_options ['enableCloudWatch'] are not Glue's")


def test_a_scripts_own_awsgluedq_wins(tmp_path) -> None:
    own = tmp_path / "libs" / "awsgluedq"
    own.mkdir(parents=True)
    (own / "__init__.py").write_text("")
    (own / "transforms.py").write_text("class EvaluateDataQuality:\n"
                                       "    def process_rows(self, **kw):\n"
                                       "        print('mine')\n")
    result, output = run_script(tmp_path, STUDIO_DQ, [str(tmp_path / "libs")])
    assert result == {"state": "SUCCEEDED"} and "mine" in output
