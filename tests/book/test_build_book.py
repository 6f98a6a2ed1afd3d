"""book/build_book.py: a failed book build names the chapter, the cell and the error."""
from __future__ import annotations

from tests.book.conftest import load_book_script

build_book = load_book_script("build_book")

CHAPTER = """---
jupytext:
  text_representation:
    format_name: myst
---

# A chapter

```{code-cell} ipython3
:tags: [hide-output]

x = 1
```

Some prose.

```{code-cell} ipython3
print("second")
raise ValueError("planted")
```
"""


def jupyter_book_log(path) -> str:
    """The shape of jupyter-book 1.0's output when a cell fails (colours stripped)."""
    return f"""reading sources... [ 50%] book/ch
{path}: WARNING: Executing notebook failed: CellExecutionError
Traceback (most recent call last):
  File ".../nbclient/client.py", line 918, in _check_raise_for_error
    raise CellExecutionError.from_cell_and_msg(cell, exec_reply_content)
nbclient.exceptions.CellExecutionError: An error occurred while executing the following cell:
------------------
print("second")
raise ValueError("planted")
------------------

----- stdout -----
second
------------------

---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[2], line 2
----> 2 raise ValueError("planted")

ValueError: planted

WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
{path}: WARNING: Notebook exception traceback saved in: _build/html/reports/book/ch.err.log [mystnb.exec]
/x/book/intro.md:3: WARNING: unknown document: 'nowhere'
"""


def test_a_failing_cell_is_named_with_its_number_line_and_error(tmp_path):
    chapter = tmp_path / "ch.md"
    chapter.write_text(CHAPTER)
    [failure] = build_book.failures(jupyter_book_log(chapter))
    assert failure.cell == 2 and failure.error == "ValueError: planted"
    assert CHAPTER.splitlines()[failure.line - 1] == 'print("second")'
    assert failure.describe().endswith(f"code cell 2 (line {failure.line}) failed: ValueError: planted")


def test_sphinx_warnings_are_listed_without_kernel_noise(tmp_path):
    warnings = build_book.other_warnings(jupyter_book_log(tmp_path / "ch.md"))
    assert len(warnings) == 2 and warnings[-1] == "/x/book/intro.md:3: WARNING: unknown document: 'nowhere'"
    assert not any("absl" in w for w in warnings)


def test_a_cell_that_is_not_in_the_file_is_still_reported(tmp_path):
    chapter = tmp_path / "ch.md"
    chapter.write_text(CHAPTER.replace('raise ValueError("planted")', "pass"))
    [failure] = build_book.failures(jupyter_book_log(chapter))
    assert failure.cell is None and failure.describe().endswith("a code cell failed: ValueError: planted")
