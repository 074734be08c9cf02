"""recon/audit/rero.py: the ReRo bounds of Hayes et al. (2023) and the prior's cap probability."""
import numpy as np
import pytest

from recon.audit import rero
from recon.models import privacy


def test_cap_probability():
  assert rero.cap_probability(2, 0.1) == pytest.approx(2 * 2 * np.arcsin(0.05) / (2 * np.pi))
  assert rero.cap_probability(3, 2.0) == pytest.approx(1.0)
  # d = 3: the cap of angle a has area fraction (1 - cos a) / 2.
  a = 2 * np.arcsin(0.2)
  assert rero.cap_probability(3, 0.4) == pytest.approx((1 - np.cos(a)) / 2, rel=1e-9)


def test_reconstruction_bounds_of_hayes_et_al():
  kappa, delta = 1e-6, 1e-5
  assert rero.rero_bound_dp(1.0, delta, kappa) == pytest.approx(kappa * np.e + delta)
  bounds = [rero.rero_bound_dp(e, delta, kappa) for e in (1, 4, 8, 16, 64)]
  assert bounds == sorted(bounds) and bounds[-1] == 1.0
  assert rero.rero_bound_dp(float('inf'), delta, kappa) == 1.0
  assert rero.rero_bound_dp(1e7, delta, kappa) == 1.0  # no overflow
  assert rero.rero_bound_gdp(0.0, kappa) == pytest.approx(kappa)
  # Full-batch DP-GD is mu-GDP with mu = sqrt(T) / sigma; the mechanism is also (eps, delta)-DP
  # at the accountant's eps, so its GDP bound cannot exceed the (eps, delta) one.
  for sigma in (5.0, 20.0, 60.0):
    eps = privacy.epsilon(sigma, 1.0, 1000, delta)
    gdp = rero.rero_bound_gdp(np.sqrt(1000) / sigma, kappa)
    assert gdp <= rero.rero_bound_dp(eps, delta, kappa) + 1e-12
