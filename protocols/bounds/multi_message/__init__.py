"""Bounds for multi-message shuffle protocols (issue 15): kernels (exact divergences of count
statistics), models (randomizer -> count model, the sufficiency and bounding arguments), bounds
(001's variation-ratio bound with Table 3, the exact proven upper and lower bounds; registered).
"""

__all__ = ["bounds", "kernels", "models"]
