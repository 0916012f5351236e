"""A campaign file: its model, its cases, and the runs it plans (format: :mod:`orbitree.campaign`)."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from orbitree.behaviours.catalogue import load_mission
from orbitree.campaign.runs import RunSpec
from orbitree.language.errors import MissionError
from orbitree.language.loader import Mission
from orbitree.language.parser import pydantic_diagnostics
from orbitree.language.source import PathKey, Source, load_file
from orbitree.language.world_spec import SafetySpec
from orbitree.skills.capture import ENVELOPES

CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"

# Cases of one campaign (explicit cases times grid points). The largest shipped campaign has 49;
# every case's mission is loaded and checked before anything runs (some 30 ms each), so 10,000
# already takes minutes to check. Without a bound, a grid of a few short lists is a product of
# billions of cases, built in memory before the first is checked.
MAX_CASES = 10_000

# Runs of one campaign (cases times cycles): each run takes seconds, so 100,000 is days of a
# cluster; the plan of every run is built in memory at the start (~0.5 kB a run).
MAX_RUNS = 100_000
OverrideKey = Annotated[str, StringConstraints(pattern=r"^[^=\s]+$")]


class CaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: str | None = Field(None, pattern=CASE_ID, description="case id (letters, digits, _ and -)")
    description: str = ""
    overrides: dict[OverrideKey, Any] = Field(
        {}, alias="set", description="mission overrides of this case: dotted key -> YAML value"
    )


class CampaignModel(BaseModel):
    """The top level of a campaign file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    campaign: str = Field(min_length=1, description="campaign name, used in outputs")
    description: str = ""
    mission: str = Field(min_length=1, description="mission file, relative to the campaign file")
    workers: int | None = Field(None, ge=1, description="worker processes (default: CPU count)")
    cycles: int = Field(1, ge=1, description="runs per case, seeds seed0 + 0, 1, ...")
    seed: int | None = Field(None, description="seed0 of every case (default: the mission's seed)")
    logs: Literal["all", "failures", "none"] = Field("all", description="which runs keep a mission log")
    envelope: str | None = Field(None, description="capture envelope whose limits the plots draw")
    overrides: dict[OverrideKey, Any] = Field({}, alias="set", description="overrides of every case")
    cases: list[CaseModel] = Field([], description="explicit cases")
    grid: dict[OverrideKey, Annotated[list[Any], Field(min_length=1)]] = Field(
        {}, description="cartesian product of override values"
    )

    @field_validator("envelope")
    @classmethod
    def _known_envelope(cls, value: str | None) -> str | None:
        if value is not None and value not in ENVELOPES:
            raise ValueError(f"unknown envelope {value!r}; known: {', '.join(ENVELOPES)}")
        return value


@dataclass(frozen=True)
class Case:
    id: str
    overrides: tuple[str, ...]  # KEY=VALUE, in the order they apply
    seed0: int


@dataclass
class Campaign:
    model: CampaignModel
    file: Path
    mission: Path
    cases: list[Case]
    envelope: str | None

    @property
    def name(self) -> str:
        return self.model.campaign

    @functools.cached_property
    def safety(self) -> SafetySpec | None:
        """The safety limits of the campaign's mission as written (cases rarely change them);
        None when the mission loads only with a case's overrides."""
        try:
            return load_mission(self.mission).model.safety
        except (MissionError, OSError):
            return None


def assignment(key: str, value: Any) -> str:
    """``KEY=VALUE`` with VALUE written as one line of YAML (what ``--set`` parses back)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=float("inf"), allow_unicode=True)
    text = text.removesuffix("\n").removesuffix("\n...").strip()  # a scalar document ends "..."
    return f"{key}={text}"


def load_campaign(path: str | Path, cli_overrides: list[str] | tuple[str, ...] = ()) -> Campaign:
    """Load and check a campaign file and every case's mission, or raise ``MissionError``."""
    file = Path(path)
    data, source = load_file(file)
    if not isinstance(data, dict):
        raise MissionError([source.at((), f"a campaign is a mapping of keys, got {type(data).__name__}")])
    try:
        model = CampaignModel.model_validate(data)
    except ValidationError as exc:
        raise MissionError(pydantic_diagnostics(exc, source, (), "", model=CampaignModel)) from None
    mission = file.parent / model.mission
    if not mission.is_file():
        raise MissionError([source.at(("mission",), f"mission: no such file: {mission}")])
    common: list[tuple[str, PathKey | None]] = []
    if model.seed is not None:
        common.append((f"seed={model.seed}", ("seed",)))
    common += [(assignment(k, v), ("set", k)) for k, v in model.overrides.items()]
    common += [(text, None) for text in cli_overrides]
    base = _check(mission, common, source)  # one report for mistakes every case would repeat
    cases = _cases(model, common, source)
    checked, errors = [], []
    for case_id, overrides in cases:
        try:
            seed0 = _check(mission, overrides, source).model.seed
        except MissionError as exc:
            errors.extend(exc.diagnostics)
            continue
        checked.append(Case(case_id, tuple(text for text, _ in overrides), seed0))
    if errors:
        raise MissionError(errors)
    envelope = model.envelope or next(
        (e for spec in base.root.walk() if isinstance(e := getattr(spec.params, "envelope", None), str)), None
    )
    return Campaign(model, file, mission, checked, envelope if envelope in ENVELOPES else None)


def _cases(
    model: CampaignModel, common: list[tuple[str, PathKey | None]], source: Source
) -> list[tuple[str, list[tuple[str, PathKey | None]]]]:
    explicit = model.cases or [CaseModel()]
    count = len(explicit) * math.prod(len(values) for values in model.grid.values())
    if count > MAX_CASES:
        where = ("grid",) if model.grid else ("cases",)
        raise MissionError([source.at(where, f"the campaign has {count} cases: more than {MAX_CASES} is refused "
                                      "(every case's mission is checked before anything runs); split it, or "
                                      "repeat cases with 'cycles:'")])
    if count * model.cycles > MAX_RUNS:
        raise MissionError([source.at(("cycles",), f"{count} cases of {model.cycles} cycles are "
                                      f"{count * model.cycles} runs: more than {MAX_RUNS} is refused")])
    points: list[tuple[tuple[str, int, Any], ...]] = [()]
    if model.grid:
        axes = [[(key, j, value) for j, value in enumerate(values)] for key, values in model.grid.items()]
        points = list(itertools.product(*axes))
    case_width, point_width = len(str(len(explicit))), len(str(len(points)))
    out = []
    seen: dict[str, int] = {}
    errors = []
    for i, case in enumerate(explicit):
        case_id = case.id or (f"c{i + 1:0{case_width}d}" if model.cases else "base")
        for n, point in enumerate(points):
            full_id = case_id
            if model.grid:
                grid_id = f"g{n + 1:0{point_width}d}"
                full_id = f"{case_id}-{grid_id}" if model.cases else grid_id
            if full_id in seen:
                errors.append(source.at(("cases", i, "id"), f"cases[{i}]: duplicate case id {full_id!r}"))
                continue
            seen[full_id] = i
            overrides = list(common)
            overrides += [(assignment(k, v), ("cases", i, "set", k)) for k, v in case.overrides.items()]
            overrides += [(assignment(key, value), ("grid", key, j)) for key, j, value in point]
            out.append((full_id, overrides))
    if errors:
        raise MissionError(errors)
    return out


def _check(mission: Path, overrides: list[tuple[str, PathKey | None]], source: Source) -> Mission:
    """Load the mission with ``overrides``; its override errors point into the campaign file."""
    try:
        return load_mission(mission, [text for text, _ in overrides])
    except MissionError as exc:
        where = {f"--set {text}": path for text, path in overrides if path is not None}
        raise MissionError(
            [
                source.at(where[d.file], d.message) if d.file in where else d
                for d in exc.diagnostics
            ]
        ) from None


def plan(campaign: Campaign, out_dir: str | Path, limit: int | None = None) -> list[RunSpec]:
    """The runs of the first ``limit`` cases (all by default), case by case, cycle by cycle."""
    runs_dir = Path(out_dir) / "runs"
    keep = campaign.model.logs
    specs = []
    for case in campaign.cases[:limit]:
        for cycle in range(campaign.model.cycles):
            run_id = f"{case.id}.{cycle}"
            log = None if keep == "none" else str(runs_dir / f"{run_id}.jsonl")
            seed = case.seed0 + cycle
            specs.append(RunSpec(run_id, case.id, cycle, seed, str(campaign.mission), case.overrides, log, keep))
    return specs
