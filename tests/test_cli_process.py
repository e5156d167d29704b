"""A sample of the bad-input corpus (tests/test_bad_inputs.py) in real processes, through the
installed console script's entry point: what a user's terminal receives is exactly one line on
stderr, nothing on stdout, and exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_bad_inputs import CASES

SAMPLE = ["unknown-command", "bound-bad-float", "run-missing-argument", "empty-file",
          "bound-krr-without-domain", "audit-randomizer-level-with-n"]

CLI_MAIN = "from shufflesim.simulator.cli import main; main()"


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SAMPLE], ids=lambda c: c.id)
def test_real_process_prints_one_line_and_exits_2(case, tmp_path):
    scenario = tmp_path / "scenario.toml"
    if case.scenario is not None:
        scenario.write_text(case.scenario)
    args = [a.replace("{scenario}", str(scenario)).replace("{out}", str(tmp_path / "out"))
            .replace("{tmp}", str(tmp_path)) for a in case.args]
    done = subprocess.run([sys.executable, "-c", CLI_MAIN,
                           *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "out").exists()
