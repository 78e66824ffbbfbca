"""Acceptance on real UAI competition instances (not shipped: their licence is unclear).

Set ``MCSA_UAI_DIR`` to a folder of ``NAME.uai`` files with their ``NAME.uai.evid`` and published
``NAME.uai.PR`` / ``NAME.uai.MAR`` answers (docs/uai.md says where the UAI 2014 sets are found);
the tests are skipped when it is unset.  ``MCSA_UAI_MEMORY_CAP`` (e.g. ``4G``) overrides the
memory cap (default: a quarter of the machine's memory).  Select instances with ``-k``.

For every instance: exact ``log10 Z`` (with its evidence) equals the ``.PR`` value within its printed
digits (half a unit of the last printed digit, plus 1e-9 relative for the binary round trip), all
marginals equal the ``.MAR`` file within 1e-5, and an instance too wide for the memory cap is
refused (naming its width and the memory needed) within 5 s.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from samplers.models import TooWideError, read_evid, read_mar, read_uai
from samplers.models.elimination import default_memory_cap
from samplers.uai_cli import parse_memory

UAI_DIR = os.environ.get("MCSA_UAI_DIR")
CAP = parse_memory(os.environ["MCSA_UAI_MEMORY_CAP"]) if os.environ.get("MCSA_UAI_MEMORY_CAP") else None
INSTANCES = sorted(Path(UAI_DIR).glob("*.uai"), key=lambda p: p.stat().st_size) if UAI_DIR else []



def printed_tolerance(token: str) -> float:
    """Half a unit of the last printed digit of ``token`` (``-5.86181`` -> 5e-6, ``1.2e3`` -> 50)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** ((int(exponent) if exponent else 0) - decimals)


def test_printed_tolerance():
    assert printed_tolerance("-5.86181") == pytest.approx(5e-6)
    assert printed_tolerance("169.408") == pytest.approx(5e-4)
    assert printed_tolerance("1.25e2") == pytest.approx(0.5)


@pytest.mark.skipif(not UAI_DIR, reason="set MCSA_UAI_DIR to a folder of UAI instances")
@pytest.mark.parametrize("path", INSTANCES or [None], ids=lambda p: p.name[:-4] if p else "none")
def test_exact_answers_equal_the_published_ones(path):
    cap = default_memory_cap() if CAP is None else CAP
    graph = read_uai(path)
    evid = Path(f"{path}.evid")
    evidence = read_evid(evid)[0] if evid.exists() else {}
    start = time.perf_counter()
    cond = graph.condition(evidence)
    try:
        log_z = cond.graph.log_partition_exact(memory_cap=cap)
    except TooWideError as exc:
        elapsed = time.perf_counter() - start
        assert "induced width" in str(exc) and "would need" in str(exc)
        assert elapsed < 5.0, f"refusal took {elapsed:.1f} s"
        pytest.skip(f"refused in {elapsed:.2f} s: {exc}")
    pr = Path(f"{path}.PR")
    if pr.exists():
        token = pr.read_text().split()[-1]
        if graph.log_constant == -np.inf:
            assert log_z == -np.inf
            pytest.xfail(f"the file has constant factors of value 0, so Z = 0 as written; its .PR says log10 Z = "
                         f"{token}")
        published = float(token)
        assert log_z / math.log(10) == pytest.approx(published, abs=printed_tolerance(token), rel=1e-9)
    mar = Path(f"{path}.MAR")
    if mar.exists():
        try:
            _, marg = cond.graph.solve(memory_cap=cap)
        except TooWideError as exc:
            pytest.skip(f"log Z checked; the marginals pass refused: {exc}")
        full = cond.expand_marginals(marg, graph.max_states)
        for v, ref in enumerate(read_mar(mar)):
            np.testing.assert_allclose(full[v, :ref.size], ref, atol=1e-5, err_msg=f"variable {v}")
