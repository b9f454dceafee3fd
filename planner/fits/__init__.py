"""planner.fits."""
