"""Populations: the users' data and budget distributions (base: interfaces and registries;
data, budgets, files: the built-in members)."""
