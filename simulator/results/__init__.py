"""Result tables: their Parquet schemas (a registry), metadata and atomic writing."""

#: The public API: the package's modules (import the one you need).
__all__ = ["tables"]
