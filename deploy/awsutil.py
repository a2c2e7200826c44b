"""Small helpers shared by the boto3 adapters: error codes, tag checks, subset compare."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from deploy.options import STACK_TAG, DeployError
from deploy.plan import Plan


def error_code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def is_not_found(exc: ClientError) -> bool:
    code = error_code(exc)
    return (
        code
        in {
            "404",
            "NoSuchEntity",
            "EntityNotFoundException",
            "NoSuchBucket",
            "NotFound",
            "ResourceNotFoundException",
            "ResourceNotFoundFault",
            "NoSuchKey",
        }
        or "NotFound" in code
    )


def tag_list(tags: Mapping[str, str], key: str = "Key", value: str = "Value") -> list[dict]:
    return [{key: k, value: v} for k, v in tags.items()]


def tag_dict(
    tags: list[dict[str, str]] | None, key: str = "Key", value: str = "Value"
) -> dict[str, str]:
    return {t[key]: t[value] for t in tags or []}


def is_ours(tags: Mapping[str, str], stack: str) -> bool:
    return tags.get(STACK_TAG) == stack


def require_ours(tags: Mapping[str, str], stack: str, kind: str, name: str) -> None:
    """Never adopt (or later delete) a resource this stack did not create."""
    if not is_ours(tags, stack):
        raise DeployError(
            f"{kind} {name!r} already exists but is not tagged {STACK_TAG}={stack}: "
            "cdclab will not take it over. Remove or rename it, or deploy with another --stack."
        )


def subset_equal(desired: Any, actual: Any) -> bool:
    """True when every key of `desired` is in `actual` with an equal value (recursively).

    AWS echoes settings back with extra read-only fields; those do not count as drift.
    """
    if isinstance(desired, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and subset_equal(v, actual[k]) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(desired) == len(actual)
            and all(subset_equal(d, a) for d, a in zip(desired, actual, strict=True))
        )
    return desired == actual


@dataclass
class Context:
    """What one apply/destroy run shares: the plan, boto3 clients, resolved ARNs."""

    plan: Plan
    session: Any  # boto3.Session
    # False skips the service waiters (moto never moves DMS out of "creating")
    wait: bool = True
    arns: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(
                service, region_name=self.plan.names.region
            )
        return self._clients[service]

    def wait_for(self, service: str, waiter: str, **kwargs: Any) -> None:
        if self.wait:
            self.client(service).get_waiter(waiter).wait(**kwargs)

    @property
    def stack(self) -> str:
        return self.plan.names.stack
