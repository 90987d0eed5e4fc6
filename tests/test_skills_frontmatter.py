"""A ``SKILL.md`` frontmatter is read without PyYAML when it is of the simplest form
(:func:`mcp_providers.skills._simple_frontmatter`), and then reads exactly as PyYAML reads it;
anything else goes to PyYAML. The built-in workflow skills are written in that form, so a
``serve`` of them never imports PyYAML (``test_startup_laziness``)."""

from __future__ import annotations

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_providers.plugins.documcp import workflow_skills, workflows
from mcp_providers.skills import _simple_frontmatter, frontmatter_of

# Characters YAML treats specially somewhere: indicators, quotes, comment and mapping marks,
# YAML 1.1 line breaks (NEL, LS, PS), a tab, a BOM, non-printables; mostly plain letters and
# spaces, so that many documents are of the simple form and the two readers are compared.
_TRICKY = "yYnN0-1_:#'\" \t,.[]{}&*!|>%@`?~=<\\/é😀\x85\u2028\u2029\ufeff\x7f\x00\r"
_char = st.sampled_from([*"abcxyz   ::'#-" * 8, *_TRICKY])
_text = st.text(alphabet=_char, max_size=10)
_word = st.sampled_from(["name", "description", "metadata", "x-y_z", "yes", "No", "ON", "null", "Null", "a"])
_line = st.builds(
    lambda indent, key, sep, value, end: f"{indent}{key}{sep}{value}{end}",
    st.sampled_from(["", "", "", "  ", "  ", "   ", "\t", " "]),
    _word | st.builds(lambda k: f"k{k}", _text),
    st.sampled_from([": ", ": ", ": ", ":", ":  ", ":\t", " :"]),
    st.builds(lambda v: f"v{v}", _text) | st.builds(lambda v: f"'{v}'", _text) | _word | _text,
    st.sampled_from(["\n", "\n", "\n", "\n", "\r\n", " \n", "\x85"]),
)
_bare = st.builds(lambda key: f"{key}:\n", _word)
_likely = st.builds(  # lines of the simple form but for what their texts hold
    lambda indent, key, value: f"{indent}{key}: {value}\n",
    st.sampled_from(["", "  "]),
    st.sampled_from(["name", "description", "license", "x-y_z", "a", "yes"]),
    st.builds(lambda v: f"v{v}", _text) | st.builds(lambda v: f"'{v}'", _text),
)


def _agrees(text: str) -> None:
    read = _simple_frontmatter(text.splitlines(keepends=True))
    if read is None:
        return
    assert read == yaml.safe_load(text), text


@settings(max_examples=400, deadline=None)  # 40,000 by hand once, 500,000 by a tester: no difference
@given(st.lists(_likely | _bare, min_size=1, max_size=5) | st.lists(_likely | _bare | _line, min_size=1, max_size=5))
@example(["name: a\n", "description: 'it''s: x'\n", "metadata:\n", "  k: v\n"])
@example(["a: b:c\n", "a: 'dup'\n"])
@example(["m:\n", "  a: b\n", "n: c\n"])
def test_what_the_simple_reader_reads_is_what_pyyaml_reads(lines: list[str]) -> None:
    _agrees("".join(lines))


def test_the_simple_reader_leaves_what_yaml_reads_otherwise_to_pyyaml() -> None:
    for text in [
        "name: yes\n",  # a YAML 1.1 boolean
        "name: Null\n",  # null
        "a:\n",  # null
        "a:\nb: c\n",  # a: null
        "a: b # c\n",  # a comment
        "a: b: c\n",  # a mapping value where none may be
        "a: 'x'\n  b: c\n",  # an indented line under a value
        "a:\n  b:\n    c: d\n",  # two levels deep
        "a: 1\n",  # an int
        "a: b\r\n",  # another line break
        "a:  b\n",  # two spaces
        "a: b \n",  # a trailing space
        "a: 'x\ty'\n",  # a tab
        "a: x\u2028y\n",  # a YAML 1.1 line break inside
        "k" * 1025 + ": v\n",  # a key longer than PyYAML takes (tester sixteen)
        "metadata:\n  " + "k" * 1100 + ": v\n",
        "",
    ]:
        assert _simple_frontmatter(text.splitlines(keepends=True)) is None, text


def test_the_workflow_skills_are_read_without_pyyaml_as_pyyaml_reads_them() -> None:
    provider = workflows.register_skill_providers()[0]
    skills = provider.skills()
    assert len(skills) == 5
    for skill in skills:
        text = provider.read(skill, "SKILL.md").decode()
        head = text.split("---\n")[1]
        assert _simple_frontmatter(head.splitlines(keepends=True)) == yaml.safe_load(head)
        assert frontmatter_of(text.encode())["name"] == skill.root.rsplit("/", 1)[1]


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
@example("it's: # a b", "")
@example("", "yes")
def test_the_workflow_frontmatter_written_reads_back_as_given(description: str, complexity: str) -> None:
    fields = {"name": "w", "description": description, "metadata": {"complexity": complexity, "resource": "x://y"}}
    written = workflow_skills._frontmatter_text(fields)
    printable = all(workflow_skills._TEXT.fullmatch(t) for t in (description, complexity))
    read = _simple_frontmatter(written.splitlines(keepends=True))
    assert (read is not None) is printable  # PyYAML writes the rest, as it wrote all before
    if read is not None:
        assert read == yaml.safe_load(written) == fields
