"""A request's JSON types checked against Glue's API model, as AWS's JSON 1.1 front end does.

botocore checks types before it sends; a raw JSON client may send anything. AWS answers
a value of the wrong JSON type with SerializationException (HTTP 400) before the
operation runs; so does the local API, with the member's path, instead of failing inside
an operation (HTTP 500). Uses the Glue model botocore ships
(botocore/data/glue/2017-03-31/service-2.json). Members the model does not know are left
alone (the operations ignore them).
"""

from __future__ import annotations

import functools

from glue_local.errors import GlueError

MAX_DEPTH = 32  # the model's shapes nest far less; deeper JSON is not Glue's


@functools.cache
def _model():
    from botocore.session import get_session

    return get_session().get_service_model("glue")


def _problem(shape, value, path: str, depth: int) -> str | None:
    if value is None:
        return None
    if depth > MAX_DEPTH:
        return f"{path}: nested too deep"
    kind = shape.type_name
    ok = {
        "structure": isinstance(value, dict), "map": isinstance(value, dict),
        "list": isinstance(value, list), "string": isinstance(value, str),
        "boolean": isinstance(value, bool), "blob": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "long": isinstance(value, int) and not isinstance(value, bool),
        "double": isinstance(value, (int, float)) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "timestamp": isinstance(value, (int, float, str)) and not isinstance(value, bool),
    }.get(kind, True)
    if not ok:
        return f"{path}: expected a {kind}, got {type(value).__name__}"
    if kind == "structure":
        for name, member in shape.members.items():
            if name in value:
                found = _problem(member, value[name], f"{path}.{name}", depth + 1)
                if found:
                    return found
    elif kind == "list":
        for i, item in enumerate(value):
            found = _problem(shape.member, item, f"{path}[{i}]", depth + 1)
            if found:
                return found
    elif kind == "map":
        for key, item in value.items():
            found = _problem(shape.value, item, f"{path}.{key}", depth + 1)
            if found:
                return found
    return None


def check(operation: str, request: dict) -> None:
    """SerializationException when a member of `request` has another JSON type than the
    model's."""
    model = _model()
    if operation not in model.operation_names:
        return
    shape = model.operation_model(operation).input_shape
    problem = shape is not None and _problem(shape, request, operation, 0)
    if problem:
        raise GlueError("SerializationException", problem)
