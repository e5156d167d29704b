"""One call, three faces (design section 8): every capability is one function here that the
command line (simulator.cli.commands), the public Python API (``shufflesim``, simulator/api/)
and, where a scenario section offers it, the section (``*_section.py`` here: ``[calibrate]``,
``[compose]``, ``[rdp]``; ``[bounds]`` and ``[audit]`` live beside their tables) call with the
same validation and the same numbers. The command line adds only parsing and printing; the API
adds only DataFrames.

Each function returns plain records (lists of dicts, the rows of ``--json``) or result tables,
raises :class:`~shufflesim.protocols.errors.ParameterError` (a ``ValueError`` naming the
field) or :class:`~shufflesim.simulator.errors.UserError` (also a ``ValueError``) for bad input,
and takes an optional ``progress`` report (simulator.execution.progress).
"""

#: The public API: the package's modules (import the one you need).
__all__ = ["audit", "bounds", "calibrate", "calibrate_section", "catalogue", "compose",
           "compose_section", "plot", "rdp", "rdp_section", "rounds", "run", "setting", "toml_text"]
