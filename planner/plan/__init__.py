"""planner.plan.recommend."""
