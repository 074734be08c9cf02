"""Shared test set-up: tests run on the CPU with tiny sizes."""
import os
import sys

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)
