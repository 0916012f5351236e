"""``track``: follow a spinning satellite's grapple pad at a stand-off and close it to contact.

YAML::

    - track:
        robot: left
        target: mockup
        fixture: pad_left
        max_spin: 2 rpm          # wait until the state estimate's spin is at or below this
        standoff: 100 mm         # the seed's stand-off
        closing_speed: 100 mm/s  # how fast the stand-off shrinks once tracking starts
        method: rigid_body       # or seed: δ = Δ·τ/T between state arrivals
        lead: 0 s                # start tracking this long before the pad faces the arm (seed: 0)
        contact_force: 15 N      # wrist force along the tool's axis that means contact
        contact_window: 30 ms    # ... as the mean over this long (at least three readings)
        max_age: 1.5 s           # predict on from a state at most this old, then back off and fail
        reacquire: 5 s           # waiting: fail when no fresh state has come for this long

After the JPL dual-arm grappling [JPL]: once the spin (from ``/target/<target>/state``) is at or
below ``max_spin``, the leaf finds when the pad will next face the arm (its normal pointing at
the arm's base, ``orbitree.skills.grapple.facing_time``), moves the tool to the stand-off pose of
the pad at that moment less ``lead`` (the approach pose; the wrist sensor is zeroed there, still
and clear of contact), and waits. When the predicted stand-off pose comes by, it follows the pad
(``servo_l`` every tick) while the stand-off shrinks at ``closing_speed`` down to ``press``
inside the pad's surface. ``method: seed`` moves the commanded tool by ``δ = Δ·τ/T`` every tick,
``Δ`` from the tool to the pad's goal frame one state period ahead, recomputed at each state
arrival (T measured between arrivals); ``method: rigid_body`` commands every tick the goal frame
predicted by Euler's equations with the target's inertia for ``lookahead`` ahead (default: one
tick, the time ``servo_l`` takes), so the state's latency and the interval between arrivals are
compensated. SUCCESS when the wrist reads ``contact_force`` against the tool's axis (the mean of
the readings over ``contact_window``, 30 ms, and of at least three); the arm's last command
runs on (the next leaf, ``grapple``, takes over in the same tick). FAILURE, the arm stopped,
when the pad has gone by without contact (``standoff/closing_speed + grace`` after tracking
started: "no contact this revolution"; a ``retry`` around it backs off to the stand-off and
tries on the next revolution). A state that
stops arriving (a vision dropout) is not followed forever: the rigid-body prediction carries the
last estimate on for at most ``max_age`` after its time tag; past that the arm backs straight out
along its tool axis to the stand-off it started from (a ``move_l`` that needs no state) and the
leaf fails "target lost". Waiting (first phase, or a ``retry``'s next attempt), it plans nothing
on a state older than ``max_age`` and fails when no fresh one has come for ``reacquire``.
Writes ``/grapple/<robot>/standoff`` (m, the commanded distance
to the pad) and ``/grapple/<robot>/phase``.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Literal

import numpy as np
import py_trees
from pydantic import Field

from orbitree.language.keys import robot_key, target_key
from orbitree.language.quantities import AngularSpeed, Duration, Force, Length, Speed
from orbitree.nodes.grappling import TOOL_ON_PAD, GrappleRecord, Predictor, TargetModel, base_of
from orbitree.nodes.motion import MotionLeaf, MotionParams
from orbitree.skills import grapple as gr

Status = py_trees.common.Status
ARRIVED_M = 0.003
SETTLE_S = 0.6  # s: at the approach pose this long before tracking (the wrist sensor is zeroed)


class TrackParams(MotionParams):
    target: str = Field(description="the satellite (kind: satellite, with a state_sensor)")
    fixture: str = Field(description="the pad this arm grapples")
    max_spin: AngularSpeed = Field(2 * np.pi * 2 / 60, gt=0.0, description="track only at or below this spin")
    standoff: Length = Field(0.1, gt=0.0, description="distance to the pad while following it")
    closing_speed: Speed = Field(0.1, gt=0.0, description="how fast the stand-off shrinks")
    press: Length = Field(0.006, ge=0.0, description="how far past the pad's surface the goal ends")
    method: Literal["seed", "rigid_body"] = Field("rigid_body", description="seed: δ = Δ·τ/T; rigid_body: "
                                                  "Euler prediction every tick")
    # the bound inside the union, so the schema's quantity carries it as the loader does
    lookahead: Annotated[Duration, Field(ge=0.0)] | None = Field(
        None, description="rigid_body: predict this far ahead (default: one tick)")
    lead: Duration = Field(0.0, ge=0.0, description="start tracking this long before the pad faces the arm")
    contact_force: Force = Field(15.0, gt=0.0, description="wrist force against the tool's axis meaning contact")
    contact_window: Duration = Field(0.03, gt=0.0, description="contact: the mean over this long (at least three "
                                     "readings) reaches contact_force")
    approach_speed: Speed = Field(0.25, gt=0.0, description="move_l speed to the approach pose")
    grace: Duration = Field(0.5, ge=0.0, description="after the closing time, how long to wait for contact")
    max_age: Duration = Field(1.5, gt=0.0, description="predict on from a state at most this old; past it, back "
                              "off to the stand-off and fail")
    reacquire: Duration = Field(5.0, gt=0.0, description="waiting: fail when no state younger than max_age has "
                                "come for this long")


class Track(MotionLeaf):
    kind = "track"
    Params = TrackParams
    params: TrackParams

    @classmethod
    def reads(cls, params: TrackParams) -> list[str]:
        return [target_key(params.target, "state"), robot_key(params.robot, "tcp_pose"),
                robot_key(params.robot, "wrench")]

    @classmethod
    def writes(cls, params: TrackParams) -> list[str]:
        return [f"/grapple/{params.robot}/standoff", f"/grapple/{params.robot}/phase"]

    def setup(self, **kwargs: object) -> None:
        super().setup(**kwargs)
        self.model = TargetModel.of(self.ctx, self.params.target)
        self.pad2body = self.model.pad(self.params.fixture).pad2body
        self.base2world = base_of(self.device)
        self.misses = 0

    # -- lifecycle hooks ------------------------------------------------------------------------
    def start(self) -> Status:
        self.predictor = Predictor(self.model.inertia)
        self.phase = "waiting"
        # the mean over contact_window, and at least three readings: at a 2 ms tick three readings
        # span less than the wrist sensor's own 5 ms lag, and its noise does not average out
        self.readings: deque[float] = deque(maxlen=max(3, round(self.params.contact_window / self.ctx.period)))
        self.state_period = 0.5
        self.last_stamp: float | None = None
        self.seed: gr.SeedTracking | None = None
        self.record = GrappleRecord.of(self.ctx)
        self.stale_since: float | None = None
        self.lost = ""
        self._say("waiting")
        return Status.RUNNING

    def running(self) -> Status:
        message = self.read(target_key(self.params.target, "state"))
        fresh = self.predictor.update(message)
        if fresh:
            if self.last_stamp is not None and message.stamp > self.last_stamp:
                self.state_period = float(message.stamp - self.last_stamp)
            self.last_stamp = float(message.stamp)
        if self.phase == "backing off":
            return self._back_off()
        age = self.ctx.now - self.predictor.estimate.t if self.predictor.estimate is not None else np.inf
        if age > self.params.max_age:
            if self.phase != "waiting":
                return self._lose(f"state {age:.2f} s old: target lost")
            self.stale_since = self.ctx.now if self.stale_since is None else self.stale_since
            if self.ctx.now - self.stale_since >= self.params.reacquire:
                self.feedback_message = f"no fresh state of the target for {self.params.reacquire:g} s"
                self.ctx.event("grapple_target_lost", node=self.name, robot=self.params.robot, age=round(age, 4))
                return Status.FAILURE
            self.feedback_message = "waiting for a fresh state of the target"
            return Status.RUNNING
        self.stale_since = None
        if self.phase == "waiting":
            return self._wait()
        if self.phase == "approach":
            return self._approach()
        if self.phase == "ready":
            return self._ready()
        return self._track(fresh)

    # -- phases ----------------------------------------------------------------------------------
    def _wait(self) -> Status:
        spin = self.predictor.spin()
        if spin > self.params.max_spin:
            self.feedback_message = f"spin {spin * 60 / (2 * np.pi):.2f} rpm over the limit"
            return Status.RUNNING
        tool = self._tool()
        earliest = self.ctx.now + SETTLE_S
        for _ in range(2):  # the next facing, or the one after if the arm cannot be there in time
            self._plan(spin, earliest)
            travel = float(np.linalg.norm(tool[:3, 3] - self.approach[:3, 3])) / self.params.approach_speed
            if self.start_t >= self.ctx.now + travel + SETTLE_S:
                break
            earliest = self.ctx.now + travel + SETTLE_S
        self.move_l(self._to_base(self.approach), self.params.approach_speed, 1.2)
        self._say("approach")
        wait = self.face_t - self.ctx.now
        self.feedback_message = f"to the approach pose; the pad faces the arm in {wait:.1f} s"
        return Status.RUNNING

    def _plan(self, spin: float, earliest: float) -> None:
        """The next time the pad faces the arm after ``earliest`` (+ ``lead``), and the approach pose."""
        turn = 2 * np.pi / max(spin, 1e-3)
        self.face_t, _ = gr.facing_time(self.predictor.at(self.ctx.now), self.model.inertia, self.pad2body,
                                        self.base2world[:3, 3], earliest + self.params.lead, turn,
                                        dt=min(0.05, 0.03 / max(spin, 1e-3)))
        self.start_t = self.face_t - self.params.lead
        self.approach = self._goal(self.start_t - self.ctx.now, self.params.standoff)

    def _approach(self) -> Status:
        if not self.arrived():
            return Status.RUNNING
        self.robot.zero_ft()  # still, clear of contact: the UR way before a force task
        self._say("ready")
        return self._ready()

    def _ready(self) -> Status:
        goal = self._goal(self._lookahead(), self.params.standoff)
        error = float(np.linalg.norm(goal[:3, 3] - self.approach[:3, 3]))
        if self.ctx.now >= self.start_t - self._lookahead() or error < ARRIVED_M:
            self.track_t = self.ctx.now
            self._say("tracking")
            return self._track(True)
        self.write(f"/grapple/{self.params.robot}/standoff", self.params.standoff)
        self.feedback_message = f"at the approach pose; tracking in {self.start_t - self.ctx.now:.2f} s"
        return Status.RUNNING

    def _track(self, fresh: bool) -> Status:
        p = self.params
        wrench = self.read(self.robot_key("wrench"))
        if wrench is not None and self.ctx.age(self.robot_key("wrench")) == 0.0:
            self.readings.append(-float(wrench[2]))  # pressing the pad pushes the tool back along -z
        if len(self.readings) == self.readings.maxlen and float(np.mean(self.readings)) >= p.contact_force:
            self.record.contact(self.ctx.now, self.predictor.spin())
            self.finished("arm")  # the last command runs on; grapple takes over this tick
            self.feedback_message = f"contact: {np.mean(self.readings):.1f} N"
            return Status.SUCCESS
        closing = p.standoff + p.press
        if self.ctx.now - self.track_t > closing / p.closing_speed + p.grace:
            return self._missed("no contact this revolution")
        if p.method == "seed":
            self._seed_step(fresh)
        else:
            ahead = self._lookahead()
            goal = self._goal(ahead, self._standoff(self.ctx.now + ahead))
            self._servo(goal)
        self.feedback_message = f"tracking, stand-off {self._standoff(self.ctx.now) * 1e3:.0f} mm"
        return Status.RUNNING

    def _seed_step(self, fresh: bool) -> None:
        """The seed's law: at an arrival, Δ to the goal one state period ahead; δ = Δ·τ/T each tick."""
        if fresh or self.seed is None:
            horizon = self.state_period
            goal = self._goal(horizon, self._standoff(self.ctx.now + horizon))
            self.seed = gr.seed_tracking_start(self._tool(), goal, self.state_period, self.ctx.period)
        self.seed = gr.seed_tracking_step(self.seed)
        self._servo(self.seed.commanded2world)

    # -- helpers ----------------------------------------------------------------------------------
    def _standoff(self, t: float) -> float:
        p = self.params
        value = p.standoff - p.closing_speed * max(0.0, t - self.track_t)
        self.write(f"/grapple/{p.robot}/standoff", max(value, -p.press))
        return max(value, -p.press)

    def _lookahead(self) -> float:
        return self.ctx.period if self.params.lookahead is None else self.params.lookahead

    def _goal(self, ahead: float, distance: float) -> np.ndarray:
        """The tool's frame (4, 4, world) ``distance`` off the pad predicted ``ahead`` s from now."""
        pad = self.predictor.pad(self.ctx.now, self.pad2body, ahead)
        return gr.standoff(pad, distance) @ TOOL_ON_PAD

    def _tool(self) -> np.ndarray:
        return self.base2world @ self.read(self.robot_key("tcp_pose"))

    def _to_base(self, tool2world: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.base2world, tool2world)

    def _servo(self, tool2world: np.ndarray) -> None:
        self.robot.servo_l(self._to_base(tool2world))
        self.commanded("arm", self.robot.stop)

    def _lose(self, why: str) -> Status:
        """The state went stale: back straight out along the tool's axis to the stand-off, then fail."""
        self.lost = why
        self.ctx.event("grapple_target_lost", node=self.name, robot=self.params.robot, phase=self.phase)
        if self.phase != "tracking":  # still at (or on the way to) the approach pose: clear of the pad
            self.finished("arm")
            self.robot.stop()
            return self._missed(why)
        tool = self._tool()
        closed = self.params.standoff - self._standoff(self.ctx.now)
        out = tool.copy()
        out[:3, 3] -= tool[:3, 2] * max(closed, 0.0)  # the tool's z points at the pad
        self.move_l(self._to_base(out), self.params.approach_speed, 1.2)
        self._say("backing off")
        self.write(f"/grapple/{self.params.robot}/standoff", self.params.standoff)
        self.feedback_message = f"{why}: backing off {closed * 1e3:.0f} mm"
        return Status.RUNNING

    def _back_off(self) -> Status:
        if not self.arrived():
            return Status.RUNNING
        return self._missed(self.lost)

    def _missed(self, why: str) -> Status:
        self.misses += 1
        self.record.fields["revolutions_missed"] = max(self.record.fields["revolutions_missed"], self.misses)
        self.ctx.event("grapple_missed", node=self.name, robot=self.params.robot, reason=why)
        self.feedback_message = why
        return Status.FAILURE

    def _say(self, phase: str) -> None:
        self.phase = phase
        self.write(f"/grapple/{self.params.robot}/phase", phase)
