"""shufflesim's mathematics: local randomizers, estimators and amplification bounds.

Pure numerics: imports only the standard library, numpy, scipy and dp_accounting (privacy-loss
distributions).
"""
