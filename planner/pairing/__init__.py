"""planner.pairing.pair."""
