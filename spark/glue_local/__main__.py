"""`python -m glue_local --port N [--warm]`: the local Glue API on 127.0.0.1."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

from glue_local.server import ENV_GLUE_PORT, make_server
from pipeline_contract import settings


def aws_credentials_problem(env) -> str | None:
    """The aws profile reaches real S3 and the Glue Data Catalog: without credentials every
    run would fail later with a Java stack trace, so refuse at start, saying what to do."""
    if env.get(settings.ENV_PROFILE) != settings.PROFILE_AWS:
        return None
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        if boto3.Session().get_credentials() is not None:
            return None
    except BotoCoreError as exc:  # e.g. the named profile is not in the config
        return (f"CDCLAB_PROFILE=aws but the AWS configuration is not usable: {exc}. "
                "Mount your AWS config read-only (compose: ~/.aws or CDCLAB_AWS_CONFIG_DIR).")
    where = ", ".join(f"{k}={env[k]}" for k in ("AWS_PROFILE", "AWS_CONFIG_FILE",
                                                 "AWS_SHARED_CREDENTIALS_FILE") if env.get(k))
    return (f"CDCLAB_PROFILE=aws but no AWS credentials were found ({where or 'default chain'})."
            " Mount your AWS config read-only (compose: ~/.aws or CDCLAB_AWS_CONFIG_DIR), "
            "or set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for this service.")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m glue_local", description=__doc__)
    ap.add_argument("--port", type=int, default=int(os.environ.get(ENV_GLUE_PORT, "0")),
                    help=f"port on 127.0.0.1 (env {ENV_GLUE_PORT}; 0 = any free port)")
    ap.add_argument("--warm", action="store_true",
                    help="build the SparkSession at start-up instead of on the first run")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    problem = aws_credentials_problem(os.environ)
    if problem:
        raise SystemExit(f"glue_local: {problem}")
    # The catalog's token reaches the driver's conf and the runs' sessions from the
    # runner's copy of the environment: the JVM, the runs' processes and their Python
    # workers inherit this process's environment, and need not see it.
    env = dict(os.environ)
    os.environ.pop(settings.ENV_CATALOG_TOKEN, None)
    server = make_server(settings.state_dir(), args.port, env, warm=args.warm,
                         pipeline=settings.load_pipeline())
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
