"""pytest plugin (entry point ``pytest11``: ``mcsa``): a ``--mcsa-seed`` option and seeded fixtures.

``rng`` gives each test its own ``np.random.Generator`` derived from the session seed and the test's
node id, so tests are reproducible one by one and independent of order and of ``pytest -n``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

DEFAULT_SEED = 20261123


def pytest_addoption(parser) -> None:
    """Add ``--mcsa-seed`` (the base seed of the ``rng`` / ``mcsa_seed`` fixtures) to pytest's options."""
    group = parser.getgroup("mcsa", "mcsa convergence helpers")
    group.addoption("--mcsa-seed", action="store", type=int, default=DEFAULT_SEED,
                    help=f"base seed for the rng/mcsa_seed fixtures (default {DEFAULT_SEED})")


def pytest_report_header(config) -> str:
    """Print the session's ``--mcsa-seed`` in pytest's header, so a failure can be replayed."""
    return f"mcsa: --mcsa-seed={config.getoption('--mcsa-seed')}"


@pytest.fixture
def mcsa_seed(request) -> int:
    """An integer seed for this test: the session seed mixed with the test's node id."""
    base = int(request.config.getoption("--mcsa-seed"))
    ss = np.random.SeedSequence(entropy=base, spawn_key=(zlib.crc32(request.node.nodeid.encode()),))
    return int(ss.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


@pytest.fixture
def rng(mcsa_seed) -> np.random.Generator:
    """A ``np.random.Generator`` seeded from :func:`mcsa_seed`."""
    return np.random.default_rng(mcsa_seed)
