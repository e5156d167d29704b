"""Amplification bounds for the shuffle model: the hockey-stick engine, decompositions,
published closed forms and numerical bounds, lower bounds and calibration."""
