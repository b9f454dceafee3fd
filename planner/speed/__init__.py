"""planner.speed.model."""
