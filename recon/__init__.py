"""recon: reconstructing a model's training set from its parameters (JAX)."""

__version__ = '0.1.0'
