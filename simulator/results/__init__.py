"""Result tables: their Parquet schemas (a registry), metadata and atomic writing."""
