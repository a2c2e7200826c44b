"""Job: init/commit with Glue's job bookmark semantics (state saved only at commit)."""

from __future__ import annotations

import sys

from awsglue.catalog_source import SourceFile, unprocessed
from awsglue.utils import BOOKMARK_OPTION
from glue_local import bookmarks


class BookmarkSession:
    """Files read in this run per transformation_ctx, filtered by the stored bookmark."""

    def __init__(self, state_dir, job_name: str, option: str, run_id: str | None) -> None:
        self.state_dir, self.job_name, self.option, self.run_id = (
            state_dir, job_name, option, run_id)
        self.read: dict[str, dict[str, dict]] = {}

    def select(self, ctx: str, files: list[SourceFile]) -> list[SourceFile]:
        if self.option != bookmarks.DISABLE:
            done = bookmarks.processed_files(self.state_dir, self.job_name, ctx)
            files = unprocessed(files, done)
        self.read.setdefault(ctx, {}).update(
            {f.key: {"etag": f.etag, "size": f.size} for f in files})
        return files

    def commit(self) -> None:
        if self.option == bookmarks.ENABLE:
            bookmarks.commit(self.state_dir, self.job_name, self.run_id, self.read)


def _argv_value(name: str) -> str | None:
    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class Job:
    def __init__(self, glue_context) -> None:
        self._glue = glue_context
        self._session: BookmarkSession | None = None

    def init(self, job_name: str, args: dict | None = None) -> None:
        from cdclab import settings

        args = args or {}
        option = (args.get("job_bookmark_option") or _argv_value(BOOKMARK_OPTION)
                  or bookmarks.DISABLE)  # Glue's default
        if option not in bookmarks.OPTIONS:
            raise ValueError(f"{BOOKMARK_OPTION} {option!r}: expected one of {bookmarks.OPTIONS}")
        run_id = args.get("JOB_RUN_ID") or _argv_value("--JOB_RUN_ID")
        self._session = BookmarkSession(settings.state_dir(), job_name, option, run_id)
        self._glue.bookmarks = self._session

    def commit(self) -> None:
        if self._session is None:
            raise RuntimeError("Job.commit() called before Job.init()")
        self._session.commit()
        self._glue.bookmarks = None
