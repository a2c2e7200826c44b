"""The pipeline's contract: settings and their validation (pipeline.toml), DMS's output
format, table specs, Glue job definitions, names and atomic writes. The ground every box
of the diagram stands on; it imports nothing else of the project (tests/unit/test_layers.py)."""
