"""Memory of a service: its process and every descendant (a Glue run's JVM, a spare run
process), read from /proc through psutil. Shared by the benches that report memory."""

from __future__ import annotations

import contextlib


def tree_memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process and all its descendants, bytes ((0, 0) if it is gone).
    Summed RSS counts a shared page once per process that touched it (postgres's shared
    buffers, once per backend); PSS shares it out, so the tree's sum counts it once."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    rss = pss = 0
    for q in procs:
        with contextlib.suppress(psutil.Error):  # gone since the listing
            info = q.memory_full_info()
            rss, pss = rss + info.rss, pss + getattr(info, "pss", info.rss)
    return rss, pss
