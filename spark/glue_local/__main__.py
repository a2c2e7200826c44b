"""`python -m glue_local --port N [--warm]`: the local Glue API on 127.0.0.1."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from cdclab import settings
from glue_local.server import ENV_GLUE_PORT, make_server


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is now, so a job's logging lands in its run log
    (the runner tees sys.stderr during a run); a job's basicConfig() is then a no-op."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m glue_local", description=__doc__)
    ap.add_argument("--port", type=int, default=int(os.environ.get(ENV_GLUE_PORT, "0")),
                    help=f"port on 127.0.0.1 (env {ENV_GLUE_PORT}; 0 = any free port)")
    ap.add_argument("--warm", action="store_true",
                    help="build the SparkSession at start-up instead of on the first run")
    args = ap.parse_args(argv)
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])

    server = make_server(settings.state_dir(), args.port, warm=args.warm)
    logging.getLogger("glue_local").info("local Glue API on %s (state %s)",
                                         server.endpoint, settings.state_dir())

    def _stop(*_) -> None:  # shutdown() blocks until serve_forever returns: other thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.ctx.runner.shutdown()


if __name__ == "__main__":
    main()
