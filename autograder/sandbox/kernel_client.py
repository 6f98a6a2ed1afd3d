"""The worker's side of its kernel: the kernel spec jupyter_client starts it from, and the
nbclient that runs the cells with an output cap and an interrupt for a cell out of time."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from autograder.sandbox.host import KERNEL_CONFIG_ENV, KERNEL_NAME
from autograder.sandbox.kernel import KERNEL_MODULE

def write_kernel_spec(workdir: Path, config: dict) -> None:
    spec_dir = workdir / ".tmp" / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", KERNEL_MODULE, "-f", "{connection_file}"],
        "display_name": "Python 3 (autograder sandbox)",
        "language": "python",
        "env": {KERNEL_CONFIG_ENV: json.dumps(config)},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))


def _output_size(msg: dict) -> int:
    content = msg.get("content", {})
    if msg.get("msg_type") == "stream":
        return len(content.get("text", ""))
    data = content.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def limited_client_class():
    import asyncio

    from jupyter_core.utils import ensure_async, run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    class LimitedClient(NotebookClient):
        """nbclient that caps a cell's output and interrupts a cell out of time.

        Output beyond ``output_cap`` bytes is dropped (and the cell noted in
        ``overflowed``).  A cell over its time is interrupted and its reply
        awaited as usual, so the kernel's message streams stay in step and
        later cells run normally (the cell is noted in ``timed_out``); only a
        kernel that ignores the interrupt for ``interrupt_grace_s`` raises
        ``CellTimeoutError``."""

        output_cap = 1 << 20
        interrupt_grace_s = 10.0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.output_used: dict[int, int] = {}
            self.overflowed: set[int] = set()
            self.timed_out: set[int] = set()
            self.replies: dict[int, dict] = {}  # cell index -> the kernel's execute_reply content
            self._current = -1
            self._interrupted_at: float | None = None

        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            self._current, self._interrupted_at = cell_index, None
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

        execute_cell = run_sync(async_execute_cell)

        async def _check_raise_for_error(self, cell, cell_index, exec_reply):
            if exec_reply is not None:
                self.replies[cell_index] = dict(exec_reply.get("content", {}))
            return await super()._check_raise_for_error(cell, cell_index, exec_reply)

        async def _async_handle_timeout(self, timeout, cell=None):
            now = time.monotonic()
            if self._interrupted_at is None:
                self._interrupted_at = now
                self.timed_out.add(self._current)
                await ensure_async(self.km.interrupt_kernel())
            elif now - self._interrupted_at > self.interrupt_grace_s:
                raise CellTimeoutError.error_from_timeout_and_cell("Cell execution timed out", timeout, cell)
            await asyncio.sleep(0.1)
            return None

        def output(self, outs, msg, display_id, cell_index):
            if msg.get("msg_type") != "error":
                used = self.output_used.get(cell_index, 0) + _output_size(msg)
                self.output_used[cell_index] = used
                if used > self.output_cap:
                    self.overflowed.add(cell_index)
                    return None
            return super().output(outs, msg, display_id, cell_index)

    return LimitedClient
