"""Temporary state directories for test resources (the plugin's own, one definition)."""

from cdclab.private_stack import temp_state_dir

__all__ = ["temp_state_dir"]
