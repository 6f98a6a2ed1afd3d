"""The sandbox's kernel manager (sandbox/kernel.py): its clients are ready as soon as the
kernel has answered, and a kernel it starts (cold, without a seed) runs cells."""
from __future__ import annotations

import asyncio
from queue import Empty

import pytest

from autograder.sandbox.kernel import kernel_manager_class, ready_client_class


class _Channel:
    def __init__(self, messages):
        self.messages = list(messages)
        self.asked = 0

    async def get_msg(self, timeout=None):
        self.asked += 1
        if not self.messages:
            raise Empty
        return self.messages.pop(0)


def _client(shell, iopub):
    client = ready_client_class()()
    sent = []
    client.kernel_info = lambda: sent.append("kernel_info")
    client._handle_kernel_info_reply = lambda msg: sent.append("handled")

    async def alive():
        return True

    client.is_alive = alive
    # The channels are properties of jupyter_client's client: replace them on the instance's class.
    type(client).shell_channel = property(lambda self: shell)
    type(client).iopub_channel = property(lambda self: iopub)
    return client, sent


def test_ready_after_the_reply_and_one_iopub_message_without_waiting_for_quiet():
    shell = _Channel([{"msg_type": "kernel_info_reply", "content": {}}])
    iopub = _Channel([{"msg_type": "status"}, {"msg_type": "status"}, {"msg_type": "stream"}])
    client, sent = _client(shell, iopub)
    asyncio.run(client.wait_for_ready(timeout=5))
    assert sent == ["kernel_info", "handled"]
    assert iopub.asked == 1 and len(iopub.messages) == 2, "the rest of IOPub is left for nbclient to ignore"


def test_asks_again_until_iopub_carries_a_message():
    shell = _Channel([{"msg_type": "kernel_info_reply", "content": {}}, {"msg_type": "kernel_info_reply",
                                                                        "content": {}}])
    iopub = _Channel([])
    client, sent = _client(shell, iopub)
    original = iopub.get_msg

    async def second_time_lucky(timeout=None):
        if iopub.asked == 1:
            iopub.messages.append({"msg_type": "status"})
        return await original(timeout)

    iopub.get_msg = second_time_lucky
    asyncio.run(client.wait_for_ready(timeout=5))
    assert sent == ["kernel_info", "kernel_info", "handled"]


def test_a_kernel_that_never_answers_times_out():
    client, _ = _client(_Channel([]), _Channel([]))
    with pytest.raises(RuntimeError, match="didn't respond"):
        asyncio.run(client.wait_for_ready(timeout=0))


def test_a_cold_kernel_from_the_manager_runs_a_cell():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    NotebookClient(nb, kernel_name="python3", timeout=120,
                   kernel_manager_class=kernel_manager_class(None)).execute()
    assert nb.cells[0].outputs[0]["text"] == "42\n"
