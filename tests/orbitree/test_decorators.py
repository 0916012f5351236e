"""Decorators tick by tick (clock period 0.1 s). Letters: R running, S success, F failure, - invalid."""

from __future__ import annotations


def test_retry_reruns_after_failure_until_attempts_are_spent(harness):
    h = harness("""
        retry:
          attempts: 3
          child: {script: {name: try, statuses: [F]}}
    """)
    assert h.tick() == "retry=R try=F"
    assert h.tick() == "retry=R try=F"
    assert h.tick() == "retry=F try=F"
    assert h.journal("initialise") == ["initialise:try"] * 3


def test_retry_succeeds_when_a_later_attempt_succeeds(harness):
    h = harness("""
        retry:
          attempts: 3
          child: {script: {name: try, statuses: [F, S]}}
    """)
    assert h.tick() == "retry=R try=F"
    assert h.tick() == "retry=S try=S"


def test_repeat_needs_count_successes_and_fails_on_first_failure(harness):
    h = harness("""
        repeat:
          count: 3
          child: {script: {name: step, statuses: [S]}}
    """)
    assert h.tick() == "repeat=R step=S"
    assert h.tick() == "repeat=R step=S"
    assert h.tick() == "repeat=S step=S"
    h2 = harness("""
        repeat:
          count: 3
          child: {script: {name: step, statuses: [S, F]}}
    """)
    assert h2.tick() == "repeat=R step=S"
    assert h2.tick() == "repeat=F step=F"


def test_repeat_forever_keeps_running(harness):
    h = harness("""
        repeat: {count: -1, child: {succeed: {name: ok}}}
    """)
    assert [h.tick() for _ in range(5)] == ["repeat=R ok=S"] * 5


def test_timeout_fails_and_halts_child_after_duration_of_mission_time(harness):
    h = harness("""
        timeout:
          duration: 250 ms
          child: {script: {name: slow, statuses: [R]}}
    """)
    # ticks at t = 0.0, 0.1, 0.2 are inside the 0.25 s budget; t = 0.3 is not
    assert h.tick() == "timeout=R slow=R"
    assert h.tick() == "timeout=R slow=R"
    assert h.tick() == "timeout=R slow=R"
    assert h.tick() == "timeout=F slow=-"
    assert h.journal("terminate") == ["terminate:slow:INVALID"]
    assert h.tree.behaviours[0].feedback_message == "timed out after 0.25 s"


def test_timeout_passes_through_a_child_that_finishes_in_time(harness):
    h = harness("""
        timeout: {duration: 1 s, child: {script: {name: quick, statuses: [R, S]}}}
    """)
    assert h.tick() == "timeout=R quick=R"
    assert h.tick() == "timeout=S quick=S"


def test_inverter_swaps_success_and_failure_and_keeps_running(harness):
    h = harness("""
        sequence:
          name: seq
          children:
            - inverter: {child: {script: {name: a, statuses: [R, F]}}}
            - inverter: {child: {succeed: {name: b}}}
    """)
    assert h.tick() == "seq=R inverter=R a=R inverter=- b=-"
    assert h.tick() == "seq=F inverter=S a=F inverter=F b=S"


def test_one_shot_runs_child_to_success_once_then_bounces(harness):
    h = harness("""
        repeat:
          count: -1
          child:
            one_shot:
              child: {script: {name: once, statuses: [R, S]}}
    """)
    assert h.tick() == "repeat=R one_shot=R once=R"
    assert h.tick() == "repeat=R one_shot=S once=S"
    assert h.tick() == "repeat=R one_shot=S once=S"
    assert h.tick() == "repeat=R one_shot=S once=S"
    assert h.journal("initialise") == ["initialise:once"]


def test_one_shot_on_success_allows_retries_after_failure(harness):
    h = harness("""
        repeat:
          count: -1
          child:
            fallback:
              name: fb
              children:
                - one_shot: {on: success, child: {script: {name: flaky, statuses: [F, S]}}}
                - succeed: {name: ok}
    """)
    h.tick()
    h.tick()
    h.tick()
    assert h.journal("initialise") == ["initialise:flaky", "initialise:flaky"]
    h2 = harness("""
        repeat:
          count: -1
          child:
            fallback:
              name: fb
              children:
                - one_shot: {on: completion, child: {script: {name: flaky, statuses: [F, S]}}}
                - succeed: {name: ok}
    """)
    h2.tick()
    h2.tick()
    h2.tick()
    assert h2.journal("initialise") == ["initialise:flaky"]


def test_rate_limit_ticks_child_at_most_hz_times_a_second(harness):
    h = harness("""
        rate_limit: {hz: 2.5, child: {script: {name: servo, statuses: [R]}}}
    """)
    ticks = [h.tick() for _ in range(10)]  # 1 s of mission time at 10 Hz
    assert ticks == ["rate_limit=R servo=R"] * 10
    servo = h.tree.behaviours[1]
    assert servo.step == 3  # ticked at t = 0.0, 0.4, 0.8


def test_guard_halts_child_when_condition_stops_holding(harness):
    h = harness(
        """
        sequence:
          name: seq
          children:
            - guard:
                condition: {key: /ok, equals: true}
                child: {script: {name: work, statuses: [R]}}
        """,
        extra="blackboard: {/ok: true}\n",
    )
    assert h.tick() == "seq=R guard=R work=R"
    assert h.tick() == "seq=R guard=R work=R"
    import py_trees

    py_trees.blackboard.Blackboard.set("/ok", False)
    assert h.tick() == "seq=F guard=F work=-"
    assert h.journal("terminate") == ["terminate:work:INVALID"]


def test_guard_with_numeric_condition_and_units(harness):
    h = harness(
        """
        guard:
          condition: {key: /force, below: 30 N}
          child: {script: {name: push, statuses: [R]}}
        """,
        extra="blackboard: {/force: 12.5}\n",
    )
    assert h.tick() == "guard=R push=R"
    import py_trees

    py_trees.blackboard.Blackboard.set("/force", 31.0)
    assert h.tick() == "guard=F push=-"
