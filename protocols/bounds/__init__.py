"""Amplification bounds for the shuffle model: the hockey-stick engine, decompositions,
published closed forms and numerical bounds, lower bounds and calibration."""

#: The public API: the package's modules (import the one you need).
__all__ = [
    "atoms",
    "calibration",
    "catalogue",
    "closed_form",
    "engine",
    "numerical",
    "personalized",
    "result",
    "spec",
]
