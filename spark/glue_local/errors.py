"""The one error type of the local Glue API: Glue's error code plus a message.

Operation handlers (catalog_api, jobs_api) raise GlueError; server.py turns it into
Glue's JSON 1.1 error response ({"__type": code, "message": message}, HTTP 400), so
boto3 raises a ClientError with the same code AWS would send.
"""

from __future__ import annotations


class GlueError(Exception):
    """A Glue API error: `code` is Glue's error name, e.g. EntityNotFoundException."""

    code: str
    message: str

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def not_found(message: str) -> GlueError:
    return GlueError("EntityNotFoundException", message)


def already_exists(message: str) -> GlueError:
    return GlueError("AlreadyExistsException", message)


def invalid_input(message: str) -> GlueError:
    return GlueError("InvalidInputException", message)
