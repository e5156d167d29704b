"""``shufflesim list`` remembers its printed catalogue for the installed code
(simulator/cli/catalogue_cache.py): the cached output is the built one, a warm ``list``
imports no plug-in, and the fingerprint follows the code."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner

from shufflesim.simulator.calls.catalogue import catalogue
from shufflesim.simulator.cli import catalogue_cache, main
from shufflesim.simulator.cli.commands.list import render


def test_the_cached_output_is_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SHUFFLESIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(catalogue_cache, "third_party", lambda: False)
    first = CliRunner().invoke(main, ["list"])
    assert first.exit_code == 0, first.output
    assert first.output == render(catalogue()) + "\n"
    assert len(list(tmp_path.glob("list-*.json"))) == 1
    again = CliRunner().invoke(main, ["list"])
    assert again.output == first.output
    as_json = CliRunner().invoke(main, ["list", "--json"])
    assert '"randomizers"' in as_json.output


def test_a_warm_list_imports_no_plug_in(tmp_path):
    env = dict(os.environ, SHUFFLESIM_CACHE_DIR=str(tmp_path))
    code = ("import sys; from shufflesim.simulator.cli import main; sys.argv[0] = 'shufflesim'\n"
            "try:\n    main(['list'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('scipy', 'pandas', 'shufflesim.protocols.bounds.spec',"
            " 'shufflesim.protocols.randomizers.krr') if m in sys.modules), file=sys.stderr)")
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)
    assert "shufflesim.protocols.randomizers.krr" in cold.stderr
    assert warm.stderr.strip() == "[]", warm.stderr
    assert warm.stdout == cold.stdout


def test_the_fingerprint_follows_the_code(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(catalogue_cache, "_package_folders", lambda: [tmp_path])
    before = catalogue_cache.fingerprint()
    assert catalogue_cache.fingerprint() == before
    (tmp_path / "m.py").write_text("x = 22\n")
    assert catalogue_cache.fingerprint() != before


def test_third_party_plug_ins_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SHUFFLESIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(catalogue_cache, "third_party", lambda: True)
    catalogue_cache.store({"text": "t", "json": "{}"})
    assert not list(tmp_path.iterdir())
    assert catalogue_cache.load() is None
