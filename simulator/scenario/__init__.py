"""Scenarios: model (the dataclasses), convert (TOML tables to dataclasses), sections (the
section registry), producers (the table producers' registry), sweep, core (the core sections),
loader (files to scenarios), bounds (the [bounds] section)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["bounds", "convert", "core", "loader", "model", "producers", "schema", "sections",
           "sweep"]
