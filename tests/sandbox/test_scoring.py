"""Scoring a test cell: the kernel's reply and the grader's sentinel decide, not what is displayed."""
from __future__ import annotations

import nbformat
import pytest

from autograder.sandbox import scoring


def _cell(*outputs):
    cell = nbformat.v4.new_code_cell("assert True")
    cell.outputs = list(outputs)
    return cell


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


SENTINEL = scoring.new_sentinel()


def _score(cell, reply):
    return scoring.score_test(cell, grade_id="test-x", points=2.0, reply=reply, sentinel=SENTINEL)


def test_a_test_that_reached_its_end_passes_and_the_sentinel_is_not_shown():
    result = _score(_cell(_stdout(f"works\n{SENTINEL}\n")), {"status": "ok"})
    assert (result.score, result.status, result.output) == (2.0, "passed", "works")


def test_an_error_with_its_display_silenced_still_fails():
    # showtraceback replaced: no error output reaches the notebook, but the reply says error.
    result = _score(_cell(), {"status": "error", "ename": "AssertionError", "evalue": "double(2) returned 3"})
    assert (result.score, result.status, result.output) == (0.0, "failed", "double(2) returned 3")


def test_an_ok_reply_without_the_sentinel_fails():
    # A patched run_cell that swallows the exception and answers "ok".
    result = _score(_cell(_stdout("done\n")), {"status": "ok"})
    assert result.score == 0.0 and "did not run to its end" in result.output


def test_a_guessed_sentinel_does_not_count():
    result = _score(_cell(_stdout(scoring.new_sentinel() + "\n")), {"status": "ok"})
    assert result.score == 0.0


def test_no_reply_is_a_test_that_did_not_run():
    result = _score(_cell(), None)
    assert (result.score, result.status) == (0.0, "error")


def test_with_sentinel_appends_a_top_level_print():
    source = scoring.with_sentinel("for i in range(2):\n    x = i\n", SENTINEL)
    assert source.endswith(f"print({SENTINEL!r}, flush=True)\n")
    compile(source, "<test>", "exec")


PLACER = "Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0\n"


@pytest.mark.parametrize("stdout", [
    'TOK{"ok": "[1]"}\n',
    PLACER + 'TOK{"ok": "[1]"}\n' + PLACER,
    'TOK{"ok": "[1]"}' + PLACER,  # a placer line forwarded between the answer and its newline
    PLACER[:25] + 'TOK{"ok": "[1]"}\n' + PLACER[25:],  # the fd chunk ended mid-line
])
def test_after_token_takes_the_json_value_whatever_the_placer_printed_around_it(stdout):
    assert scoring.after_token(stdout, "TOK") == '{"ok": "[1]"}'


@pytest.mark.parametrize("stdout", ["", 'OTHER{"ok": "[1]"}\n', "TOK not json\n", 'TOK{"ok": \n'])
def test_after_token_is_none_without_a_whole_json_value_after_the_token(stdout):
    assert scoring.after_token(stdout, "TOK") is None
