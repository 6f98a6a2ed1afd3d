"""Every figure a page states is printed by one of that page's cells, or cited beside it.

A *figure* is a number in the prose (not in code cells, their outputs, inline
code, math or headings) that carries a unit or a multiplier: ``3.2×``,
``3.2x``, ``91.9 GB/s``, ``12 ms``, ``156 TFLOPS``, ``8 bytes``, ``40%``,
``2**15``, ``2 cores``, a number in scientific notation (``6e-8``), or a range of them
(``2–3×``).  Version numbers, dates, chapter and list numbers carry no unit and
are not figures; shapes (``1024×1024``) and type names (``16-bit``) are not either.

A figure passes when

- one of the page's executed outputs prints it: the same value at the prose's
  precision (``3.2×`` matches ``3.21``; ``12 ms`` matches ``0.0121`` s, the
  scale of its unit allowed), within 10% when the prose says "about",
  "roughly", "~" and the like; or
- its sentence, or the sentence next to it, cites a source: a link to an
  external page, a source path in inline code (``tensorflow/core/util/port.cc``),
  or a named specification (IEEE 754, an RFC or a PEP).

``python -m tests.book.test_numbers`` writes the current offenders to a file
(from ``_build/html``, or from the chapters' sources and saved outputs when the
book is not built): see :func:`main`.
"""
from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Unit families: what scale may turn a printed value into the prose's unit.
_TIME = ("s", "sec", "seconds", "second", "ms", "µs", "μs", "us", "ns", "min", "minutes", "minute", "hours",
         "hour")
_SIZE = ("bytes", "byte", "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "kB", "bits", "bit")
_RATE = ("GB/s", "MB/s", "TB/s", "GiB/s", "MiB/s", "KB/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "GFLOPS", "TFLOPS",
         "PFLOPS", "FLOPs", "FLOPS", "FLOP", "GFLOP", "TFLOP", "GHz", "MHz", "W", "steps/s", "examples/s",
         "images/s", "samples/s", "it/s", "ops/s", "calls/s")
_RATIO = ("×", "x", "times")
# A machine's size is a figure too: "2 cores" is false on the next machine that builds the page.
_COUNT = ("cores", "CPU cores", "GPUs", "CPUs")
_PERCENT = ("%", "percent")
_SCALES = {
    "time": (1, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 60, 1 / 60),
    "size": (1, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 1024, 1 / 1024, 1024 ** 2, 1024 ** -2, 1024 ** 3, 1024 ** -3, 8,
             1 / 8),
    "rate": (1, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9),
    "ratio": (1,),
    "count": (1,),
    "percent": (1, 100, 0.01),
    "bare": (1,),
}
_FAMILY = {**{u: "time" for u in _TIME}, **{u: "size" for u in _SIZE}, **{u: "rate" for u in _RATE},
           **{u: "ratio" for u in _RATIO}, **{u: "percent" for u in _PERCENT}, **{u: "count" for u in _COUNT}}

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# Units spelled with letters need a space before them except x; "s" and "W" alone need the space.
_WORD_UNITS = sorted((u for u in _FAMILY if u not in ("×", "x", "%")), key=len, reverse=True)
_UNIT = (r"(?:\s?(?P<u1>×|%)(?!\s?\d)"                     # 8×, 40% (not a shape 8×8)
         r"|(?P<u2>x)(?![\w\d])"                              # 3.2x (not 0x1f, not 2x2)
         r"|[ \u00a0\u202f](?P<u3>" + "|".join(map(re.escape, _WORD_UNITS)) + r")(?![\w/]))")
_FIGURE = re.compile(
    r"(?<![\w.\-/+])(?P<lo>" + _NUM + r")(?:\s?(?:–|—|-|to)\s?(?P<hi>" + _NUM + r"))?" + _UNIT
    + r"|(?<![\w.\-/])(?P<sci>\d+(?:\.\d+)?[eE][-+]?\d+)(?![\w.])"
    + r"|(?<![\w.\-/])(?P<base>\d+)\s?(?:\*\*|\^)\s?(?P<pow>\d+)(?![\w.])")
_TIMES_OK = re.compile(r"\s+(?:faster|slower|more|less|larger|smaller|as|the|higher|lower|bigger|fewer)\b")
_APPROX = re.compile(r"(?:about|around|roughly|nearly|almost|approximately|some|~|≈|∼|over|under|more than|"
                     r"less than|at least|at most|up to|below|above)\s*$", re.I)
_VERSION_BEFORE = re.compile(r"(?:TensorFlow|TF|Python|CUDA|cuDNN|cuBLAS|Keras|NumPy|nbgrader|Ubuntu|"
                             r"Jupyter Book|version|v)\s*$", re.I)
# Numbers with units that state no result: a chapter's reading time ("Time: 45
# minutes", the skeleton's first line) and a confidence level ("95% confidence").
_NOT_A_CLAIM = re.compile(r"^\s*Time:\s*\0|\0\s+confidence\b")
_OUT_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|"
                         r"(?<![\w.])[-+]?\.\d+(?:[eE][-+]?\d+)?")
_SOURCE_PATH = re.compile(r"^(?:[\w.\-]+/)+[\w.\-]+\.(?:cc|h|hpp|cpp|cu|cuh|c|py|proto|bzl|td|json|md|txt|yaml)"
                          r"(?::\d+)?$|^(?:tensorflow|third_party|xla|keras|tsl)/\S+$")
_SPEC = re.compile(r"\b(?:IEEE[ -]?754|RFC ?\d+|PEP ?\d+)\b")
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\betc)(?<!\bcf)(?<!\bapprox)(?<!\bNo)"
                           r"[.!?](?=\s+[\"“(\[A-Z0-9`*_])")
BLOCK_TAGS = {"p", "li", "dt", "dd", "td", "th", "caption", "figcaption", "blockquote"}
SKIP_TAGS = {"script", "style", "nav", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "button", "svg", "img"}


@dataclass
class Figure:
    """One number with a unit in a page's prose, and the sentence it is in."""

    text: str
    values: list[float]
    decimals: list[int]
    approx: bool
    family: str
    sentence: str


@dataclass
class Block:
    """The prose of one paragraph, list item or table cell: its text, which
    characters are inline code or math (``mask``), and where it cites a source."""

    text: str = ""
    mask: str = ""
    cites: list[int] = field(default_factory=list)

    def add(self, text: str, kind: str) -> None:
        self.text += text
        self.mask += kind * len(text)


def _value(text: str) -> tuple[float, int]:
    """A prose number's value and its decimals (for ``6e-8``: the decimals of
    its last place, 8)."""
    text = text.replace(",", "")
    if "e" in text.lower():
        mantissa, exp = re.split("[eE]", text)
        places = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return float(text), places - int(exp)
    return float(text), len(text.split(".")[1]) if "." in text else 0


def find_figures(block: Block) -> list[tuple[Figure, bool]]:
    """The figures in one block, each with whether its sentence (or a
    neighbour) cites a source."""
    # Code and math take no part: their digits are blanked, their dots cannot end a sentence.
    prose = "".join(ch if m == "p" else ("x" if m in "cm" and not ch.isspace() else " ")
                    for ch, m in zip(block.text, block.mask))
    bounds, start = [], 0
    for end in _SENTENCE_END.finditer(prose):
        bounds.append((start, end.end()))
        start = end.end()
    bounds.append((start, len(prose)))
    cited_sentences = {i for i, (a, b) in enumerate(bounds)
                       if any(a <= c <= b for c in block.cites) or _SPEC.search(prose[a:b])}
    found = []
    for i, (a, b) in enumerate(bounds):
        sentence = " ".join(block.text[a:b].split())
        blanked = "".join(ch if m == "p" else " " for ch, m in zip(block.text[a:b], block.mask[a:b]))
        for match in _FIGURE.finditer(blanked):
            before = blanked[:match.start()]
            if _VERSION_BEFORE.search(before) and not match.group("sci"):
                continue
            unit = match.group("u1") or match.group("u2") or match.group("u3")
            if _NOT_A_CLAIM.search(blanked[:match.start()] + "\0" + blanked[match.end():]):
                continue
            if unit == "times" and not _TIMES_OK.match(blanked, match.end()):
                continue  # "ran 3 times" counts calls: a count, not a multiplier
            if match.group("sci"):
                numbers, family = [match.group("sci")], "bare"
            elif match.group("base"):
                value = float(int(match.group("base")) ** min(int(match.group("pow")), 64))
                figure = Figure(match.group(0), [value], [0], False, "bare", sentence)
                found.append((figure, bool(cited_sentences & {i - 1, i, i + 1})))
                continue
            else:
                numbers = [match.group("lo")] + ([match.group("hi")] if match.group("hi") else [])
                family = _FAMILY[unit]
            parsed = [_value(n) for n in numbers]
            figure = Figure(match.group(0).strip(), [v for v, _ in parsed], [d for _, d in parsed],
                            bool(_APPROX.search(before)), family, sentence)
            found.append((figure, bool(cited_sentences & {i - 1, i, i + 1})))
    return found


def output_numbers(text: str) -> list[float]:
    """Every number an output prints."""
    values = []
    for token in _OUT_NUMBER.findall(text):
        try:
            values.append(float(token.replace(",", "")))
        except ValueError:
            continue
    return values


def is_printed(figure: Figure, printed: list[float], inputs: str = "") -> bool:
    """Whether ``printed`` (a page's output numbers) shows every value of
    ``figure`` at the prose's precision, in the unit's scale; a bare
    scientific literal or power may also be written as such in a code cell."""
    if figure.family == "bare" and figure.text.replace(" ", "") in inputs.replace(" ", ""):
        return True
    for value, places in zip(figure.values, figure.decimals):
        tolerance = 0.5 * 10.0 ** -places * (1 + 1e-9)
        if figure.approx:
            tolerance = max(tolerance, 0.1 * abs(value))
        scales = _SCALES[figure.family]
        if not any(math.isclose(o * s, value, abs_tol=tolerance) or abs(o * s - value) <= tolerance
                   for o in printed for s in scales):
            return False
    return True


def _code_cites(text: str) -> bool:
    return bool(_SOURCE_PATH.match(text.strip()))


def html_parts(html: str) -> tuple[list[Block], str, str]:
    """(prose blocks, the outputs' text, the code cells' text) of one built page."""
    from bs4 import BeautifulSoup, NavigableString, Tag

    soup = BeautifulSoup(html, "html.parser")
    root = soup.select_one("article.bd-article") or soup.select_one("main") or soup.body or soup
    outputs = " \n".join(el.get_text(" ") for el in root.select(
        "div.cell_output, .output, .pasted-inline, .pasted-text, .pasted-math"))
    inputs = " \n".join(el.get_text(" ") for el in root.select("div.cell_input, div.highlight, pre"))
    blocks: list[Block] = []

    def walk(node: Tag, block: Block | None) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if block is not None and type(child) is NavigableString:  # not comments or CDATA
                    block.add(str(child), "p")
                continue
            if not isinstance(child, Tag):
                continue
            classes = set(child.get("class") or ())
            if child.name in SKIP_TAGS or classes & {"cell", "cell_output", "headerlink", "highlight",
                                                     "output", "toctree-wrapper", "admonition-title"}:
                continue
            if classes & {"pasted-inline", "pasted-text"}:
                continue  # glued from an output: printed, not typed
            if child.name in BLOCK_TAGS:
                inner = Block()
                blocks.append(inner)
                walk(child, inner)
                continue
            if block is None:
                walk(child, None)
                continue
            if child.name in ("code", "kbd", "samp", "tt") or "literal" in classes:
                text = child.get_text()
                if _code_cites(text):
                    block.cites.append(len(block.text))
                block.add(text, "c")
            elif "math" in classes:
                block.add(child.get_text(), "m")
            else:
                if child.name == "a" and str(child.get("href", "")).startswith(("http://", "https://")):
                    block.cites.append(len(block.text))
                walk(child, block)

    walk(root, None)
    return [b for b in blocks if b.text.strip()], outputs, inputs


@dataclass
class Offender:
    page: str
    figure: str
    sentence: str

    def __str__(self) -> str:
        return f"{self.page}: {self.figure!r} in: {self.sentence}"


def page_offenders(page: str, blocks: list[Block], outputs: str, inputs: str = "") -> list[Offender]:
    """The figures of one page neither printed by its outputs nor cited."""
    printed = output_numbers(outputs)
    offenders = []
    for block in blocks:
        for figure, cited in find_figures(block):
            if not cited and not is_printed(figure, printed, inputs):
                offenders.append(Offender(page, figure.text, figure.sentence))
    return offenders


def built_page_offenders(html_dir: Path, pages: list[str]) -> list[Offender]:
    found = []
    for page in pages:
        path = html_dir / f"{page}.html"
        blocks, outputs, inputs = html_parts(path.read_text(encoding="utf-8"))
        found += page_offenders(page, blocks, outputs, inputs)
    return found


def _toc_pages() -> list[str]:
    from tests.book.test_book import toc_files

    return toc_files()


def format_offenders(offenders: list[Offender]) -> str:
    return "\n".join(str(o) for o in offenders)


# ---------------------------------------------------------------- the book


@pytest.mark.slow
def test_every_figure_in_the_book_is_printed_or_cited(built_book):
    offenders = built_page_offenders(built_book, _toc_pages())
    assert not offenders, (
        f"{len(offenders)} figure(s) in the prose are printed by no cell of their page and cite no source "
        "(print the number from a cell, or cite the doc page / spec / source path beside it):\n"
        + format_offenders(offenders))


# ------------------------------------------------------- the extractor itself


def _page(prose: str, output: str = "") -> str:
    return ('<html><body><main><article class="bd-article"><section><h2>3.2 s heading</h2>'
            f"<p>{prose}</p>"
            '<div class="cell docutils container"><div class="cell_input docutils container">'
            '<div class="highlight"><pre>x = 2**15  # 7.7 ms</pre></div></div>'
            f'<div class="cell_output docutils container"><div class="output stream highlight-myst-ansi">'
            f"<pre>{output}</pre></div></div></div></section></article></main></body></html>")


def _offenders(prose: str, output: str = "") -> list[str]:
    return [o.figure for o in page_offenders("p", *html_parts(_page(prose, output)))]


def test_an_unsupported_figure_is_an_offender_with_page_and_sentence():
    blocks, outputs, inputs = html_parts(_page("Setup is short. The copy ran at 91.9 GB/s here. Then more.",
                                               "bandwidth 12.0 GB/s"))
    (offender,) = page_offenders("book/02_gpu_placement", blocks, outputs, inputs)
    assert offender.figure == "91.9 GB/s"
    assert str(offender) == "book/02_gpu_placement: '91.9 GB/s' in: The copy ran at 91.9 GB/s here."


def test_a_figure_printed_by_an_output_passes_with_rounding_and_scale():
    assert _offenders("XLA made it 3.2× faster.", "speedup: 3.21") == []
    assert _offenders("XLA made it 3.2x faster.", "speedup: 3.26") == ["3.2x"]
    assert _offenders("A step takes 12 ms.", "step: 0.0121 s") == []
    assert _offenders("It used 40% of the limit.", "fraction 0.402") == []
    assert _offenders("The delay was 10.1 s.", "waited 10.06 s") == []
    assert _offenders("The delay was 10.1 s.", "waited 10.3 s") == ["10.1 s"]


def test_about_allows_ten_percent_and_ranges_need_both_ends():
    assert _offenders("About 8× faster.", "ratio 7.6") == []
    assert _offenders("Exactly 8× faster.", "ratio 7.6") == []  # rounds to 8
    assert _offenders("Exactly 8.0× faster.", "ratio 7.6") == ["8.0×"]
    assert _offenders("It is 2–3× faster.", "2.1 and 2.9") == []
    assert _offenders("It is 2–5× faster.", "2.1 and 2.9") == ["2–5×"]


def test_a_cited_figure_passes():
    link = '<a class="reference external" href="https://docs.nvidia.com/a100">the A100 datasheet</a>'
    assert _offenders(f"The A100 does 156 TFLOPS in TF32 ({link}).") == []
    assert _offenders("The A100 does 156 TFLOPS in TF32. Its maths is twice as fast.") == ["156 TFLOPS"]
    code = '<code class="docutils literal notranslate"><span class="pre">tensorflow/core/util/port.cc</span></code>'
    assert _offenders(f"The wait is 30 min, says {code}.") == []
    assert _offenders("A float16 denormal below 6e-8 is zero (IEEE 754).") == []
    assert _offenders("A float16 denormal below 6e-8 is zero.", "3e-08 -> 0.0") == ["6e-8"]
    assert _offenders("A float16 denormal below 6e-8 is zero.", "smallest: 5.96e-08") == []  # rounds to it


def test_what_is_not_a_figure():
    code = '<code class="docutils literal notranslate"><span class="pre">x = 4 GB</span></code>'
    math_span = '<span class="math notranslate nohighlight">\\(3 s\\)</span>'
    assert _offenders(f"TensorFlow 2.21 on Python 3.11 with CUDA 12.5 in 2019 and {code} and {math_span}.") == []
    assert _offenders("A 1024×1024 matmul in 16-bit floats on x86-64, sm_80, 0x1f, ran 3 times.") == []
    assert _offenders("Chapter 4 has 3 parts: 1. one, 2. two.") == []
    assert _offenders("Time: 45 minutes.") == []  # the chapter's reading time
    assert _offenders("A ratio with its 95% confidence interval.") == []
    assert _offenders("It took 45 minutes. Only 95% of runs.") == ["45 minutes", "95%"]


def test_powers_and_units_glued_from_outputs():
    assert _offenders("A batch of 2**15 rows.") == []  # written so in the code cell
    assert _offenders("A batch of 2**16 rows.") == ["2**16"]
    glued = '<span class="pasted-inline">3.7 s</span>'
    assert _offenders(f"It took {glued}.") == []
    assert _offenders("The list holds 8 bytes per element.", "itemsize 8") == []
    assert _offenders("Built on a machine with 2 cores.", "os.cpu_count(): 16") == ["2 cores"]
    assert _offenders("Built on a machine with 2 cores.", "cores: 2") == []


def test_headings_code_cells_and_outputs_are_not_prose():
    blocks, _, inputs = html_parts(_page("Plain text."))
    assert [b.text for b in blocks] == ["Plain text."]
    assert "7.7 ms" in inputs


# ---------------------------------------------------- the offenders, on demand


def _dump_outputs(dump: Path) -> tuple[list[str], list[str]]:
    """Outputs and inputs per code cell from a chapter run's text dump
    (``===== cell N`` / ``----- out`` blocks)."""
    outputs, inputs = [], []
    for chunk in dump.read_text(encoding="utf-8").split("===== cell ")[1:]:
        source, _, out = chunk.partition("----- out")
        inputs.append(source)
        outputs.append(out)
    return outputs, inputs


def _notebook_outputs(path: Path) -> tuple[list[str], list[str]]:
    """Outputs and inputs per code cell of an executed notebook."""
    import nbformat

    outputs, inputs = [], []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        inputs.append(cell.source)
        texts = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out.get("text", ""))
            for mime in ("text/plain", "text/markdown", "text/html"):
                texts.append(str(out.get("data", {}).get(mime, "")))
        outputs.append("\n".join(texts))
    return outputs, inputs


def source_page_html(md: Path, outputs: list[str] | None = None) -> str:
    """A page's HTML made from its MyST source (directives opened up, roles
    read as text), with ``outputs`` as its cells' outputs: for the offenders
    list when no built book is at hand.  The test itself reads the real build."""
    import html as htmllib

    import jupytext
    from markdown_it import MarkdownIt

    md_it = MarkdownIt("commonmark").enable("table")
    nb = jupytext.read(md)
    parts, k = [], 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = re.sub(r"^(?:```+|:::+)\s*\{[\w-]+\}.*$|^(?:```+|:::+)\s*$|^:[\w-]+:.*$|^\([\w-]+\)=\s*$", "",
                          cell.source, flags=re.M)
            text = re.sub(r"\{(?:doc|ref|numref|term|eq)\}`([^`<]*?)(?:\s*<[^`]*>)?`", r"\1", text)
            parts.append(md_it.render(text))
        elif cell.cell_type == "code":
            out = outputs[k] if outputs and k < len(outputs) else ""
            k += 1
            parts.append('<div class="cell"><div class="cell_input"><pre>' + htmllib.escape(cell.source)
                         + '</pre></div><div class="cell_output"><pre>' + htmllib.escape(out) + "</pre></div></div>")
    return '<html><body><article class="bd-article">' + "\n".join(parts) + "</article></body></html>"


def main(argv: list[str]) -> int:
    """``python -m tests.book.test_numbers OUT [DUMPS_DIR]``: write the offenders
    to OUT, from ``_build/html`` when built, else from the sources with the
    outputs of chapter runs saved as ``DUMPS_DIR/<page>.<setting>.txt`` or
    ``.ipynb`` (all
    settings' outputs count; a page with none is listed with every figure)."""
    out = Path(argv[0])
    html_dir = ROOT / "_build" / "html"
    pages = _toc_pages()
    lines = ["# figures in the prose printed by no cell of their page and citing nothing (tests/book/test_numbers.py)",
             "# regenerate: .venv/bin/python -m tests.book.test_numbers OUT [DUMPS_DIR]"]
    if all((html_dir / f"{p}.html").exists() for p in pages):
        offenders = built_page_offenders(html_dir, pages)
        lines.append(f"# from the built book {html_dir}")
    else:
        dumps = Path(argv[1]) if len(argv) > 1 else None
        offenders = []
        for page in pages:
            name = Path(page).name
            found = sorted([*dumps.glob(f"{name}.*.txt"), *dumps.glob(f"{name}.*.ipynb")]) if dumps else []
            outs, ins = [], []
            for dump in found:
                o, i = (_notebook_outputs if dump.suffix == ".ipynb" else _dump_outputs)(dump)
                outs, ins = outs + o, ins + i
            blocks, _, inputs = html_parts(source_page_html(ROOT / f"{page}.md"))
            offenders += page_offenders(page, blocks, "\n".join(outs), inputs + "\n".join(ins))
            lines.append(f"# {page}: outputs from {', '.join(d.name for d in found) or 'NO RUN (every figure listed)'}")
    lines.append(f"# {len(offenders)} offender(s)")
    out.write_text("\n".join(lines + [str(o) for o in offenders]) + "\n", encoding="utf-8")
    print(f"{len(offenders)} offender(s) written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
