"""Scenarios: model (the dataclasses), convert (TOML tables to dataclasses), sections (the
section registry), sweep, core (the core sections), loader (files to scenarios), bounds (the
[bounds] section)."""
