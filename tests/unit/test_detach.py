"""scripts/detach.sh: a daemon the project starts keeps no descriptor of its caller (a
caller's lock, the pipe of `make ... | tee log`), only the stdio it was given."""

from __future__ import annotations

import os
import subprocess
import time

from pipeline_contract import settings

DETACH = settings.REPO_ROOT / "scripts" / "detach.sh"


def test_a_detached_daemon_holds_none_of_its_callers_descriptors(tmp_path):
    marker, out = tmp_path / "callers-lock", tmp_path / "pid"
    script = (f'. "{DETACH}"; exec 7>"{marker}" 9>"{marker}.2"; '
              f'detach sleep 30 >/dev/null 2>&1 </dev/null; echo $! >"{out}"')
    # the caller's stdout is a pipe (as under `| tee`): it must close when the caller ends
    done = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, timeout=10)
    assert done.returncode == 0
    pid = int(out.read_text())
    try:
        time.sleep(0.2)
        held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        assert not any(str(marker) in target for target in held), held
        assert not any(target.startswith("pipe:") for target in held), held
        assert os.getsid(pid) == pid  # its own session: no signal of the caller's reaches it
    finally:
        os.kill(pid, 9)
