"""Analyzers' estimators (frequency, mean, sum), each with its exact variance."""
