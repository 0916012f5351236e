"""The printable board sheet puts every marker corner where the board model says, at the scale
asked for, so a sheet printed at 100 % is the board the estimator expects."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from orbitree.cli import main
from orbitree.skills.board_model import board_sheet, sirom_board_model


def _detect(image: np.ndarray, model) -> dict[int, np.ndarray]:
    detector = cv2.aruco.ArucoDetector(model.dictionary)
    corners, ids, _ = detector.detectMarkers(image)
    return {int(i): c.reshape(4, 2) for c, i in zip(corners, ids.ravel(), strict=True)}


def test_sheet_corners_land_where_the_model_puts_them_at_600_dpi():
    model = sirom_board_model()
    px_per_m = 600 / 0.0254
    image, board2px = board_sheet(model, px_per_m)
    found = _detect(image, model)
    assert sorted(found) == [0, 1, 2]
    for marker_id, corners in found.items():
        expected = (board2px @ np.c_[model.marker_corners(marker_id)[:, :2], np.ones(4)].T).T[:, :2]
        # within 2 px = 0.085 mm at 600 dpi (the detector's corners sit on pixel edges)
        assert np.abs(corners - expected).max() < 2.0, marker_id


def test_printed_png_has_the_markers_at_actual_size(tmp_path, capsys):
    out = tmp_path / "sirom.png"
    assert main(["board", "sirom", "-o", str(out), "--dpi", "300"]) == 0
    assert "print at 100 %" in capsys.readouterr().out
    image = cv2.imread(str(out), cv2.IMREAD_GRAYSCALE)
    found = _detect(image, sirom_board_model())
    side_px = np.linalg.norm(found[0][1] - found[0][0])  # marker 0 is axis-aligned
    assert side_px / (300 / 25.4) == pytest.approx(18.0, abs=0.15)  # mm


def test_board_command_refuses_other_formats(tmp_path, capsys):
    assert main(["board", "sirom", "-o", str(tmp_path / "b.svgz")]) == 2
    assert "write a .pdf or a .png" in capsys.readouterr().err
