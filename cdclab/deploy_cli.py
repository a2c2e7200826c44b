"""`cdclab deploy --profile aws` and `cdclab destroy --profile aws` (argparse wiring).

The lead's CLI calls `add_deploy_commands(subparsers)`; each subcommand sets
`func(args) -> int`. `python -m cdclab.deploy_cli deploy ...` works standalone too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from deploy.options import ACCOUNT_PLACEHOLDER, DEFAULT_STACK, DeployError, DeployOptions
from deploy.plan import Plan, build_plan, destroy_options
from pipeline_contract.settings import DEFAULT_REGION, PROFILE_AWS, PipelineSettings, load_pipeline
from pipeline_contract.settings_check import SettingsError
from pipeline_contract.table_names import NameCollision, check_names


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        required=True,
        choices=[PROFILE_AWS],
        help="deployment profile (only 'aws' deploys anything)",
    )
    p.add_argument(
        "--region", help=f"AWS region (default: your AWS configuration, else {DEFAULT_REGION})"
    )
    p.add_argument(
        "--stack",
        default=DEFAULT_STACK,
        help="stack name: prefix of every resource and its cdclab:stack tag",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan without calling AWS (no credentials needed)",
    )


def add_deploy_commands(subparsers: Any) -> None:
    d = subparsers.add_parser("deploy", help="deploy the pipeline to AWS (idempotent)")
    _common(d)
    d.add_argument("--worker-type", help="Glue worker type (default: pipeline.toml)")
    d.add_argument("--workers", type=int, help="Glue number of workers (default: pipeline.toml)")
    d.add_argument(
        "--create-replication-instance",
        action="store_true",
        help="also create a DMS replication instance (billed hourly)",
    )
    d.add_argument("--replication-instance-class", default="dms.t3.micro")
    d.add_argument("--replication-instance-arn", help="use this existing replication instance")
    d.add_argument(
        "--create-source-endpoint",
        action="store_true",
        help="also create the DMS PostgreSQL source endpoint",
    )
    d.add_argument("--source-host")
    d.add_argument("--source-port", type=int, default=5432)
    d.add_argument("--source-secret-arn", help="Secrets Manager secret with username/password")
    d.add_argument("--source-endpoint-arn", help="use this existing DMS source endpoint")
    d.add_argument("--tables-config", metavar="FILE",
                   help="the job's table specs (`cdclab tables --json > FILE`); default: "
                        "those of the running lab, built from its source")
    d.set_defaults(func=run_deploy)
    x = subparsers.add_parser("destroy", help="remove what deploy created (tagged resources)")
    _common(x)
    x.add_argument(
        "--delete-data",
        action="store_true",
        help="also empty and delete the buckets (bronze files, silver table data)",
    )
    x.set_defaults(func=run_destroy)


def _session(region: str | None) -> Any:
    import boto3  # only needed once AWS is really called

    return boto3.Session(region_name=region) if region else boto3.Session()


def _region(args: argparse.Namespace) -> str:
    return args.region or _session(None).region_name or DEFAULT_REGION


def _account(session: Any) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return session.client("sts").get_caller_identity()["Account"]
    except (BotoCoreError, ClientError) as e:
        raise DeployError(
            f"cannot identify the AWS account ({e}): configure credentials (aws configure, "
            "AWS_PROFILE) or use --dry-run"
        ) from e


def options_from_args(args: argparse.Namespace, account_id: str) -> DeployOptions:
    get = vars(args).get
    return DeployOptions(
        region=_region(args),
        account_id=account_id,
        stack=args.stack,
        worker_type=get("worker_type"),
        workers=get("workers"),
        create_replication_instance=bool(get("create_replication_instance")),
        replication_instance_class=get("replication_instance_class") or "dms.t3.micro",
        replication_instance_arn=get("replication_instance_arn"),
        create_source_endpoint=bool(get("create_source_endpoint")),
        source_host=get("source_host"),
        source_port=get("source_port") or 5432,
        source_secret_arn=get("source_secret_arn"),
        source_endpoint_arn=get("source_endpoint_arn"),
    )


def _plan(args: argparse.Namespace, p: PipelineSettings, *,
          for_destroy: bool = False) -> tuple[Plan, Any]:
    session = None
    account = ACCOUNT_PLACEHOLDER
    if not args.dry_run:
        session = _session(_region(args))
        account = _account(session)
    opts = options_from_args(args, account)
    if for_destroy:
        return build_plan(p, destroy_options(opts)), session
    return build_plan(p, opts, table_specs(args, p)), session


def table_specs(args: argparse.Namespace, p: PipelineSettings) -> list[dict]:
    """The tables the deployed job merges: --tables-config, else the running lab's
    (the lab's source has the schema the AWS source has: that is the point of the lab)."""
    import json

    path = vars(args).get("tables_config")
    if path:
        with open(path, encoding="utf-8") as f:
            specs = json.load(f)["tables"]
    else:
        try:
            from cdclab.runtime import current
            from cdclab.tables_sync import published_specs

            specs = published_specs(current(p).require("minio"), p)
        except Exception as exc:  # no lab running: say what to do
            if args.dry_run:
                print(f"cdclab deploy: no table specs ({exc}); the plan has no bronze "
                      "tables", file=sys.stderr)
                return []
            raise DeployError("cdclab deploy needs the tables' columns: start the lab "
                              "(`cdclab up`) against a source with the same schema, or pass "
                              "--tables-config FILE (`cdclab tables --json > FILE`)") from exc
    try:
        check_names(specs)
    except NameCollision as exc:
        raise DeployError(str(exc)) from None
    return specs


def run_deploy(args: argparse.Namespace) -> int:
    from deploy.render import render_plan, runner_env

    try:
        plan, session = _plan(args, load_pipeline())
        if args.dry_run:
            sys.stdout.write(render_plan(plan))
            return 0
        from deploy.apply import apply_plan

        apply_plan(plan, session)
        print("\nEnvironment for the local job runner against this stack:")
        for k, v in runner_env(plan).items():
            print(f"  {k}={v}")
        return 0
    except (DeployError, SettingsError) as e:
        print(f"cdclab deploy: {e}", file=sys.stderr)
        return 2


def run_destroy(args: argparse.Namespace) -> int:
    try:
        plan, session = _plan(args, load_pipeline(), for_destroy=True)
        if args.dry_run:
            print(
                f"Would remove, if tagged cdclab:stack={plan.names.stack} "
                f"(region {plan.names.region}):"
            )
            for r in reversed(plan.resources):
                print(f"  - {r.kind} {r.name}")
            return 0
        from deploy.destroy import destroy_plan

        destroy_plan(plan, session, delete_data=args.delete_data)
        return 0
    except (DeployError, SettingsError) as e:
        print(f"cdclab destroy: {e}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cdclab")
    add_deploy_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
