"""The one way the course writes a file someone keeps: all or nothing."""
from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path | str, data: str | bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` so that ``path`` holds either its old content or all of the new.

    A temporary file in the same folder is written, flushed to disk and renamed
    over ``path``; an interrupted write leaves no half file and no temporary.
    The file gets the mode any new file of this process gets (``0o666`` less the
    umask: 0644 under the usual 022, 0640 under a course group's 027), unless
    ``mode`` says otherwise; the mode is set before the rename, so ``path`` never
    has any other."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(path)
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


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new, empty ``.<name>.<random>.tmp`` beside ``path``, created with ``0o666`` so the
    kernel applies the umask (``tempfile.mkstemp`` would make it 0600 whatever the umask)."""
    while True:
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
