"""color_by="grad_norm": the norm of each drawn tensor's gradient, its fill on a log colour
scale, and the colour bar that gives the scale."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import backend

if TYPE_CHECKING:
    from .collect import Drawing

# color_by="grad_norm": ColorBrewer's YlGnBu up to its mid blue (black text stays readable), pale
# for the smallest gradient norm drawn and dark for the largest, on a log scale
_NORM_SCALE = ("#FFFFD9", "#EDF8B1", "#C7E9B4", "#7FCDBB", "#41B6C4", "#1D91C0")
_ZERO_FILL = "#FFFFFF"  # a gradient of zeros, off the log scale


def _norm(array) -> float:
    """The 2-norm of an array's elements, in float64 and scaled by the largest magnitude (no
    overflow in the squares): nan where one is nan, inf where one is inf, 0 for an empty one.
    Computed where the array lives; two numbers are copied to the host."""
    if array.size == 0:
        return 0.0
    xp = backend.array_module(array)
    magnitudes = xp.abs(array.astype(np.float64, copy=False))
    peak = magnitudes.max()
    divisor = xp.where((peak > 0) & xp.isfinite(peak), peak, 1.0)
    scaled = xp.sqrt(xp.square(magnitudes / divisor).sum())
    peak, scaled = backend.to_device(xp.stack([peak, scaled]), backend.CPU).tolist()
    if not 0.0 < peak < math.inf:  # 0, inf or nan: the norm too
        return peak
    return peak * scaled


def _scale_colour(position: float) -> str:
    """The colour at `position` (0 to 1) of _NORM_SCALE, linear between its stops."""
    where = min(max(position, 0.0), 1.0) * (len(_NORM_SCALE) - 1)
    stop = min(int(where), len(_NORM_SCALE) - 2)
    low, high = (
        [int(colour[i : i + 2], 16) for i in (1, 3, 5)] for colour in _NORM_SCALE[stop : stop + 2]
    )
    part = where - stop
    return "#" + "".join(f"{round(a + (b - a) * part):02X}" for a, b in zip(low, high, strict=True))


@dataclass
class _NormColours:
    """color_by="grad_norm": the norm of every drawn tensor's gradient, and its fill: on a log
    scale from the smallest nonzero norm (`low`, palest) to the largest (`high`, darkest)."""

    norms: dict  # Node or id(leaf) -> the norm of its gradient
    low: float
    high: float

    def fill(self, key) -> str | None:
        """The fill of a tensor's box: None where its gradient is unknown or not finite."""
        norm = self.norms.get(key)
        if norm is None or not math.isfinite(norm):
            return None
        if norm == 0:
            return _ZERO_FILL
        span = math.log10(self.high) - math.log10(self.low)
        return _scale_colour((math.log10(norm) - math.log10(self.low)) / span if span else 1.0)


def norm_colours(drawing: Drawing) -> _NormColours | None:
    """The gradient norms of the drawn ops and leaves, their scale, and a caption line saying
    how to read it; None where no gradient is known (the caption says why)."""
    if drawing.grads is None:
        return None
    keys = [*drawing.nodes, *(id(leaf) for leaf in drawing.leaves)]
    norms = {key: _norm(drawing.grads[key]) for key in keys if key in drawing.grads}
    scaled = [norm for norm in norms.values() if 0 < norm < math.inf]
    if not scaled:
        drawing.notes.append("fill: no nonzero finite gradient to colour")
        return None
    colours = _NormColours(norms, min(scaled), max(scaled))
    note = (
        f"fill: the norm of each gradient, log scale, from {colours.low:.2g} (pale yellow) to "
        f"{colours.high:.2g} (blue)"
    )
    if any(norm == 0 for norm in norms.values()):
        note += "; white: a gradient of zeros"
    if any(not math.isfinite(norm) for norm in norms.values()):
        note += "; red border: nan or inf"
    drawing.notes.append(note)
    return colours


def legend_label(colours: _NormColours, steps: int = 5) -> str:
    """A colour bar: `steps` cells of the scale, each labelled with the norm it stands for."""
    low, high = math.log10(colours.low), math.log10(colours.high)
    steps = steps if high > low else 1
    cells = []
    for step in range(steps):
        position = step / (steps - 1) if steps > 1 else 1.0
        norm = 10 ** (low + (high - low) * position)
        cells.append(
            f'<TD BGCOLOR="{_scale_colour(position)}"><FONT POINT-SIZE="9">{norm:.1e}</FONT></TD>'
        )
    title = f'<TR><TD COLSPAN="{steps}"><FONT POINT-SIZE="9">gradient norm</FONT></TD></TR>'
    table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">'
    return f"<{table}{title}<TR>{''.join(cells)}</TR></TABLE>>"
