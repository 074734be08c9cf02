"""Models whose training sets are reconstructed."""
