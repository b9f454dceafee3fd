"""planner.render."""
