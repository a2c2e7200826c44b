"""getResolvedOptions with Glue's semantics: `--NAME value` pairs, errors for missing ones."""

from __future__ import annotations

import argparse

BOOKMARK_OPTION = "--job-bookmark-option"
BOOKMARK_CHOICES = ("job-bookmark-enable", "job-bookmark-disable", "job-bookmark-pause")
# Arguments Glue itself passes to every run; never required from the script's list.
_RESERVED = ("--JOB_ID", "--JOB_RUN_ID", "--SECURITY_CONFIGURATION", "--encryption-type",
             "--TempDir", "--continuation-option", "--job-bookmark-from", "--job-bookmark-to")


class GlueArgumentError(Exception):
    """Raised (like Glue's) when required job arguments are missing or malformed."""


class GlueArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage and exit(2)
        raise GlueArgumentError(message)


def getResolvedOptions(args: list[str], options: list[str]) -> dict[str, str]:  # noqa: N802
    """Resolve `options` from argv (`--NAME value` or `--NAME=value`); unknown args ignored."""
    if "continuation-option" in options or "job-bookmark-option" in options:
        raise RuntimeError("Using reserved arguments job-bookmark-option/continuation-option")
    parser = GlueArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument(BOOKMARK_OPTION, choices=BOOKMARK_CHOICES, required=False)
    for reserved in _RESERVED:
        if reserved[2:] not in options:
            parser.add_argument(reserved, required=False)
    if "JOB_NAME" not in options:
        parser.add_argument("--JOB_NAME", required=False)
    for option in options:
        parser.add_argument(f"--{option}", required=True)
    parsed, _unknown = parser.parse_known_args(args[1:])
    resolved = {k: v for k, v in vars(parsed).items() if v is not None or k in options}
    if "TempDir" in resolved:
        resolved["TEMP_DIR"] = resolved["TempDir"]
    return resolved
