"""Glue resource tags and ListJobs, with the shapes, limits and errors of botocore's Glue
model (`botocore/data/glue/2017-03-31/service-2.json`: GetTags, TagResource,
UntagResource, ListJobs; TagsMap at most 50 entries, TagKey 1-128 and TagValue 0-256
characters, TagKeysList at most 50, PageSize 1-1000).

Only jobs carry tags locally: `arn:aws:glue:<region>:000000000000:job/<name>`, the region
being the API's (AWS_DEFAULT_REGION, else AWS_REGION, else us-east-1). Tags live in
<state>/glue/tags/job/<state name>.json (glue_local.job_names.state_name), apart from
the job definition, so GetJob/GetJobs never return them (as on AWS) and UpdateJob, which
replaces the definition, keeps them.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from glue_local.errors import invalid_input, not_found
from glue_local.job_names import state_name
from pipeline_contract.atomic import write_json
from pipeline_contract.settings import DEFAULT_REGION, ENV_AWS_REGION, ENV_REGION

# the account of the local Glue API's ARNs (catalog_api.CATALOG_ID is the same)
LOCAL_ACCOUNT = "000000000000"
# botocore's Glue model: TagsMap max 50, TagKey 1..128, TagValue 0..256, TagKeysList max 50
MAX_TAGS = 50
MAX_KEY_CHARS = 128
MAX_VALUE_CHARS = 256
# PageSize 1..1000; ListJobs' default page size is not documented (cdclab's: 1000)
MAX_PAGE = 1000
# GlueResourceArn's pattern: arn:aws(-(cn|us-gov|iso(-[bef])?))?:glue:.*
_ARN = re.compile(r"arn:(aws(?:-(?:cn|us-gov|iso(?:-[bef])?))?):glue:([^:]*):([^:]*):(.*)",
                  re.DOTALL)
# "Tag keys and tag values cannot contain the prefix aws" (monitor-tags page)
_RESERVED_PREFIX = "aws:"


def local_region(env: Mapping[str, str] | None) -> str:
    env = env or {}
    return env.get(ENV_REGION) or env.get(ENV_AWS_REGION) or DEFAULT_REGION


def job_arn(env: Mapping[str, str] | None, name: str) -> str:
    return f"arn:aws:glue:{local_region(env)}:{LOCAL_ACCOUNT}:job/{name}"


def job_name_of(env: Mapping[str, str] | None, arn: Any) -> str:
    """The job an ARN names. InvalidInputException for what is no Glue ARN or names
    another resource type; EntityNotFoundException for another partition, region or
    account (no resource of this API is there)."""
    if not isinstance(arn, str) or not arn:
        raise invalid_input("ResourceArn is required")
    m = _ARN.fullmatch(arn)
    if m is None:
        raise invalid_input(f"ResourceArn {arn[:200]!r} is not a Glue ARN "
                            "(arn:aws:glue:<region>:<account>:<resource>)")
    partition, region, account, resource = m.groups()
    kind, slash, name = resource.partition("/")
    if kind != "job":
        raise invalid_input(f"ResourceArn {arn[:200]!r}: tags on Glue {kind or resource!r} "
                            "resources are not supported by the local Glue API (only "
                            "job/<name>)")
    if not slash or not name:
        raise invalid_input(f"ResourceArn {arn[:200]!r}: no job name after job/")
    here = (partition, region, account) == ("aws", local_region(env), LOCAL_ACCOUNT)
    if not here:
        raise not_found(f"Job {name[:200]} not found: this Glue API's jobs are "
                        f"{job_arn(env, '<name>')}")
    return name


def checked_tags(tags: Any, what: str, reserved: bool = True) -> dict[str, str]:
    """Tags within the model's limits; `reserved`: keys and values may not start with
    aws: (tags being set; a ListJobs filter may name AWS's own)."""
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise invalid_input(f"{what} must be a map of tag keys to values")
    if len(tags) > MAX_TAGS:
        raise invalid_input(f"{what} has {len(tags)} tags; at most {MAX_TAGS}")
    for key, value in tags.items():
        checked_key(key, what, reserved)
        if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
            raise invalid_input(f"{what}: the value of tag {key!r} must be a string of at "
                                f"most {MAX_VALUE_CHARS} characters")
        if reserved and value.lower().startswith(_RESERVED_PREFIX):
            raise invalid_input(f"{what}: tag values may not start with "
                                f"{_RESERVED_PREFIX!r} (reserved for AWS)")
    return dict(tags)


def checked_key(key: Any, what: str, reserved: bool = True) -> str:
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
        raise invalid_input(f"{what}: tag keys must be 1 to {MAX_KEY_CHARS} characters "
                            f"({str(key)[:40]!r})")
    if reserved and key.lower().startswith(_RESERVED_PREFIX):
        raise invalid_input(f"{what}: tag keys may not start with {_RESERVED_PREFIX!r} "
                            "(reserved for AWS)")
    return key


# --- persistence (callers hold the JobStore's lock while they change tags) ------------
TAGS_DIR = ("glue", "tags", "job")


def tags_path(state_dir: Path, name: str) -> Path:
    return Path(state_dir).joinpath(*TAGS_DIR, f"{state_name(name)}.json")


def load_job_tags(state_dir: Path, name: str) -> dict[str, str]:
    path = tags_path(state_dir, name)
    return json.loads(path.read_text())["Tags"] if path.exists() else {}


def store_job_tags(state_dir: Path, name: str, tags: Mapping[str, str]) -> None:
    """Writes the job's tags; none removes the file (so a job created later under the
    name never inherits a deleted job's tags)."""
    if tags:
        write_json(tags_path(state_dir, name), {"Tags": dict(tags)})
    else:
        tags_path(state_dir, name).unlink(missing_ok=True)


# --- operations: (ctx, request) -> response -------------------------------------------
def _tagged_job(ctx, req: dict) -> str:
    name = job_name_of(ctx.env, req.get("ResourceArn"))
    ctx.jobs.require_job(name, constrained=False)  # an ARN's name: no job has it, or one
    return name


def get_tags(ctx, req: dict) -> dict:
    with ctx.jobs.lock:
        return {"Tags": load_job_tags(ctx.state_dir, _tagged_job(ctx, req))}


def tag_resource(ctx, req: dict) -> dict:
    if "TagsToAdd" not in req:
        raise invalid_input("TagsToAdd is required")
    add = checked_tags(req["TagsToAdd"], "TagsToAdd")
    with ctx.jobs.lock:
        name = _tagged_job(ctx, req)
        tags = {**load_job_tags(ctx.state_dir, name), **add}
        if len(tags) > MAX_TAGS:
            raise invalid_input(f"Job {name} would have {len(tags)} tags; a resource has at "
                                f"most {MAX_TAGS}")
        store_job_tags(ctx.state_dir, name, tags)
    return {}


def untag_resource(ctx, req: dict) -> dict:
    keys = req.get("TagsToRemove")
    if not isinstance(keys, list):
        raise invalid_input("TagsToRemove is required (a list of tag keys)")
    if len(keys) > MAX_TAGS:
        raise invalid_input(f"TagsToRemove has {len(keys)} keys; at most {MAX_TAGS}")
    for key in keys:
        checked_key(key, "TagsToRemove")
    with ctx.jobs.lock:
        name = _tagged_job(ctx, req)
        tags = load_job_tags(ctx.state_dir, name)
        kept = {k: v for k, v in tags.items() if k not in keys}  # absent keys: no error
        if kept != tags:
            store_job_tags(ctx.state_dir, name, kept)
    return {}


def _token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def _after(token: Any) -> str | None:
    if token in (None, ""):
        return None
    try:
        return base64.b64decode(str(token).encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise invalid_input("NextToken is not a token ListJobs returned") from None


def list_jobs(ctx, req: dict) -> dict:
    """Job names in name order, only those with every given tag (key and value); the
    token names the last job returned, so pages stay right while jobs come and go."""
    size = req.get("MaxResults")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        raise invalid_input("MaxResults must be an integer")
    size = MAX_PAGE if size is None else size
    if not 1 <= size <= MAX_PAGE:
        raise invalid_input(f"MaxResults {size} must be 1..{MAX_PAGE}")
    wanted = checked_tags(req.get("Tags"), "Tags", reserved=False).items()
    after = _after(req.get("NextToken"))
    with ctx.jobs.lock:
        names = [j["Name"] for j in ctx.jobs.list_jobs()]
        if after is not None:
            names = [n for n in names if n > after]
        found: list[str] = []
        for name in names:
            if wanted and not wanted <= load_job_tags(ctx.state_dir, name).items():
                continue
            if len(found) == size:  # one more matches: there is a next page
                return {"JobNames": found, "NextToken": _token(found[-1])}
            found.append(name)
    return {"JobNames": found}


OPERATIONS: dict[str, Callable[[Any, dict], dict]] = {
    "GetTags": get_tags,
    "TagResource": tag_resource,
    "UntagResource": untag_resource,
    "ListJobs": list_jobs,
}
