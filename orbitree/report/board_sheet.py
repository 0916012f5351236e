"""``orbitree board``: a marker board as a sheet to print at actual size (PDF or PNG).

The page is exactly the board's size plus a strip with a 50 mm check bar and the instructions:
print at 100 % ("actual size", no fit-to-page), then measure the bar and a marker's black square
before sticking the sheet on the target with the cross on the interface's centre.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from orbitree.skills.board_model import BOARDS, board_sheet

MM_PER_INCH = 25.4
STRIP_MM = 22.0  # below the board: the check bar and two lines of text
CHECK_BAR_MM = 50.0


def write_board_sheet(board: str, out: str | Path, dpi: float = 600.0) -> Path:
    """Write board ``board`` (a name of ``BOARDS``) to ``out`` (.pdf or .png) at actual size."""
    model = BOARDS[board]()
    px_per_m = dpi / MM_PER_INCH * 1e3
    image, board2px = board_sheet(model, px_per_m)
    height_px, width_px = image.shape
    width_mm = max(width_px / px_per_m * 1e3, CHECK_BAR_MM + 20.0)
    board_mm = height_px / px_per_m * 1e3
    fig = Figure(figsize=(width_mm / MM_PER_INCH, (board_mm + STRIP_MM) / MM_PER_INCH))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.0, STRIP_MM / (board_mm + STRIP_MM), 1.0, board_mm / (board_mm + STRIP_MM)))
    ax.set_axis_off()
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest",
              extent=(0, width_px / px_per_m * 1e3, 0, board_mm))
    ax.set_xlim(0, width_mm)
    ax.set_ylim(0, board_mm)
    origin = board2px @ np.array([0.0, 0.0, 1.0])
    ox, oy = origin[0] / px_per_m * 1e3, board_mm - origin[1] / px_per_m * 1e3
    ax.plot([ox - 3, ox + 3], [oy, oy], color="0.5", lw=0.3)
    ax.plot([ox, ox], [oy - 3, oy + 3], color="0.5", lw=0.3)
    strip = fig.add_axes((0.0, 0.0, 1.0, STRIP_MM / (board_mm + STRIP_MM)))
    strip.set_axis_off()
    strip.set_xlim(0, width_mm)
    strip.set_ylim(0, STRIP_MM)
    strip.fill_between([10, 10 + CHECK_BAR_MM], 16, 18, color="black", lw=0)
    side = model.marker_side_m * 1e3
    strip.text(10, 10, f"{board} board: markers {side:g} mm (black square), ids {list(model.marker_ids)}",
               fontsize=6)
    strip.text(10, 4, f"print at 100 % (actual size); the bar is {CHECK_BAR_MM:g} mm; the cross marks the "
               "board origin", fontsize=6)
    path = Path(out)
    fig.savefig(path, dpi=dpi)
    return path
