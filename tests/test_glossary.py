"""docs/GLOSSARY.md holds every term of the course, and the notebooks hold to it: a term is used
only at or after the section that teaches it, in course order (notebook 01 to 10, cell by cell,
markdown and code comments), unless the place of its first use says where it is taught.

A glossary entry is a ``### term`` heading, then an HTML comment ``<!-- match: REGEX -->`` (how
the term is written in the notebooks; case-insensitive, invisible when the file is rendered) and
a line ``Taught in [notebook NN, "Section heading"](../notebooks/NN_topic.ipynb)``. The section
heading is one of that notebook's markdown headings, as written there.

The first use of a term (the first paragraph of markdown, or code comment, whose text matches
its REGEX) passes when it lies at or after the heading of the section that teaches it, or when
that paragraph is a primer in place: it names the notebook that teaches the term ("notebook
07", "notebooks 05 and 06") or links to the glossary. A notebook's opening cell, which says
what the notebook will teach, may name the terms its own sections teach.
"""
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "GLOSSARY.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

ENTRY = re.compile(r"^### (.+)$", re.M)
MATCH = re.compile(r"<!-- match: (.+?) -->")
TAUGHT = re.compile(r'Taught in \[notebook (\d\d), "([^"]+)"\]\(\.\./notebooks/(\d\d_\w+)\.ipynb\)')
# "notebook 07", "notebooks 05 and 06", "notebooks 06-09", "notebooks 01, 03 and 05"
NAMED = re.compile(r"notebooks?\s+(\d\d(?:(?:\s*,\s*|\s*[-\u2013]\s*|\s+and\s+|\s+to\s+)\d\d)*)",
                   re.I)


# ------------------------------------------------------------------ reading the two sides

def glossary_entries(text):
    """[{term, match, notebook, section, stem}] of a glossary text, in the order written; an
    entry without its match comment or its Taught-in line is reported by the test below."""
    heads = list(ENTRY.finditer(text))
    entries = []
    for head, nxt in zip(heads, heads[1:] + [None]):
        body = text[head.end():nxt.start() if nxt else len(text)]
        m, t = MATCH.search(body), TAUGHT.search(body)
        entries.append({"term": head.group(1).strip(), "match": m and m.group(1),
                        "notebook": t and t.group(1), "section": t and t.group(2),
                        "stem": t and t.group(3), "body": body})
    return entries


def _comments(source):
    """The code comments of a cell, one string per comment (magics blanked first)."""
    lines = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                      for ln in source.splitlines())
    try:
        return [tok.string for tok in tokenize.generate_tokens(io.StringIO(lines).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return ["#" + ln.split("#", 1)[1] for ln in lines.splitlines() if "#" in ln]


def _paragraphs(markdown):
    """A markdown cell cut at blank lines and at the start of every list item."""
    return [p for p in re.split(r"\n\s*\n|\n(?=\s*(?:[*-]|\d+\.)\s)", markdown) if p.strip()]


def course_items(notebooks):
    """(notebook number, cell index, text) of every markdown paragraph and code comment of the
    course, in reading order. ``notebooks`` is [(stem, cells)]."""
    for stem, cells in notebooks:
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            parts = _paragraphs(source) if cell["cell_type"] == "markdown" else _comments(source)
            for part in parts:
                yield stem[:2], i, part


def section_cell(cells, section):
    """The index of the markdown cell holding the heading ``section``, or None."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#") and line.lstrip("#").strip() == section:
                    return i
    return None


def named_notebooks(text):
    """The notebook numbers a paragraph names ("notebooks 06-09" gives 06, 07, 08, 09)."""
    found = set()
    for m in NAMED.finditer(text):
        parts = re.split(r"(\s*,\s*|\s*[-\u2013]\s*|\s+and\s+|\s+to\s+)", m.group(1))
        numbers, seps = [int(p) for p in parts[::2]], parts[1::2]
        found.update(numbers)
        for a, b, sep in zip(numbers, numbers[1:], seps):
            if sep.strip() in ("-", "\u2013", "to"):
                found.update(range(a, b + 1))
    return {f"{n:02d}" for n in found}


def early_uses(entries, notebooks):
    """[sentence] for each term whose first use comes before the section that teaches it,
    without a primer or a pointer in place; empty when the course holds to its glossary."""
    cells = dict(notebooks)
    by_number = {stem[:2]: stem for stem, _ in notebooks}
    items = list(course_items(notebooks))
    problems = []
    for e in entries:
        taught = (e["notebook"], section_cell(cells[by_number[e["notebook"]]], e["section"]))
        rx = re.compile(e["match"], re.I)
        first = next(((nb, i, text) for nb, i, text in items if rx.search(text)), None)
        if first is None or first[:2] >= taught:
            continue
        nb, i, text = first
        if e["notebook"] in named_notebooks(text) or "GLOSSARY.md" in text:
            continue
        if nb == e["notebook"] and i == 0:  # the opening cell announces its own sections
            continue
        word = rx.search(text).group(0)
        problems.append(f"{e['term']!r}: first used as {word!r} in notebook {nb} cell {i}, "
                        f"taught in notebook {e['notebook']} cell {taught[1]} "
                        f"({e['section']!r}); the paragraph names neither: "
                        f"{' '.join(text.split())[:160]}")
    return problems


def _load(path):
    with open(path) as f:
        return json.load(f)["cells"]


@pytest.fixture(scope="module")
def course():
    return [(p.stem, _load(p)) for p in NOTEBOOKS]


@pytest.fixture(scope="module")
def entries():
    return glossary_entries(GLOSSARY.read_text())


# ------------------------------------------------------------------ the glossary itself

def test_the_readme_links_the_glossary():
    assert "(docs/GLOSSARY.md)" in (ROOT / "README.md").read_text()


def test_every_entry_names_a_pattern_and_a_section_that_exists(entries, course):
    cells = dict(course)
    assert len(entries) >= 40, len(entries)
    for e in entries:
        assert e["match"] and e["notebook"], f"{e['term']}: no match comment or Taught-in line"
        assert e["stem"][:2] == e["notebook"] and e["stem"] in cells, e["term"]
        re.compile(e["match"])
        assert section_cell(cells[e["stem"]], e["section"]) is not None, \
            f"{e['term']}: notebook {e['notebook']} has no heading {e['section']!r}"
        prose = re.sub(r"<!--.*?-->|Taught in [^\n]*", "", e["body"], flags=re.S)
        assert 8 <= len(prose.split()) <= 90, f"{e['term']}: one or two plain sentences"


def test_each_term_is_used_where_it_is_taught(entries, course):
    """The section that teaches a term mentions it (the entry's pattern matches there): a
    glossary that points at the wrong section, or a pattern that finds nothing, fails."""
    cells = dict(course)
    for e in entries:
        nb = cells[e["stem"]]
        start = section_cell(nb, e["section"])
        end = next((i for i in range(start + 1, len(nb)) if nb[i]["cell_type"] == "markdown"
                    and re.match(r"#{1,2} ", "".join(nb[i]["source"]))), len(nb))
        text = "\n".join("".join(c["source"]) for c in nb[start:end])
        assert re.search(e["match"], text, re.I), \
            f"{e['term']}: {e['match']!r} not found in {e['stem']} '{e['section']}'"


def test_the_glossary_covers_the_course_words():
    text = GLOSSARY.read_text()
    terms = " ".join(m.group(1) for m in ENTRY.finditer(text)).lower()
    for word in ("prefill", "decode", "kv cache", "gqa", "mqa", "mla", "mha", "cell", "slot",
                 "block", "micro-batch", "gguf", "swa", "sliding window", "attention sink",
                 "learned sink", "in flight", "position interpolation", "ntk-aware",
                 "dynamic ntk", "yarn", "llama3", "longrope", "scale factor", "l_0", "lambda",
                 "mscale", "beta_{fast}", "nats", "perplexity", "rmsnorm", "swiglu", "rope"):
        assert word in terms, word


# ------------------------------------------------------------------ the notebooks hold to it

def test_no_term_is_used_before_the_notebook_that_teaches_it(entries, course):
    problems = early_uses(entries, course)
    assert not problems, "\n".join(problems)


def _md(text):
    return {"cell_type": "markdown", "source": [text]}


def test_the_check_fails_on_a_term_used_before_it_is_taught():
    """The check reads what it should: "prefill" used in notebook 01 and taught in 09 is
    reported; the same use passes with a pointer to 09 or to the glossary, when it comes after
    the section, or in 09's own opening cell."""
    entry = [{"term": "prefill", "match": r"\bprefill", "notebook": "09",
              "section": "Two costs", "stem": "09_cost"}]

    def course(first):
        return [("01_memory", [_md("# 01 · Memory"), _md(first)]),
                ("09_cost", [_md("# 09 · Cost\n\nWhat a prompt costs."),
                             _md("## Two costs\n\nPrefill runs the whole prompt at once.")])]

    found = early_uses(entry, course("The table during prefill is large."))
    assert len(found) == 1 and "'prefill': first used as 'prefill' in notebook 01 cell 1" \
        in found[0], found
    assert early_uses(entry, course("During prefill (notebook 09: the prompt in one pass)."))== []
    assert early_uses(entry, course("During [prefill](../docs/GLOSSARY.md#prefill).")) == []
    assert early_uses(entry, course("The table is large.")) == []  # first use is in 09's section
    opening = [("01_memory", [_md("# 01 · Memory")]),
               ("09_cost", [_md("# 09 · Cost\n\nPrefill and the cache."), _md("## Two costs")])]
    assert early_uses(entry, opening) == []
    # a pointer must name the right notebook, and a code comment counts as a use
    assert early_uses(entry, course("During prefill (notebook 05).")) != []
    code = [("01_memory", [{"cell_type": "code", "source": ["x = 1  # prefill slice\n"]}]),
            course("")[1]]
    assert early_uses(entry, code) != []


def test_named_notebooks_reads_lists_and_ranges():
    assert named_notebooks("notebooks 06-09 taught it") == {"06", "07", "08", "09"}
    assert named_notebooks("(notebook 07)") == {"07"}
    assert named_notebooks("notebooks 05 and 06, and notebook 10") == {"05", "06", "10"}
    assert named_notebooks("the notebook 3 times") == set()
