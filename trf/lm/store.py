"""Model files of the LM toolkit: one ``.npz`` with flat arrays plus a JSON header.

The header carries a format version and a ``kind`` ("ngram", "trf-lm", ...) so a file of the wrong
kind, a truncated file or a foreign file gives a clear ``ValueError`` instead of a crash later.
Writes are atomic (temporary file in the same folder, then ``os.replace``), so an interrupted save
never leaves a half-written model behind.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1
_HEADER = "__header__"


def save_arrays(path, arrays: dict[str, np.ndarray], meta: dict, *, kind: str) -> Path:
    """Atomically write ``arrays`` and ``meta`` (JSON-serialisable) to ``path`` as an ``.npz`` file."""
    path = Path(path)
    if _HEADER in arrays:
        raise ValueError(f"arrays must not use the reserved name {_HEADER!r}")
    header = json.dumps({"format_version": FORMAT_VERSION, "kind": kind, "meta": meta})
    payload = {name: np.asarray(value) for name, value in arrays.items()}
    payload[_HEADER] = np.frombuffer(header.encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_arrays(path, *, kind: str) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file written by :func:`save_arrays`, checking that it is complete and of ``kind``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise ValueError(f"model file {str(path)!r} is truncated or not an mcsa model file ({exc})") from None
    if _HEADER not in arrays:
        raise ValueError(f"model file {str(path)!r} has no mcsa header; it is not an mcsa model file")
    header = json.loads(arrays.pop(_HEADER).tobytes().decode("utf-8"))
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"model file {str(path)!r} has format version {header.get('format_version')!r}; "
                         f"this version reads {FORMAT_VERSION}")
    if header.get("kind") != kind:
        raise ValueError(f"model file {str(path)!r} holds a {header.get('kind')!r} model, expected {kind!r}")
    return arrays, header["meta"]
