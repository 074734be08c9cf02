"""Vectorised sweeps: a grid of runs as one compiled program per group, resumable."""
