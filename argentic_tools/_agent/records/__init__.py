"""What happened: one observation per call attempt, and the persistent call history."""
