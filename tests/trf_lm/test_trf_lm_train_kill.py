"""Kill -9 a ``mcsa trf train`` process, resume from its checkpoint: same iterations, same parameters; SIGTERM
ends it with a message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from trf.io import read_npz
from trf.lm.model import SentenceTRF

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down"] * 8)


def _cmd(train, out, ckpt, t_max, resume=False):
    cmd = [sys.executable, "-m", "samplers.cli", "trf", "train", "--train", str(train), "--out", str(out),
           "--classes", "3", "--features", "w+c+ws", "--max-iterations", str(t_max), "--samples", "20",
           "--t-c", "100", "--t0", "10", "--quiet", "--checkpoint", str(ckpt),
           "--checkpoint-every", "5"]
    return cmd + (["--resume"] if resume else [])


@pytest.mark.slow
def test_killed_training_resumes_with_same_iteration_and_state(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(TEXT + "\n")
    env = dict(os.environ)
    t_final = 600  # far beyond the kill point: a warm run does hundreds of iterations per second
    reference = tmp_path / "reference.npz"
    subprocess.run(_cmd(train, reference, tmp_path / "ref.ckpt", t_final), check=True, env=env, timeout=600)
    ckpt = tmp_path / "run.ckpt"
    proc = subprocess.Popen(_cmd(train, tmp_path / "never.npz", ckpt, 10**6), env=env)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if ckpt.exists() and read_npz(ckpt, "augsa-checkpoint")[1]["t"] >= 15:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    killed_at = read_npz(ckpt, "augsa-checkpoint")[1]["t"]
    assert 15 <= killed_at < t_final and not (tmp_path / "never.npz").exists()
    resumed = tmp_path / "resumed.npz"
    subprocess.run(_cmd(train, resumed, ckpt, t_final, resume=True), check=True, env=env, timeout=600)
    a, b = SentenceTRF.load(reference), SentenceTRF.load(resumed)
    assert a.meta["iterations"] == b.meta["iterations"] == t_final
    np.testing.assert_array_equal(a.lam, b.lam)
    np.testing.assert_array_equal(a.zeta, b.zeta)


def test_sigterm_stops_training_with_a_message_naming_the_checkpoint(tmp_path):
    """``kill PID`` (SIGTERM) of a running ``mcsa trf train``: status 143, one line naming the checkpoint to resume
    from, no traceback, no model written."""
    train = tmp_path / "train.txt"
    train.write_text(TEXT + "\n")
    ckpt = tmp_path / "run.ckpt"
    proc = subprocess.Popen(_cmd(train, tmp_path / "never.npz", ckpt, 10**6), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not ckpt.exists():
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == (f"mcsa: terminated (SIGTERM); the last checkpoint is kept in {ckpt} (run "
                                            "the same command with --resume)")
    assert "Traceback" not in err and not (tmp_path / "never.npz").exists()
