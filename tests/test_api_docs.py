"""Documentation that runs (issue 28): every example in the public API's docstrings, every
``>>>`` example and ``python`` block of docs/api.md (in order, as a notebook runs them), and the
README's Python example run in the default test run, so none of them can drift."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

import shufflesim

REPO = pathlib.Path(__file__).resolve().parents[1]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: The modules that hold the public names' docstrings, and the package itself.
MODULES = sorted({"shufflesim", *shufflesim._LAZY.values()})


def _run_doctests(tests: list[doctest.DocTest]) -> tuple[int, int]:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, clear_globs=False)
    result = runner.summarize(verbose=False)
    return result.failed, result.attempted


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    failed, attempted = _run_doctests(tests)
    assert failed == 0
    assert attempted > 0 or name in ("shufflesim._frames",), f"{name} has no example"


def test_every_public_function_has_an_example():
    missing = [name for name in shufflesim.__all__ if name != "__version__"
               and ">>>" not in (getattr(shufflesim, name).__doc__ or "")]
    assert not missing, f"public names without a docstring example: {missing}"


def python_blocks(text: str) -> list[str]:
    """The fenced ``python`` code blocks of a Markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def test_python_blocks_are_found():
    text = "a\n```python\nx = 1\n```\n```text\ny\n```\n```python\nz = 2\n```\n"
    assert python_blocks(text) == ["x = 1\n", "z = 2\n"]


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    blocks = python_blocks((REPO / "README.md").read_text())
    assert blocks, "README.md has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102


def test_docs_api_md_runs_in_notebook_order(tmp_path, monkeypatch):
    """docs/api.md's ``>>>`` examples (outputs checked) run in one namespace, in order, from a
    scratch directory; ``python`` blocks (no outputs) run in the same namespace."""
    path = REPO / "docs" / "api.md"
    text = path.read_text()
    monkeypatch.chdir(tmp_path)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {"__name__": "api_md"}, "docs/api.md", str(path), 0)
    assert test.examples, "docs/api.md has no examples"
    failed, _ = _run_doctests([test])
    assert failed == 0
    for block in python_blocks(text):
        exec(compile(block, "docs/api.md", "exec"), test.globs)  # noqa: S102
