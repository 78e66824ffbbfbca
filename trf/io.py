"""Atomic model and checkpoint files shared by every ``trf`` model.

A file is one ``.npz`` archive of flat arrays plus a JSON header stored as the reserved array
``__header__`` with ``format_version``, ``kind`` (``"trf-word"``, ``"trf-lm"``, ``"augsa-checkpoint"``,
...) and a free ``meta`` dictionary.  Writes go to a temporary file in the destination folder and are
moved into place with ``os.replace``, so an interrupted save never leaves a half-written file.
Reading checks that the file is complete, carries the header, has a known format version and the
expected kind; every failure is a ``ValueError`` (``FileNotFoundError`` for a missing file) that
names the file.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from samplers.textio import atomic_write

FORMAT_VERSION = 1
HEADER_KEY = "__header__"


def atomic_write_npz(path: str | os.PathLike, arrays: dict[str, Any], meta: dict[str, Any], *,
                     kind: str) -> Path:
    """Write ``arrays`` and the JSON-serialisable ``meta`` to ``path`` atomically.

    Parameters
    ----------
    path : path-like
        Destination (its folder is created if needed).
    arrays : dict of str -> array-like
        Flat arrays to store (``allow_pickle`` is never used, so object arrays are rejected).
    meta : dict
        JSON-serialisable metadata (hyper-parameters, iteration number, ...).
    kind : str
        What the file holds; :func:`read_npz` checks it.

    Returns
    -------
    pathlib.Path
        The written path.
    """
    path = Path(path)
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a non-empty string, got {kind!r}")
    if HEADER_KEY in arrays:
        raise ValueError(f"arrays must not use the reserved name {HEADER_KEY!r}")
    payload = {}
    for name, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype == object:
            raise TypeError(f"arrays[{name!r}] must be a numeric or string array, not dtype=object")
        payload[name] = arr
    header = json.dumps({"format_version": FORMAT_VERSION, "kind": kind, "meta": meta})
    payload[HEADER_KEY] = np.frombuffer(header.encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    # numpy's stubs let **payload fill the bool allow_pickle; the keys here are array names only
    return atomic_write(path, lambda handle: np.savez(handle, **payload))  # type: ignore[arg-type]


def read_header(path: str | os.PathLike) -> dict[str, Any]:
    """The header (``format_version``, ``kind``, ``meta``) of a file written by :func:`atomic_write_npz`."""
    return _read(path)[1]


def read_npz(path: str | os.PathLike, expected_kind: str | tuple[str, ...] | None = None
             ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file written by :func:`atomic_write_npz`.

    Parameters
    ----------
    path : path-like
        The ``.npz`` file.
    expected_kind : str or tuple of str, optional
        Accepted kinds; ``None`` accepts any kind.

    Returns
    -------
    arrays : dict of str -> ndarray
    meta : dict
        The stored ``meta`` with ``kind`` and ``format_version`` added.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is truncated, not an mcsa file, of another format version or of another kind.
    """
    arrays, header = _read(path)
    kind = header.get("kind")
    if expected_kind is not None:
        accepted = (expected_kind,) if isinstance(expected_kind, str) else tuple(expected_kind)
        if kind not in accepted:
            raise ValueError(f"file {str(path)!r} holds kind {kind!r}, expected {' or '.join(map(repr, accepted))}")
    meta = dict(header.get("meta") or {})
    meta["kind"] = kind
    meta["format_version"] = header["format_version"]
    return arrays, meta


def check_model_path(path: str | os.PathLike) -> None:
    """Refuse a model or checkpoint path that is a folder (ValueError) or names no file (FileNotFoundError), the
    checks a command makes on its input model before it reads its text files, so that the first refusal a user
    sees is of the first thing that is wrong (wrap it in :func:`samplers.argtypes.input_flag` to name the flag)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a directory, not a model file")
    if not path.is_file():
        raise FileNotFoundError(f"file {str(path)!r} does not exist")


def _read(path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    path = Path(path)
    check_model_path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise ValueError("not an npz archive")
            arrays = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        # numpy answers bytes that are no archive with advice to load them with allow_pickle, which no user of a
        # model or checkpoint file should follow: say what the file is not instead
        why = "not an npz archive" if "pickle" in str(exc) else str(exc)
        raise ValueError(f"file {str(path)!r} is damaged, truncated or not an mcsa file ({why})") from None
    if HEADER_KEY not in arrays:
        raise ValueError(f"file {str(path)!r} has no mcsa header; it is not an mcsa model file")
    try:
        header = json.loads(arrays.pop(HEADER_KEY).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"file {str(path)!r} has a corrupt header ({exc})") from None
    if not isinstance(header, dict) or header.get("format_version") != FORMAT_VERSION:
        version = header.get("format_version") if isinstance(header, dict) else None
        raise ValueError(f"file {str(path)!r} has format version {version!r}; this version reads {FORMAT_VERSION}")
    return arrays, header


def make_output_folder(path: str | os.PathLike, flag: str) -> Path:
    """Create the output folder ``path`` before any compute, or refuse it (ValueError naming ``flag``): an existing
    file, a folder that cannot be created, or one that is not writable."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag}: {str(path)!r} exists and is not a folder (give a new or existing folder)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag}: cannot create the folder {str(path)!r} ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ValueError(f"{flag}: the folder {str(path)!r} is not writable")
    return out


def check_output_file(path: str | os.PathLike | None, flag: str) -> None:
    """Refuse an output path before any compute: ``path`` must not be a folder, and its folder must exist or
    be creatable, and be writable (ValueError naming ``flag``).  ``None`` (no output) passes."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a folder; give a file name")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {str(path)!r}: cannot create its folder ({exc.strerror})") from None
    if not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"{flag} {str(path)!r} is not writable")
