"""Test-session set-up shared by every test folder.

Numba keys each cached kernel on its own file only, so a kernel whose jitted callee in another file changed (a
NamedTuple bundle gaining a field, say) loads stale machine code, and can crash the interpreter.  ``make test`` names
the cache folder after a checksum of every source file that mentions ``jit`` (Makefile, ``JIT_SUM``); a contributor
who runs ``pytest`` by hand gets the same protection here: without ``NUMBA_CACHE_DIR`` set, the cache goes to
``.numba_cache/py-<digest of those files>``, a fresh folder after any kernel edit.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_JIT = re.compile(rb"\bjit\b|njit")


def _kernel_sources() -> list[Path]:
    """The tracked ``*.py`` files (every ``*.py`` under the root outside a git checkout), sorted."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, check=True,
                                timeout=30).stdout.split(b"\0")
        files = [ROOT / os.fsdecode(name) for name in listed if name]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts]
    return sorted(p for p in files if p.is_file())


def jit_digest() -> str:
    """A digest of the contents of every source file that mentions ``jit`` (what ``make test``'s checksum covers)."""
    digest = hashlib.sha256()
    for path in _kernel_sources():
        text = path.read_bytes()
        if _JIT.search(text):
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()[:16]


if not os.environ.get("NUMBA_CACHE_DIR"):
    os.environ["NUMBA_CACHE_DIR"] = str(ROOT / ".numba_cache" / f"py-{jit_digest()}")
    if "numba" in sys.modules:  # imported before this file (a plugin): make it read the folder again
        from numba.core import config as _numba_config
        _numba_config.reload_config()
