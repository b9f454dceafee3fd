"""CLI commands, one module per face; each registers on `planner.cli.app`."""
