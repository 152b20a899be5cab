"""The `slow` marks, held exact: a test that is not marked slow must cost under LIMIT_S (20 s), or the
run fails, naming it (tests/conftest.py takes these hooks; tests/test_slow_marks.py checks them).

A test's cost is min(wall seconds, CPU seconds) over its setup, call and teardown, the fixtures it
was the first to set up included. CPU seconds are this process's (every thread) and those of the
child processes it waited for (getrusage SELF + CHILDREN: the binaries, make, the compilers), so:

- a loaded machine cannot fail the check: load stretches a test's wall time, not its CPU time, and
  a test that computes costs its CPU time whatever else runs (a single-threaded test exactly; one
  that keeps n cores busy costs at most n times its idle wall time, so keep those well under);
- waiting costs nothing: a test that sleeps or waits on a process it does not reap (a daemon)
  costs its CPU time only; `--durations` shows its wall time.

Tests marked `gpu` are left out: they skip on the CPU machines this limit is for, and on a GPU
their time is the GPU session's. The limit is MLP_SLOW_LIMIT_S when set (the check's own test
sets it low). With MLP_TEST_COSTS=FILE every test's wall, CPU and cost go to FILE (JSON), the
record the marks were set from. Under pytest-xdist the workers measure and the controller checks.
"""
from __future__ import annotations

import json
import os
import resource
import time

import pytest

LIMIT_S = 20.0
LIMIT_ENV = "MLP_SLOW_LIMIT_S"
COSTS_ENV = "MLP_TEST_COSTS"
KEY = "mlp_cost"

_costs: dict[str, dict] = {}


def limit_s() -> float:
    raw = os.environ.get(LIMIT_ENV)
    return float(raw) if raw else LIMIT_S


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of the children it has waited for."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def offenders(costs: dict[str, dict], limit: float) -> list[str]:
    """One line for each test not marked slow (nor gpu) whose cost is over `limit`."""
    return [f"{node}: {c['cost']:.1f} s (wall {c['wall']:.1f} s, CPU {c['cpu']:.1f} s) over {limit:g} s: "
            f"mark it @pytest.mark.slow, or make it cheaper"
            for node, c in sorted(costs.items(), key=lambda kv: -kv[1]["cost"])
            if not c["slow"] and not c["gpu"] and c["cost"] > limit]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._mlp_clock = (time.perf_counter(), cpu_seconds())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    clock = getattr(item, "_mlp_clock", None)
    if call.when != "teardown" or clock is None:
        return
    wall, cpu = time.perf_counter() - clock[0], cpu_seconds() - clock[1]
    outcome.get_result().user_properties.append((KEY, {
        "wall": round(wall, 3), "cpu": round(cpu, 3), "cost": round(min(wall, cpu), 3),
        "slow": item.get_closest_marker("slow") is not None, "gpu": item.get_closest_marker("gpu") is not None}))


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        for key, value in report.user_properties:
            if key == KEY:
                _costs[report.nodeid] = value


def _controller(config) -> bool:
    return not hasattr(config, "workerinput")     # not a pytest-xdist worker


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    bad = offenders(_costs, limit_s()) if _controller(config) else []
    if bad:
        terminalreporter.section("slow marks", red=True)
        terminalreporter.line(f"{len(bad)} test(s) not marked slow cost over {limit_s():g} s "
                              "(min of wall and CPU seconds, tests/slow_marks.py):")
        for line in bad:
            terminalreporter.line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if not _controller(session.config):
        return
    if os.environ.get(COSTS_ENV):
        with open(os.environ[COSTS_ENV], "w", encoding="utf-8") as fh:
            json.dump(_costs, fh, indent=1, sort_keys=True)
    if offenders(_costs, limit_s()) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
