"""The attack: one objective descended on candidates, its optimiser, restarts, splitting, rescue steps."""
