"""Shared scenario builders and fixtures.

Tests build scenario files from one base instead of pasting TOML: :func:`scenario_text` writes
the base scenario (n users with Zipf data, a constant budget, k-RR, the frequency estimator)
with any of its values overridden and extra sections appended, e.g.::

    scenario_text(name="units", seed=11, repetitions=10, n=120,
                  sections=BATCH_CHUNKS.format(4) + SWEEP_EPS)

A module imports the helpers with ``from conftest import scenario_text`` (pytest puts tests/ on
the path); the fixtures below give the common texts to a test that asks for them.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import sys
import tempfile
import textwrap

import pytest

# ``shufflesim list`` caches its printed catalogue (simulator/cli/catalogue_cache.py): tests and
# the processes they start keep theirs out of the user's cache folder.
if "SHUFFLESIM_CACHE_DIR" not in os.environ:
    os.environ["SHUFFLESIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="shufflesim-tests-")
    atexit.register(shutil.rmtree, os.environ["SHUFFLESIM_CACHE_DIR"], True)


def zipf(domain_size: int = 4, exponent: float = 0.7) -> str:
    """``population.data``: Zipf data over ``domain_size`` values."""
    return f'{{ distribution = "zipf", domain_size = {domain_size}, exponent = {exponent} }}'


def uniform(domain_size: int = 4) -> str:
    """``population.data``: uniform data over ``domain_size`` values."""
    return f'{{ distribution = "uniform", domain_size = {domain_size} }}'


def constant_budget(epsilon0: float = 1.0) -> str:
    """``population.budget``: every user has ``epsilon0``."""
    return f'{{ distribution = "constant", epsilon0 = {epsilon0} }}'


#: The sweep most tests use: two local budgets.
SWEEP_EPS = '[sweep]\n"population.budget.epsilon0" = [0.5, 2.0]\n'


def scenario_text(*, name: str = "s", seed: int | None = 3, repetitions: int | None = 5,
                  n: int = 100, data: str | None = None, budget: str | None = None,
                  randomizer: str = "krr", randomizer_keys: str = "",
                  estimator: str = "frequency", sections: str = "") -> str:
    """The base scenario's TOML with the given values (``seed`` or ``repetitions`` None: the
    key is left out); ``randomizer_keys``: lines added to ``[randomizer]``; ``sections``: TOML
    appended at the end (dedented)."""
    lines = [f'name = "{name}"']
    if seed is not None:
        lines.append(f"seed = {seed}")
    if repetitions is not None:
        lines.append(f"repetitions = {repetitions}")
    lines += ["[population]", f"n = {n}", f"data = {data or zipf()}",
              f"budget = {budget or constant_budget()}",
              "[randomizer]", f'name = "{randomizer}"']
    if randomizer_keys:
        lines.append(textwrap.dedent(randomizer_keys).strip())
    lines += ["[estimator]", f'name = "{estimator}"']
    text = "\n" + "\n".join(lines) + "\n"
    if sections:
        text += textwrap.dedent(sections).lstrip("\n")
    return text


@pytest.fixture(autouse=True)
def _mpmath_digits(request):
    """mpmath's precision is process-wide: a test module's ``MP_DIGITS`` is the precision of each
    of its tests (not only of the module imported last), and whatever a test sets is undone
    after it, so no oracle's precision depends on the order tests run in."""
    mpmath = sys.modules.get("mpmath")
    digits = getattr(request.module, "MP_DIGITS", None)
    if mpmath is None and digits is None:
        yield
        return
    mpmath = mpmath or importlib.import_module("mpmath")
    saved = mpmath.mp.prec
    if digits is not None:
        mpmath.mp.dps = digits
    try:
        yield
    finally:
        mpmath.mp.prec = saved


@pytest.fixture
def base_scenario() -> str:
    """The base scenario's text, unchanged."""
    return scenario_text()


@pytest.fixture
def swept_scenario() -> str:
    """The base scenario over two local budgets, in chunks of two repetitions."""
    return scenario_text(sections="[batch]\nchunk_repetitions = 2\n" + SWEEP_EPS)


@pytest.fixture
def scenario_file(tmp_path):
    """Write a scenario text to ``tmp_path / <name>.toml`` and return the path."""

    def write(text: str, name: str = "scenario") -> object:
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        return path

    return write
