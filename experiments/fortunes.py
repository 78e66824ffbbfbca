"""The English fortunes corpus shared by the experiments (Debian packages, installed offline, never fetched).

``apt-get install fortunes fortunes-min fortune-anarchism`` provides the files; :func:`fortune_files` lists
them through ``dpkg -L`` and raises ``RuntimeError`` naming the missing package otherwise.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FORTUNE_PACKAGES = ("fortunes", "fortunes-min", "fortune-anarchism")
SKIP_FILES = {"art", "ascii-art"}  # pictures, not text


def fortune_files() -> list[Path]:
    """The English fortune text files of :data:`FORTUNE_PACKAGES` (``RuntimeError`` naming the package if absent)."""
    files = set()
    for package in FORTUNE_PACKAGES:
        try:
            listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
        except FileNotFoundError:
            raise RuntimeError("dpkg is not available: the fortunes corpus needs the Debian packages "
                               f"{', '.join(FORTUNE_PACKAGES)}") from None
        if listing.returncode != 0:
            raise RuntimeError(f"Debian package {package!r} is not installed; run "
                               f"apt-get install {' '.join(FORTUNE_PACKAGES)}")
        for line in listing.stdout.split():
            path = Path(line)
            if ("games/fortunes/" in line and path.is_file() and not path.is_symlink()
                    and path.suffix not in (".dat", ".u8") and path.name not in SKIP_FILES):
                files.add(path)
    return sorted(files)
