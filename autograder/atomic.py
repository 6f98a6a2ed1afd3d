"""The one way the course writes a file someone keeps: all or nothing."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, data: str | bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` so that ``path`` holds either its old content or all of the new.

    A temporary file in the same folder is written, flushed to disk and renamed
    over ``path``; an interrupted write leaves no half file and no temporary.
    The file is private to its owner (0600) unless ``mode`` says otherwise; the
    mode is set before the rename, so ``path`` never has any other."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
