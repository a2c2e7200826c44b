"""Local AWS Glue: the Glue JSON API (`python -m glue_local`) and its warm job runner."""
