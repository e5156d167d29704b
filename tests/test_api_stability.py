"""The public API's contract (issue 28): the names of ``shufflesim.__all__`` and their
signatures are recorded in docs/api_signatures.txt; a name that disappears or changes its
signature fails here until that file is updated on purpose:

    python tests/test_api_stability.py --write
"""

from __future__ import annotations

import inspect
import pathlib
import sys

import shufflesim

RECORD = pathlib.Path(__file__).resolve().parents[1] / "docs" / "api_signatures.txt"
HEADER = ("# The public API of shufflesim (shufflesim.__all__): one name and signature a line.\n"
          "# tests/test_api_stability.py checks it; update deliberately with\n"
          "#   python tests/test_api_stability.py --write\n")


def current() -> list[str]:
    lines = []
    for name in sorted(shufflesim.__all__):
        value = getattr(shufflesim, name)
        if callable(value):
            lines.append(f"{name}{inspect.signature(value)}")
        else:
            lines.append(f"{name}: {type(value).__name__}")
    return lines


def recorded() -> list[str]:
    return [line for line in RECORD.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_the_public_api_matches_its_record():
    now, before = current(), recorded()
    gone = sorted(set(before) - set(now))
    new = sorted(set(now) - set(before))
    assert not gone and not new, (
        f"the public API changed: recorded but not found now: {gone}; found but not recorded: "
        f"{new}. If this is deliberate, run: python tests/test_api_stability.py --write")


def test_the_check_sees_a_changed_signature(monkeypatch):
    def bounds(randomizer, *, n):  # a narrower signature than the recorded one
        return None

    monkeypatch.setattr(shufflesim, "bounds", bounds)
    assert "bounds(randomizer, *, n)" in current()
    assert set(current()) != set(recorded())


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(HEADER + "\n".join(current()) + "\n")
    print(f"wrote {RECORD}")
