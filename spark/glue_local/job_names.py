"""Job names: checked as Glue checks them, and stored under a path only that name uses.

Glue's API model (botocore/data/glue/2017-03-31/service-2.json) gives job names the shape
`NameString`: length 1..255 and the pattern below (any character but the control
characters other than tab, lone surrogates, U+FFFE and U+FFFF). So `..`, `a/b`, `Bronze to
Silver` and `bronze to silver` are all valid, distinct job names: every file the local API
keys by a job name (job definition, runs folder, bookmark, tags) is named by
`state_name`, an encoding that keeps them apart on any file system (case-insensitive
ones included) and never leaves its folder. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re

from glue_local.errors import GlueError

NAME_MIN, NAME_MAX = 1, 255  # NameString's min and max
NAME_PATTERN = r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\t]*"  # as the model
# The model's pattern is a Java regex, where "\uD800\uDC00-\uDBFF\uDFFF" is the range of
# supplementary characters; Python's re needs them as code points.
_NAME_RE = re.compile("[\t\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")

# state_name: these characters stand for themselves; every other one is %xx per UTF-8 byte
# (lower-case hex), so the encoding is one-to-one, has no '.', '/' or capital letter, and
# never is "." or "..".
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# A file name must fit NAME_MAX bytes (255 on Linux and macOS) with ".json" and the
# atomic writer's temp prefix/suffix (pipeline_contract.atomic: ".<name>.<pid>.<thread>.tmp"); an
# encoding longer than this is replaced by a readable head and the name's SHA-256.
STATE_NAME_MAX = 120
_HEAD = 48
HASHED = "~"  # never produced by the escaping: it marks the hashed form


def validation_message(errors: list[str]) -> str:
    """AWS's message for model validation failures ("1 validation error detected: ...")."""
    count = len(errors)
    noun = "validation error" if count == 1 else "validation errors"
    return f"{count} {noun} detected: " + "; ".join(errors)


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "TRUE_VALUE" if value else "FALSE_VALUE"
    if isinstance(value, (int, float)):
        return "NUMBER_VALUE"
    return "START_ARRAY" if isinstance(value, list) else "START_OBJECT"


def name_problem(value: str | None, member: str) -> str | None:
    """What is wrong with string `value` as a NameString at `member`, in AWS's words."""
    if value is None:
        return f"Value null at '{member}' failed to satisfy constraint: Member must not be null"
    if len(value) < NAME_MIN:
        return (f"Value '{value}' at '{member}' failed to satisfy constraint: Member must "
                f"have length greater than or equal to {NAME_MIN}")
    if len(value) > NAME_MAX:
        return (f"Value '{value}' at '{member}' failed to satisfy constraint: Member must "
                f"have length less than or equal to {NAME_MAX}")
    if not _NAME_RE.fullmatch(value):
        return (f"Value '{value}' at '{member}' failed to satisfy constraint: Member must "
                f"satisfy regular expression pattern: {NAME_PATTERN}")
    return None


def checked_name(value: object, member: str) -> str:
    """`value` if it is a valid job name, else Glue's ValidationException (HTTP 400); not
    a string at all: SerializationException, as AWS's JSON protocol answers a wrong type."""
    if value is not None and not isinstance(value, str):
        raise GlueError("SerializationException",
                        f"{member}: {_json_kind(value)} can not be converted to a String")
    problem = name_problem(value, member)
    if problem is not None:
        raise GlueError("ValidationException", validation_message([problem]))
    return value  # type: ignore[return-value]


def valid_name(value: object) -> bool:
    return isinstance(value, str) and name_problem(value, "name") is None


def _escaped(name: str) -> str:
    out = []
    for ch in name:
        if ch in _PLAIN:
            out.append(ch)
        else:
            out.extend(f"%{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def state_name(name: str) -> str:
    """The one path component that stands for job `name` in the state dir: the name
    escaped (a-z, 0-9, '_' and '-' kept, any other character %xx per UTF-8 byte), or,
    when that is empty or longer than STATE_NAME_MAX, its first characters, '~' and the
    SHA-256 of the name. spark/glue-jvm's StateNames.fileName is the same function."""
    escaped = _escaped(name)
    if escaped and len(escaped) <= STATE_NAME_MAX:
        return escaped
    head = escaped[:_HEAD]
    cut = head.rfind("%")
    if cut > len(head) - 3:  # never half an escape
        head = head[:cut]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{head}{HASHED}{digest}"


# --- the encodings of earlier versions (read once, when state is migrated) ------------
def legacy_bookmark_stem(name: str) -> str:
    """Earlier versions' bookmark file stem: many names shared one (`a b`, `a_b`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
