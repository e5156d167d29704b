"""Bounds for users with personalized budgets (heterogeneous users): see bounds.py."""
