"""Bad orbit and satellite input is reported at its file:line:col, exit 2 (``orbitree validate``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitree.cli import main

L1 = "1 25544U 98067A   19343.69339541  .00001764  00000-0  38792-4 0  9991"
L2 = "2 25544  51.6439 211.2001 0007417  17.6667  85.6398 15.50103472202482"

HEAD = (
    "mission: m\n"                                                    # 1
    "rate_hz: 10\n"                                                   # 2
    "targets:\n"                                                      # 3
    "  sat: {kind: satellite, pose: [1, 0, 0.5, 0, 0, 0], mass: 159 kg, inertia: [18, 18, 20]}\n"  # 4
    "tree:\n"                                                         # 5
    "  wait: 1 s\n"                                                   # 6
    "orbit:\n"                                                        # 7
    "  target: sat\n"                                                 # 8
)


def _with_checksum(line: str) -> str:
    total = sum(int(c) if c.isdigit() else 1 if c == "-" else 0 for c in line[:68])
    return line[:68] + str(total % 10)


OTHER_SATELLITE = _with_checksum(L2.replace("25544", "25545", 1))
KEPLER = "  kepler: {semi_major_axis: 6928 km, eccentricity: 0.001, inclination: 51.6 deg}\n"

CASES = {
    "tle-checksum": (HEAD + f'  tle:\n    - "{L1}"\n    - "{L2[:-1]}3"\n', (11, 7), "checksum"),
    "tle-short-line": (HEAD + f'  tle:\n    - "{L1[:60]}"\n    - "{L2}"\n', (10, 7), "has 60 columns"),
    "tle-one-line": (HEAD + f'  tle: ["{L1}"]\n', (9, 8), "two lines"),
    "tle-two-satellites": (HEAD + f'  tle:\n    - "{L1}"\n    - "{OTHER_SATELLITE}"\n',
                           (10, 5), "two satellites"),
    "eccentricity-hyperbolic": (HEAD + "  epoch: 2024-03-01T12:00:00Z\n"
                                "  kepler: {semi_major_axis: 6928 km, eccentricity: 1.2}\n", (10, 52),
                                "eccentricity 1.2 >= 1"),
    "eccentricity-parabolic": (HEAD + "  epoch: 2024-03-01T12:00:00Z\n"
                               "  kepler: {semi_major_axis: 6928 km, eccentricity: 1}\n", (10, 52),
                               "not a closed"),
    "epoch-unknown-format": (HEAD + '  epoch: "March 1 2024, noon"\n' + KEPLER, (9, 10), "ISO 8601"),
    "epoch-no-zone": (HEAD + '  epoch: "2024-03-01T12:00:00"\n' + KEPLER, (9, 10), "no time zone"),
    "kepler-without-epoch": (HEAD + KEPLER, (8, 3), "need an 'epoch:'"),
    "perigee-underground": (HEAD + "  epoch: 2024-03-01T12:00:00Z\n"
                            "  kepler: {semi_major_axis: 6000 km}\n", (10, 11), "inside the Earth"),
    "orbit-unknown-target": (HEAD.replace("  target: sat", "  target: hubble") + "  epoch: 2024-03-01T12:00:00Z\n"
                             + KEPLER, (8, 11), "'hubble' is not declared"),
    "satellite-without-inertia": (HEAD[:HEAD.index("targets:")] + "targets:\n  sat: {kind: satellite, pose: "
                                  "[0, 0, 0, 0, 0, 0], mass: 3 kg}\ntree:\n  wait: 1 s\n", (4, 8),
                                  "needs inertia"),
    "satellite-unphysical-inertia": (HEAD.replace("[18, 18, 20]", "[1, 1, 5]") + "  epoch: 2024-03-01T12:00:00Z\n"
                                     + KEPLER, (4, 77), "triangle inequality"),
    "sirom-with-mass": ("mission: m\ntargets:\n  s: {pose: [0, 0, 0, 0, 0, 0], mass: 3 kg}\ntree:\n  wait: 1 s\n",
                        (3, 6), "only for 'kind: satellite'"),
    "spin-unit": (HEAD.replace("inertia: [18, 18, 20]", "inertia: [18, 18, 20], spin: {rate: 2 Hz}")
                  + "  epoch: 2024-03-01T12:00:00Z\n" + KEPLER, (4, 104), "angular speed"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_orbit_or_satellite_input_is_reported_at_its_line(case: str, tmp_path: Path, capsys):
    text, (line, col), words = CASES[case]
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    prefix = f"{path}:{line}:{col}: "
    hits = [ln for ln in err.splitlines() if ln.startswith(prefix)]
    assert hits, f"no diagnostic at {prefix!r}:\n{err}"
    assert any(words in ln for ln in hits), f"{words!r} not in {hits}"


def test_good_orbit_sections_validate(tmp_path: Path, capsys):
    for i, section in enumerate((f'  tle:\n    - "{L1}"\n    - "{L2}"\n',
                                 "  epoch: 2024-03-01T12:00:00Z\n" + KEPLER,
                                 '  epoch: "2024-03-01T13:00:00+01:00"\n' + KEPLER)):
        path = tmp_path / f"m{i}.yaml"
        path.write_text(HEAD + section, encoding="utf-8")
        assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_example_missions_validate(capsys):
    root = Path(__file__).resolve().parents[2] / "missions"
    for name in ("orbit_watch.yaml", "gimbal_standoff.yaml"):
        assert main(["validate", str(root / name)]) == 0, capsys.readouterr().err
