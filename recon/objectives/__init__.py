"""Reconstruction objectives: pure functions of candidates and a target."""
