"""Feedback pages show points and messages, never hidden test source."""
from __future__ import annotations

from autograder.results import feedback
from autograder.results.results import Results, TestResult

HIDDEN = ["assert double(21) == 42, 'hidden: double(21) must be 42'", "x = 1"]


def test_messages_quoting_hidden_tests_are_removed():
    results = Results(tests=[
        TestResult("a", 0, 3, "Traceback: assert double(21) == 42, 'hidden: double(21) must be 42' failed", status="failed"),
        TestResult("b", 0, 2, "SECRET_WORD is 'x'; use the data file", status="failed"),
        TestResult("c", 1, 1, "x = 1 is short, so it is not hidden", status="passed"),
    ])
    cleaned = feedback.redact_hidden(results, HIDDEN)
    assert cleaned.tests[0].output == feedback.REDACTED
    assert cleaned.tests[1].output == "SECRET_WORD is 'x'; use the data file"
    assert cleaned.tests[2].output.startswith("x = 1")
    assert results.tests[0].output != feedback.REDACTED  # the input is not modified


def test_redaction_sees_through_reflowed_whitespace():
    results = Results(tests=[TestResult("a", 0, 3, "assert double(21) ==   42,\n 'hidden: double(21) must be 42'")])
    assert feedback.redact_hidden(results, HIDDEN).tests[0].output == feedback.REDACTED


def test_html_shows_each_part_escaped():
    results = Results(tests=[
        TestResult("test-a", 3, 3, "double works", status="passed"),
        TestResult("test-b", 0, 2, "<script>alert(1)</script> & more", status="failed"),
    ], output="cell 3 ran longer than 8 s")
    page = feedback.render_html(results, student="al<ice>", assignment="tiny")
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "al&lt;ice&gt;" in page
    assert "Score: 3 / 5" in page
    assert "test-a" in page and "3 / 3" in page and "0 / 2" in page
    assert "cell 3 ran longer than 8 s" in page


def test_messages_lose_the_graders_frames_and_colour_codes_and_keep_the_cause():
    import os
    import sys

    from autograder.results import feedback as fb

    package = os.path.dirname(os.path.dirname(os.path.abspath(fb.__file__)))
    site = os.path.join(sys.prefix, "lib", "python3.11", "site-packages", "keras", "src", "trainers", "trainer.py")
    message = (
        "your code raised InvalidArgumentError: Graph execution error:\n\n"
        "Detected at node sparse_categorical_crossentropy/Xent defined at (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n\n'
        f'  File "{package}/sandbox/zygote.py", line 69, in <module>\n\n'
        f'  File "{site}", line 55, in fit\n    self.step()\n\n'
        '  File "/tmp/ipykernel_12/3456.py", line 7, in train_step\n    loss = loss_fn(y, logits)\n\n'
        "\x1b[31mReceived a label value of 3 which is outside the valid range of [0, 3).\x1b[0m\n"
        f"(seen by {package}/checks/timing.py)")
    cleaned = fb.clean_message(message)
    assert package not in cleaned and sys.prefix not in cleaned and "zygote" not in cleaned and "<frozen" not in cleaned
    assert "\x1b" not in cleaned
    assert cleaned.startswith("your code raised InvalidArgumentError: Graph execution error:")
    assert '"/tmp/ipykernel_12/3456.py", line 7, in train_step' in cleaned and "loss = loss_fn(y, logits)" in cleaned
    assert "Received a label value of 3 which is outside the valid range of [0, 3)." in cleaned
    assert fb.clean_message("double(2) returned 3, expected 4") == "double(2) returned 3, expected 4"
