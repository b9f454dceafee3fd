"""The package version, in one place (pyproject.toml reads it; `planner --version` prints it)."""

__version__ = "0.1.0"
