"""planner.core."""
