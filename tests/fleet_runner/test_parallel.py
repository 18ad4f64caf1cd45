"""``fleet.parallel.run_many``: results in the order given whichever finishes first, in-process, on a
local process pool and as Ray tasks (a local ``ray.init()``); a failing configuration is an error that
names it; progress relayed from the workers to tqdm bars on a terminal."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator

import pytest

from kubeletemu.fleet import parallel
from kubeletemu.fleet.parallel import ConfigurationFailed, run_many
from tests.fleet_runner.standin import StandInConfig, expected_sum, run_standin

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

# The first configuration sleeps longest: on two workers it finishes after the later ones.
CONFIGS = [
    StandInConfig("slow", pods=40, delay_s=1.0),
    StandInConfig("quick", pods=30),
    StandInConfig("quicker", pods=20),
    StandInConfig("quickest", pods=10),
]


def check(results: list[dict[str, object]]) -> None:
    assert [r["name"] for r in results] == ["slow", "quick", "quicker", "quickest"]
    assert [r["sum_of_squares"] for r in results] == [expected_sum(c.pods) for c in CONFIGS]


def test_in_process() -> None:
    results = run_many(CONFIGS[1:] + CONFIGS[:1], workers=1, fn=run_standin)
    assert [r["name"] for r in results] == ["quick", "quicker", "quickest", "slow"]
    assert {r["pid"] for r in results} == {os.getpid()}


@pytest.mark.slow
def test_pool_of_two_keeps_the_input_order() -> None:
    results = run_many(CONFIGS, workers=2, fn=run_standin)
    check(results)
    pids = {r["pid"] for r in results}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    # "slow" held one worker for a second: the other ran the three quick ones.
    assert results[0]["pid"] not in {r["pid"] for r in results[1:]}


def test_nothing_to_run_and_bad_worker_count() -> None:
    assert run_many([], fn=run_standin) == []
    with pytest.raises(ValueError, match="workers: must be at least 1, got 0"):
        run_many(CONFIGS, workers=0, fn=run_standin)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_names_the_configuration(workers: int) -> None:
    configs = [StandInConfig("fine"), StandInConfig("broken-cache", fail="resync period is negative")]
    with pytest.raises(ConfigurationFailed) as caught:
        run_many(configs, workers=workers, fn=run_standin)
    assert str(caught.value) == "run 'broken-cache' failed: ValueError: resync period is negative"
    assert caught.value.name == "broken-cache" and isinstance(caught.value.cause, ValueError)


class Terminal(io.StringIO):
    """Standard error as a terminal would be: tqdm draws only there."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_relayed_to_the_terminal(workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    results = run_many(CONFIGS, workers=workers, progress=True, fn=run_standin)
    check(results)
    drawn = terminal.getvalue()
    assert "runs (4 setups × 1 seed): 100%" in drawn and "4/4" in drawn
    # Each configuration's pods, as reported from inside the worker (every 10 pods).
    for config in CONFIGS:
        assert f"{config.name}: 100%" in drawn and f"{config.pods}/{config.pods}" in drawn
    assert "slow:  25%" in drawn and "10/40" in drawn


def test_no_progress_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    check(run_many(CONFIGS, workers=2, progress=True, fn=run_standin))
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_ray_started_and_stopped_here() -> None:
    """Without a Ray already running, ``"local"`` starts one for the call and stops it after. (Before the
    tests sharing the module's Ray below.)"""
    import ray

    assert not ray.is_initialized()
    check(run_many(CONFIGS, ray_address=parallel.LOCAL, workers=2, fn=run_standin))
    assert not ray.is_initialized()


def test_ray_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cluster for ``auto`` to find; Ray not installed (hidden as Python hides a module)."""
    import ray

    assert not ray.is_initialized()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(parallel.RunnerError, match=r"^--ray auto: Could not find any running Ray instance"):
        run_many(CONFIGS, ray_address="auto", fn=run_standin)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(parallel.RayUnavailable) as caught:
        run_many(CONFIGS, ray_address="auto", fn=run_standin)
    assert str(caught.value) == "--ray needs Ray: pip install 'kubeletemu[cluster]'"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    import ray

    parallel.init_ray(parallel.LOCAL, workers=2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_tasks_keep_the_input_order(local_ray: None) -> None:
    results = run_many(CONFIGS, ray_address=parallel.LOCAL, fn=run_standin)
    check(results)
    assert os.getpid() not in {r["pid"] for r in results}


def test_ray_failure_names_the_configuration(local_ray: None) -> None:
    configs = [StandInConfig("fine"), StandInConfig("exporter", fail="no such exporter")]
    with pytest.raises(ConfigurationFailed) as caught:
        run_many(configs, ray_address=parallel.LOCAL, fn=run_standin)
    assert str(caught.value) == "run 'exporter' failed: ValueError: no such exporter"


@pytest.mark.slow
def test_ray_progress_through_a_ray_queue(local_ray: None, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    check(run_many(CONFIGS, ray_address=parallel.LOCAL, progress=True, fn=run_standin))
    drawn = terminal.getvalue()
    assert "runs (4 setups × 1 seed): 100%" in drawn
    for config in CONFIGS:
        assert f"{config.pods}/{config.pods}" in drawn
