"""Composites tick by tick: each expected trace is written beside its assertions.

Letters: R running, S success, F failure, - invalid (not ticked / halted).
"""

from __future__ import annotations


def test_sequence_with_memory_does_not_restart_finished_children(harness):
    h = harness("""
        sequence:
          name: seq
          children:
            - script: {name: a, statuses: [R, S]}
            - script: {name: b, statuses: [R, R, S]}
    """)
    assert h.tick() == "seq=R a=R b=-"
    assert h.tick() == "seq=R a=S b=R"
    assert h.tick() == "seq=R a=S b=R"  # a is not re-ticked: memory
    assert h.tick() == "seq=S a=S b=S"
    assert h.journal("initialise") == ["initialise:a", "initialise:b"]


def test_reactive_sequence_reticks_earlier_children_every_tick(harness):
    h = harness("""
        sequence:
          name: seq
          reactive: true
          children:
            - script: {name: check, statuses: [S, S, F]}
            - script: {name: act, statuses: [R]}
    """)
    assert h.tick() == "seq=R check=S act=R"
    assert h.tick() == "seq=R check=S act=R"
    # the check fails on the third tick: the running action is halted
    assert h.tick() == "seq=F check=F act=-"
    assert "terminate:act:INVALID" in h.journal("terminate")


def test_sequence_fails_at_first_failure_and_skips_the_rest(harness):
    h = harness("""
        sequence: [script: {name: a, statuses: [F]}, script: {name: b}]
    """)
    assert h.tick() == "sequence=F a=F b=-"


def test_fallback_with_memory_tries_children_in_order_until_one_succeeds(harness):
    h = harness("""
        fallback:
          name: fb
          children:
            - script: {name: a, statuses: [F]}
            - script: {name: b, statuses: [R, F]}
            - script: {name: c, statuses: [S]}
    """)
    assert h.tick() == "fb=R a=F b=R c=-"
    # a is not re-ticked while b was running (memory); py_trees resets its status to INVALID
    assert h.tick() == "fb=S a=- b=F c=S"
    assert h.journal("initialise") == ["initialise:a", "initialise:b", "initialise:c"]


def test_reactive_fallback_preempts_lower_priority_child(harness):
    h = harness("""
        fallback:
          name: fb
          reactive: true
          children:
            - script: {name: preferred, statuses: [F, F, S]}
            - script: {name: backup, statuses: [R]}
    """)
    assert h.tick() == "fb=R preferred=F backup=R"
    assert h.tick() == "fb=R preferred=F backup=R"
    assert h.tick() == "fb=S preferred=S backup=-"
    assert "terminate:backup:INVALID" in h.journal("terminate")


def test_fallback_fails_when_every_child_fails(harness):
    h = harness("""
        fallback: [script: {name: a, statuses: [F]}, script: {name: b, statuses: [F]}]
    """)
    assert h.tick() == "fallback=F a=F b=F"


def test_parallel_success_on_all_waits_for_every_child(harness):
    h = harness("""
        parallel:
          name: par
          children:
            - script: {name: a, statuses: [S]}
            - script: {name: b, statuses: [R, R, S]}
    """)
    assert h.tick() == "par=R a=S b=R"
    assert h.tick() == "par=R a=S b=R"
    assert h.tick() == "par=S a=S b=S"


def test_parallel_success_on_one_halts_the_others(harness):
    h = harness("""
        parallel:
          name: par
          policy: one
          children:
            - script: {name: fast, statuses: [R, S]}
            - script: {name: slow, statuses: [R]}
    """)
    assert h.tick() == "par=R fast=R slow=R"
    assert h.tick() == "par=S fast=S slow=-"
    assert "terminate:slow:INVALID" in h.journal("terminate")


def test_parallel_success_on_selected_ignores_unselected(harness):
    h = harness("""
        parallel:
          name: par
          policy: selected
          selected: [watched]
          children:
            - script: {name: watched, statuses: [R, S]}
            - script: {name: background, statuses: [R]}
    """)
    assert h.tick() == "par=R watched=R background=R"
    assert h.tick() == "par=S watched=S background=-"


def test_parallel_fails_as_soon_as_any_child_fails(harness):
    h = harness("""
        parallel:
          name: par
          children:
            - script: {name: a, statuses: [R, F]}
            - script: {name: b, statuses: [R]}
    """)
    assert h.tick() == "par=R a=R b=R"
    assert h.tick() == "par=F a=F b=-"
