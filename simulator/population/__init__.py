"""Populations: the users' data and budget distributions (base: interfaces and registries;
data, budgets, files: the built-in members)."""

#: The public API: the package's modules (import the one you need).
__all__ = ["base", "budgets", "checks", "data", "files"]
