"""Rescue steps of a stuck descent, composed like `optax.chain`: re-seed, escalate, pursue, swap, cut."""
