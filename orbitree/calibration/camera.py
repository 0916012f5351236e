"""``orbitree calibrate camera IMAGES_DIR -o FILE``: intrinsics and hand-eye mount from saved views.

``IMAGES_DIR`` holds the images and ``poses.yaml`` (the format of
:mod:`orbitree.drivers.camera_views`: the board's layout, and per view its image and the TCP pose
the arm reported); ``FILE`` is the calibration file ``camera.calibration`` and ``camera.mount``
read. Every OpenCV hand-eye method is solved and printed with its spread (how consistently its
mount places the board over the views); ``--method`` keeps one, ``auto`` the most consistent.
"""

from __future__ import annotations

import sys
from pathlib import Path

from orbitree.drivers.calibration_io import CalibrationFileError
from orbitree.drivers.camera_views import calibrate_views, detect_image, read_views

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def camera(images: str | Path, out: str | Path, method: str = "auto") -> int:
    """Calibrate from ``images`` and write ``out``; the exit code (2: unreadable or too few views)."""
    try:
        views = read_views(images)
        detections, size = [], (0, 0)
        for image in views.images:
            detection, size = detect_image(image, views.board)
            detections.append(detection)
        result = calibrate_views(detections, views.tcp2base, views.board, size, method=method)
        result.write(out)
    except (CalibrationFileError, ValueError, OSError) as exc:
        print(f"orbitree calibrate camera: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    k, dist = result.intrinsics.camera_matrix, result.intrinsics.dist_coeffs
    print(f"{result.views_used} of {result.views_total} views used; reprojection error {result.rms_px:.3f} px rms")
    print(f"fx {k[0, 0]:.2f}  fy {k[1, 1]:.2f}  cx {k[0, 2]:.2f}  cy {k[1, 2]:.2f} px; "
          f"k1 {dist[0]:+.5f} k2 {dist[1]:+.5f} p1 {dist[2]:+.6f} p2 {dist[3]:+.6f} k3 {dist[4]:+.5f}")
    print(f"{'hand-eye':<11} {'x mm':>8} {'y mm':>8} {'z mm':>8} {'spread mm':>10} {'spread deg':>11}")
    for name, mount in result.mounts.items():
        spread = result.spreads[name]
        mark = "  <- written" if name == result.method else ""
        print(f"{name:<11} {mount[0, 3] * 1e3:>8.3f} {mount[1, 3] * 1e3:>8.3f} {mount[2, 3] * 1e3:>8.3f} "
              f"{spread[0] * 1e3:>10.4f} {spread[1]:>11.5f}{mark}")
    print(f"calibration written to {out}")
    return EXIT_OK
