"""Bounds for users with personalized budgets (heterogeneous users): see bounds.py."""

#: The public API: the package's modules (import the one you need).
__all__ = ["blanket", "bounds", "exact", "profile"]
