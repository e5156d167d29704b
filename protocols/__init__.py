"""shufflesim's mathematics: local randomizers, estimators and amplification bounds.

Pure numerics: imports only the standard library, numpy, scipy and dp_accounting (privacy-loss
distributions).
"""

#: The public API: the package's modules (import the one you need).
__all__ = ["accounting", "bounds", "errors", "estimators", "learning", "plugins", "randomizers",
           "registry"]
