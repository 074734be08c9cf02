"""What differential privacy promises against reconstruction (ReRo bounds).

Hayes, Mahloujifar and Balle (2023), "Bounding training data reconstruction in DP-SGD"
(NeurIPS; arXiv:2302.07225): a mechanism with trade-off function f (f-DP) is
(eta, gamma)-ReRo (reconstruction robust) with gamma = 1 - f(kappa), where kappa is the
prior's own success probability: the chance that an attacker who has only the prior puts a
guess within eta of the target. So no attack, even an informed one that knows every other
training row, reconstructs a row with probability above 1 - f(kappa). Two trade-offs:
  (eps, delta)-DP:  f(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a)), so
                    gamma = min(1, kappa e^eps + delta, 1 - e^-eps (1 - delta - kappa));
  mu-GDP:           f(a) = Phi(Phi^-1(1 - a) - mu), so gamma = Phi(Phi^-1(kappa) + mu);
                    full-batch DP-GD (q = 1) with T steps of noise multiplier sigma is
                    exactly mu-GDP with mu = sqrt(T) / sigma (Dong, Roth and Su 2022).

The public surface's (docs/api.md) bounds for a report on defended victims
(scripts/defences.py): `cap_probability` is kappa for "within `relative` of the row" on the
sphere, `rero_bound_dp` / `rero_bound_gdp` are gamma under (eps, delta)-DP and mu-GDP.
"""
from __future__ import annotations

import math

from scipy import special, stats


def cap_probability(d: int, relative: float) -> float:
  """P(||u - x|| <= relative ||x||) for u uniform on the sphere of x's radius in R^d: the
  cap of angle 2 arcsin(relative / 2) (half the regularised incomplete beta function)."""
  angle = 2.0 * math.asin(min(1.0, relative / 2.0))
  if angle >= math.pi / 2:
    return 1.0 - cap_probability(d, 2.0 * math.sin((math.pi - angle) / 2.0))
  return 0.5 * float(special.betainc((d - 1) / 2.0, 0.5, math.sin(angle) ** 2))


def rero_bound_dp(eps: float, delta: float, kappa: float) -> float:
  """Hayes et al. (2023): the most a reconstruction can succeed under (eps, delta)-DP."""
  if not math.isfinite(eps):
    return 1.0
  # kappa e^eps without overflow (eps of 1e7 are measured points too).
  grow = 0.0 if kappa <= 0 else math.exp(min(700.0, eps + math.log(kappa)))
  return float(min(1.0, grow + delta, 1.0 - math.exp(-eps) * (1.0 - delta - kappa)))


def rero_bound_gdp(mu: float, kappa: float) -> float:
  """Hayes et al. (2023): the most a reconstruction can succeed under mu-GDP."""
  return float(stats.norm.cdf(stats.norm.ppf(kappa) + mu))
