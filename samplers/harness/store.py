"""The on-disk side of a study: a JSON-lines run store, the output folder and its manifest.

Layout of an output folder (``mcsa bench run --out DIR``)::

    DIR/manifest.json    what the folder holds: suite, seed, versions, status complete|incomplete, files
    DIR/runs.jsonl       one JSON object per finished run (and per warm-up), appended and flushed as
                         each run finishes; the source of truth from which everything else is derived
    DIR/results.csv, summary.csv, summary.md, results.json, *.png   written at the end, through a
                         temporary folder, then moved into place
    DIR/.mcsa-lock       while a study runs: the pid, host and start time of the process running it
                         (:class:`OutputLock`), so a second run or resume on the folder is refused

A run record is ``{"type": "run", "study", "problem", "estimator", "budget", "replicate", "seed",
"status": "ok"|"error", "estimates": {target: number or nested list}, "evaluations", "seconds",
"peak_bytes", "memory_kind", "budget_label", "error"}``; a warm-up record is ``{"type": "warmup",
"study", "problem", "estimator", "budget", "seed", "seconds", "error"}``.  JSON round-trips float64
exactly, so results rebuilt from the store equal those of an uninterrupted run.  A line cut short
by a kill is ignored on reading and cut off before the next append.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

MANIFEST = "manifest.json"
RUNS = "runs.jsonl"
#: The lock file of a folder a study is running in (removed when the run ends).
LOCK = ".mcsa-lock"
#: Files the harness writes at the end of a study (plots are listed in the manifest).
SUMMARY_FILES = ("results.csv", "summary.csv", "summary.md", "results.json")
FORMAT = 1


class OutputDirError(ValueError):
    """The output folder cannot be used (an existing file, unwritable, or holding another study)."""


def run_key(record: dict[str, Any]) -> tuple:
    """Identity of a run in the store: (study, problem, estimator, budget, replicate, seed)."""
    return (record.get("study", ""), record["problem"], record["estimator"], int(record["budget"]),
            int(record["replicate"]), int(record["seed"]))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def dumps(record: dict[str, Any]) -> str:
    """One store line (no newline); NaN/inf are written as JSON's NaN/Infinity extensions."""
    return json.dumps(record, default=_json_default, allow_nan=True, separators=(",", ":"))


class RunStore:
    """Append-only JSON-lines store of run records, flushed (and fsync'ed) after every record.

    Parameters
    ----------
    path : str or Path
        The ``runs.jsonl`` file; created if missing.  A trailing partial line (a write cut short by
        a kill) is removed when the store is opened.
    fsync : bool
        Call ``os.fsync`` after each record (survives a machine crash, not only a killed process).
    """

    def __init__(self, path: str | Path, *, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        self._repair()
        self._fh = self.path.open("a", encoding="utf-8")

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(cut)

    def append(self, record: dict[str, Any]) -> None:
        """Write one run record as a JSON line and flush it (and ``fsync`` it when the store was opened so)."""
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file (idempotent)."""
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def records(self) -> list[dict[str, Any]]:
        """The records written so far, read back from the file (see :func:`read_records`)."""
        return list(read_records(self.path))


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a store file; a final line without newline (cut by a kill) is skipped."""
    path = Path(path)
    if not path.exists():
        return
    with path.open("r", encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                return  # the partial last line of a killed writer
            raise ValueError(f"{path}: line {i + 1} is not valid JSON; the run store is corrupt") from None


def versions() -> dict[str, str]:
    """Versions of Python, mcsa and the numeric libraries (torch only if already imported)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("mcsa", "numpy", "numba", "scipy", "joblib"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if "torch" in sys.modules:
        out["torch"] = getattr(sys.modules["torch"], "__version__", "?")
    return out


def now() -> str:
    """The current UTC time as an ISO-8601 string with seconds, as stored in manifests and locks."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` to a temporary file beside ``path`` and rename it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=_json_default, allow_nan=True))
    os.replace(tmp, path)


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The manifest of output folder ``out``, or None when it has none.

    Raises
    ------
    OutputDirError
        If the manifest is unreadable or is not an mcsa manifest.
    """
    path = out / MANIFEST
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise OutputDirError(f"{path} is unreadable ({exc}); pass --force to start over") from None
    if not isinstance(doc, dict) or "suite" not in doc:
        raise OutputDirError(f"{path} is not an mcsa manifest; choose another folder or pass --force")
    return doc


def check_study_folder(folder: Path, written_by: str) -> None:
    """Refuse a study folder to read that does not exist or is a file (ValueError: ``FOLDER does not exist (a study
    folder written by WRITTEN_BY)``), before a reader looks for the files a study leaves in it."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{folder} {what} (a study folder written by {written_by})")


def prepare_output_dir(out: str | Path, *, suite: str, seed: int, resume: bool = False,
                       force: bool = False) -> tuple[Path, dict[str, Any] | None]:
    """Check (and create) an output folder before any run starts.

    Rules: an existing non-directory, a path that cannot be created or written, a folder holding a
    study of another suite or seed, and a non-empty folder without a manifest are errors unless
    ``force``; a folder holding this study (complete or not) needs ``resume`` (continue, repeating
    no finished run) or ``force`` (start over).  ``force`` deletes the previous study's files (those
    its manifest lists, and the run store) but never files the harness did not write.

    Returns
    -------
    (Path, dict or None)
        The folder and the previous manifest when resuming.

    Raises
    ------
    OutputDirError
        With a message saying what is wrong and which flag proceeds.
    """
    if resume and force:
        raise OutputDirError("--resume and --force exclude each other")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out} exists and is not a directory; give a folder for the results")
    previous = None
    if out.is_dir():
        try:
            previous = read_manifest(out)
        except OutputDirError:
            if not force:
                raise
        if previous is None and any(p.name != LOCK for p in out.iterdir()) and not force \
                and not (out / RUNS).exists():
            raise OutputDirError(f"{out} is not empty and holds no mcsa study; choose an empty or new folder "
                                 "(or pass --force to write into it anyway)")
        if previous is not None and not force:
            if previous.get("suite") != suite or int(previous.get("seed", -1)) != int(seed):
                raise OutputDirError(
                    f"{out} holds a study of suite {previous.get('suite')!r} with seed {previous.get('seed')}; "
                    f"choose another folder or pass --force to replace it")
            if not resume:
                state = previous.get("status", "incomplete")
                raise OutputDirError(f"{out} already holds a {state} run of suite {suite!r} (seed {seed}); pass "
                                     "--resume to continue it (finished runs are kept) or --force to start over")
        elif (out / RUNS).exists() and not resume and not force:
            raise OutputDirError(f"{out} holds a run store without a manifest; pass --resume or --force")
        if force:
            _remove_previous(out, previous)
            previous = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".mcsa-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise OutputDirError(f"cannot write to {out}: {exc.strerror or exc}") from None
    return out, previous if resume else None


def _remove_previous(out: Path, manifest: dict[str, Any] | None) -> None:
    names = {MANIFEST, RUNS, *SUMMARY_FILES}
    if manifest:
        names.update(str(f) for f in manifest.get("files", []))
    for name in names:
        path = out / name
        if path.parent == out and path.is_file():
            path.unlink()


def move_into_place(tmp_dir: Path, out: Path, stale: list[str]) -> list[str]:
    """Move every file of ``tmp_dir`` into ``out`` (rename, atomic per file), delete ``stale`` files
    of an earlier study that were not rewritten, and remove ``tmp_dir``.  Returns the names moved."""
    moved = []
    for path in sorted(tmp_dir.iterdir()):
        os.replace(path, out / path.name)
        moved.append(path.name)
    for name in stale:
        path = out / name
        if name not in moved and path.parent == out and path.is_file() and name not in (MANIFEST, RUNS):
            path.unlink()
    shutil.rmtree(tmp_dir, ignore_errors=True)
    return moved


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux ``/proc/<pid>/stat`` field 22), to tell a live lock
    holder from a later process that reuses its pid; None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(holder: dict[str, Any]) -> bool:
    """Whether the process that wrote a lock is still running (on this host; another host's lock is
    taken to be alive; an unreadable lock, cut short while being written, is not)."""
    if not holder:
        return False
    if holder.get("host") != platform.node():
        return True
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        pass
    start = holder.get("process_start")
    return start is None or _process_start(pid) in (None, start)


class OutputLock:
    """An exclusive lock on a study's output folder: a ``.mcsa-lock`` file created atomically
    (``O_EXCL``) holding the pid, host and start time of the running process.

    A second run (or ``--resume``) on a locked folder is refused at once with
    :class:`OutputDirError` naming the holder; a lock left by a process that no longer runs (killed,
    crashed) is detected by its pid and taken over.  Use as a context manager; the lock file is
    removed on exit (also on Ctrl-C).

    Parameters
    ----------
    folder : str or Path
        The output folder (created if missing).
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK
        self._held = False

    def acquire(self) -> "OutputLock":
        """Take the lock (creating the folder); a stale lock of a dead process is taken over.

        Returns
        -------
        OutputLock
            ``self``.

        Raises
        ------
        OutputDirError
            If ``folder`` is not a writable directory or a live process holds the lock.
        """
        if self.folder.exists() and not self.folder.is_dir():
            raise OutputDirError(f"{self.folder} exists and is not a directory; give a folder for the results")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputDirError(f"cannot write to {self.folder}: {exc.strerror or exc}") from None
        me = {"pid": os.getpid(), "host": platform.node(), "process_start": _process_start(os.getpid()),
              "started": now(), "command": " ".join(sys.argv)}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and _alive(holder):
                    raise OutputDirError(
                        f"{self.folder} is in use by another mcsa run (pid {holder.get('pid')} on "
                        f"{holder.get('host')}, started {holder.get('started')}); wait for it to finish or stop "
                        f"it (a lock left by a killed run is taken over automatically)") from None
                self._take_over()
                continue
            except OSError as exc:
                raise OutputDirError(f"cannot write to {self.folder}: {exc.strerror or exc}") from None
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(me))
            self._held = True
            return self
        raise OutputDirError(f"{self.folder}: could not take the lock {self.path} (other runs keep racing for it)")

    def _holder(self) -> dict[str, Any] | None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # a lock cut short by a kill while being written: stale
            return {}
        return doc if isinstance(doc, dict) else {}

    def _take_over(self) -> None:
        """Remove a stale lock: renamed away first, so that of two processes taking it over at once
        only one removes it and both then race fairly on ``O_EXCL``."""
        stale = self.path.with_name(f"{LOCK}.stale-{os.getpid()}")
        try:
            os.replace(self.path, stale)
        except FileNotFoundError:
            return
        stale.unlink(missing_ok=True)

    def release(self) -> None:
        """Release the lock, removing the lock file if this process still holds it (idempotent)."""
        if self._held:
            self._held = False
            holder = self._holder()
            if holder and holder.get("pid") == os.getpid():
                self.path.unlink(missing_ok=True)

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
