"""``python -m shufflesim.simulator.cli.snapshot``: build the catalogue of ``shufflesim list``
in this fresh process and write the snapshot shipped with the package
(simulator/cli/catalogue_cache.py; a release step, and after any change to the plug-ins)."""

from __future__ import annotations

from shufflesim.simulator.cli.catalogue_cache import write_snapshot
from shufflesim.simulator.cli.commands.list import printed_forms


def main() -> None:
    print(f"wrote {write_snapshot(printed_forms())}")


if __name__ == "__main__":
    main()
