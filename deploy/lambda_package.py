"""The Lambda deployment zip: lambda_shim/lambda_function.py and the modules it imports
(object_gate.py and the gate_*.py it splits its checks into, eventbridge_events.py) at
the archive root.

Deterministic (fixed timestamp and permissions) so the same source always gives the
same CodeSha256 and a second deploy sees nothing to update.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

from deploy.options import DeployError

FIXED_TIME = (1980, 1, 1, 0, 0, 0)
# beside the handler in the repo and in the zip
COMPANIONS = ("object_gate.py", "gate_base.py", "gate_csv.py", "gate_parquet.py",
              "eventbridge_events.py")


def build_zip(source: Path, companions: tuple[str, ...] = COMPANIONS) -> bytes:
    files = [source, *(source.parent / name for name in companions)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in files:
            if not path.is_file():
                raise DeployError(f"Lambda source {path} is missing: the zip packages it")
            info = zipfile.ZipInfo(path.name, date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def code_sha256(zip_bytes: bytes) -> str:
    """Lambda's CodeSha256: base64 of the zip's SHA-256."""
    return base64.b64encode(hashlib.sha256(zip_bytes).digest()).decode()
