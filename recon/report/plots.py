"""Pictures of a run: the image grid (truth over reconstruction) and the loss curve.

Figures are drawn on matplotlib's Agg canvas (no pyplot, no global backend
state) and written atomically as PNG.
"""
from __future__ import annotations

import io as _io
import math
from typing import Optional, Sequence, Tuple

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from recon.runtime import io

DPI = 100


def _save(fig: Figure, path: str) -> None:
  FigureCanvasAgg(fig)
  buf = _io.BytesIO()
  fig.savefig(buf, format='png', dpi=DPI)
  io.write_bytes(path, buf.getvalue())


def _show(ax, row: np.ndarray, image_shape, value_range: Tuple[float, float]) -> None:
  h, w, c = image_shape
  lo, hi = value_range
  img = np.clip((np.asarray(row, np.float64).reshape(h, w, c) - lo) / (hi - lo), 0.0, 1.0)
  if c == 1:
    ax.imshow(img[..., 0], cmap='gray', vmin=0.0, vmax=1.0, interpolation='nearest')
  else:
    ax.imshow(img, interpolation='nearest')
  ax.set_xticks([])
  ax.set_yticks([])


def grid_order(scores: np.ndarray, max_images: int) -> np.ndarray:
  """Indices best score first; above `max_images`, evenly spaced ranks (best and worst kept)."""
  order = np.argsort(-np.asarray(scores), kind='stable')
  if len(order) > max_images:
    order = order[np.unique(np.round(np.linspace(0, len(order) - 1, max_images)).astype(int))]
  return order


def image_grid(path: str, x_true: np.ndarray, x_recon: np.ndarray, image_shape: Sequence[int],
               scores: np.ndarray, *, value_range: Tuple[float, float] = (0.0, 1.0),
               score_name: str = 'SSIM', cols: int = 10, max_images: int = 40,
               title: Optional[str] = None) -> np.ndarray:
  """Writes the grid: training images (top) over their reconstructions (bottom).

  Pairs are sorted best `scores` first and wrapped into bands of `cols` pairs;
  each reconstruction's title is its score. Pixels are shown on the fixed
  `value_range` (clipped), i.e. at true scale. Returns the shown indices.
  """
  order = grid_order(scores, max_images)
  cols = min(cols, len(order))
  bands = math.ceil(len(order) / cols)
  fig = Figure(figsize=(1.1 * cols, 2.3 * bands + 0.5))
  axes = fig.subplots(2 * bands, cols, squeeze=False)
  for ax in axes.ravel():
    ax.axis('off')
  for k, i in enumerate(order):
    band, col = divmod(k, cols)
    top, bottom = axes[2 * band, col], axes[2 * band + 1, col]
    for ax, row in ((top, x_true[i]), (bottom, x_recon[i])):
      ax.axis('on')
      _show(ax, row, image_shape, value_range)
    top.set_title(f'#{i}', fontsize=8)
    bottom.set_title(f'{scores[i]:.2f}', fontsize=8)
  shown = '' if len(order) == len(scores) else f' ({len(order)} of {len(scores)} by rank)'
  fig.suptitle(title or f'top: training images, bottom: reconstructions ({score_name}), '
               f'best first{shown}', fontsize=9)
  fig.tight_layout()
  _save(fig, path)
  return order


def loss_curve(path: str, steps: Sequence[int], losses: Sequence[float],
               title: Optional[str] = None, rung_loss: Optional[float] = None) -> None:
  """Writes loss vs step on a log y axis (non-positive or non-finite values are left out);
  `rung_loss`: the precision rung's float64 loss, drawn as a star after the last step."""
  steps = np.asarray(steps, np.float64)
  losses = np.asarray(losses, np.float64)
  keep = np.isfinite(losses) & (losses > 0)
  fig = Figure(figsize=(5, 3.5))
  ax = fig.subplots()
  if keep.any():
    ax.semilogy(steps[keep], losses[keep], marker='.', markersize=3)
  else:
    ax.text(0.5, 0.5, 'no positive finite loss values', ha='center', va='center',
            transform=ax.transAxes)
  if rung_loss is not None and np.isfinite(rung_loss) and rung_loss > 0 and len(steps):
    ax.semilogy([steps[-1]], [rung_loss], marker='*', markersize=10, linestyle='none',
                color='C3', label=f'float64 rung: {rung_loss:.1e}')
    ax.legend(fontsize=8)
  ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
  ax.set_xlabel('step')
  ax.set_ylabel('loss')
  ax.grid(True, which='both', alpha=0.3)
  ax.set_title(title or 'reconstruction loss', fontsize=10)
  fig.tight_layout()
  _save(fig, path)
