"""The one input layer for text files and streams, and the one safe way to write a result late.

Every command that reads text (``mcsa trf train | eval | score``, ``mcsa ngram train | eval``, word lists)
reads it through :func:`iter_lines` or :func:`read_lines`, so every input gets the same treatment:

* the encoding is checked up front (:func:`check_encoding`): an unknown name is a ``ValueError`` naming
  ``--encoding``, not a ``LookupError`` traceback;
* lines end at ``"\\n"`` only (a trailing ``"\\r"`` of a Windows line end is dropped): a Unicode line or
  paragraph separator, a form feed or a vertical tab inside a line does *not* split it, so a tool that
  writes one output line per input line stays aligned with its input (``str.splitlines`` splits at all of
  them);
* bytes that are not valid in the encoding are refused naming the source, the line and ``--encoding``;
* a NUL character is refused: a file holding one is binary data, not text (a UTF-16 file read as UTF-8
  shows as NULs, so the message suggests the encoding);
* an empty source is refused.

:func:`write_text` writes a computed result at the end of a command; if the write fails (a full disk, a
folder removed meanwhile) the result is printed in full on stdout and written to a fallback file whose path
the error message names, so no computed number is lost.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, TextIO, cast

__all__ = ["ENCODING_HINT", "atomic_write", "check_encoding", "check_text_file", "iter_lines", "read_lines",
           "split_lines", "write_text", "write_with_fallback"]

#: How every message about encodings tells the user what to change (the Python argument and the CLI flag).
ENCODING_HINT = "pass the file's encoding (encoding= / --encoding, e.g. latin-1 or utf-16)"


def check_encoding(encoding: str) -> str:
    """Return ``encoding`` if Python knows it as a text encoding; else raise ``ValueError`` naming ``--encoding``.

    Parameters
    ----------
    encoding : str
        A codec name such as ``"utf-8"``, ``"latin-1"`` or ``"utf-16"``.

    Raises
    ------
    ValueError
        Unknown name, or a codec that does not decode bytes to text (``"rot13"``, ``"base64"``).
    """
    if not isinstance(encoding, str) or not encoding:
        raise ValueError(f"encoding (--encoding) must be a codec name such as 'utf-8', got {encoding!r}")
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"unknown text encoding {encoding!r} (encoding= / --encoding); use a Python codec "
                         "name such as utf-8, latin-1, cp1252 or utf-16") from None
    if not getattr(info, "_is_text_encoding", True):
        raise ValueError(f"{encoding!r} (encoding= / --encoding) is not a text encoding")
    return encoding


def _ascii_compatible(encoding: str) -> bool:
    """Whether ``"\\n"`` is the byte 0x0A in ``encoding`` (then lines can be split on bytes, keeping line numbers)."""
    return "a\n".encode(encoding).endswith(b"a\n")


def _check_line(line: str, number: int, source: str, encoding: str) -> str:
    if "\x00" in line:
        hint = "" if encoding.lower().replace("_", "-").startswith("utf-16") else (
            " (a UTF-16 file? pass --encoding utf-16)")
        raise ValueError(f"{source} line {number} holds a NUL character: it is binary data, not text{hint}")
    return line


def _strip_line_end(line: str) -> str:
    """``line`` without its ``"\\n"`` or ``"\\r\\n"``."""
    if line.endswith("\n"):
        line = line[:-1]
    return line[:-1] if line.endswith("\r") else line


def _decode_error(exc: UnicodeDecodeError, source: str, encoding: str, number: int | None,
                  raw: bytes = b"") -> ValueError:
    where = f" line {number}" if number is not None else ""
    if b"\x00" in raw:  # an archive, a program, a saved model: no encoding will make it text
        return ValueError(f"{source}{where} holds a NUL byte and bytes that are not valid {encoding}: it is binary "
                          "data, not text (a UTF-16 file? pass --encoding utf-16)")
    return ValueError(f"{source}{where} is not valid {encoding} text ({exc.reason} at byte {exc.start}); "
                      f"{ENCODING_HINT}")


def _iter_stream(stream: BinaryIO, source: str, encoding: str) -> Iterator[tuple[int, str]]:
    if _ascii_compatible(encoding):
        decoder = codecs.getincrementaldecoder(encoding)()
        number = 0
        for number, raw in enumerate(stream, start=1):
            try:
                line = decoder.decode(raw, final=False)
            except UnicodeDecodeError as exc:
                raise _decode_error(exc, source, encoding, number, raw) from None
            yield number, _check_line(_strip_line_end(line), number, source, encoding)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise _decode_error(exc, source, encoding, number) from None
        return
    try:
        text = stream.read().decode(encoding)
    except UnicodeDecodeError as exc:
        raise _decode_error(exc, source, encoding, None) from None
    for number, line in enumerate(split_lines(text), start=1):
        yield number, _check_line(line, number, source, encoding)


def split_lines(text: str) -> list[str]:
    """``text`` split at ``"\\n"`` only (not at ``\\u2028``, form feed, vertical tab, ...), one trailing end of
    line dropped: ``"a\\nb\\n"`` and ``"a\\nb"`` both give ``["a", "b"]``; ``"\\r"`` before ``"\\n"`` is removed."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [_strip_line_end(line) for line in lines]


def iter_lines(path, *, encoding: str = "utf-8", what: str = "file") -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` for each line of the text file ``path``, streaming, line ends removed.

    Parameters
    ----------
    path : str or Path
        A text file (``"-"`` is not special here; use :func:`read_lines` for stdin).
    encoding : str
        Text encoding (checked with :func:`check_encoding`).
    what : str
        How messages name the source, e.g. ``"corpus file"`` or ``"--train"``.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        ``path`` is a folder, unreadable or empty, its bytes are not valid ``encoding``, or a line holds a NUL
        character.
    """
    encoding = check_encoding(encoding)
    path = Path(path)
    source = f"{what} {str(path)!r}"
    if path.is_dir():
        raise ValueError(f"{source} is a directory, not a text file")
    if not path.exists():
        raise FileNotFoundError(f"{source} does not exist")
    try:
        handle = open(path, "rb")
    except OSError as exc:  # no permission, a special file ...
        raise ValueError(f"{source} cannot be read ({exc.strerror or exc})") from None
    with handle:
        first = handle.read(1)
        if not first:
            raise ValueError(f"{source} is empty")
        handle.seek(0)
        yield from _iter_stream(handle, source, encoding)


def check_text_file(path, flag: str, *, encoding: str = "utf-8") -> None:
    """Read the text file ``path`` once by the rules of :func:`iter_lines`, naming ``flag`` in any refusal.

    A command calls it on each text input before any compute, so a missing, empty, binary or wrongly encoded file
    is refused at once and by the flag that named it (``--test '/data/t.txt' is empty``); the library functions
    that read the file later name it as what it is to them (``corpus file '/data/t.txt'``).  One streaming pass
    over the bytes: milliseconds per megabyte.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`iter_lines`, with ``flag`` as the name of the source.
    """
    for _ in iter_lines(path, encoding=encoding, what=flag):
        pass


def read_lines(stream: BinaryIO | TextIO | None = None, *, encoding: str = "utf-8", what: str = "stdin") -> list[str]:
    """All lines of a stream (default: stdin), by the rules of :func:`iter_lines`.

    A binary stream (or a text stream with a ``buffer``, as ``sys.stdin``) is decoded with ``encoding``; a text
    stream without one (``io.StringIO``) is taken as already decoded.  Returns the lines without their line ends,
    one entry per input line (an empty stream gives ``[]``).
    """
    encoding = check_encoding(encoding)
    source = sys.stdin if stream is None else stream
    if isinstance(source, io.TextIOBase):
        buffer = getattr(source, "buffer", None)
        if buffer is None:
            return [_check_line(line, number, what, encoding)
                    for number, line in enumerate(split_lines(source.read()), start=1)]
        source = buffer
    # what is left is binary: a binary stream, or the byte buffer of a text one
    return [line for _, line in _iter_stream(cast(BinaryIO, source), what, encoding)]


def write_with_fallback(write: Callable[[Path], object], path, flag: str, *, what: str = "the result",
                        fallback_dir: str | os.PathLike | None = None, before_fallback: Callable[[], object] | None = None
                        ) -> Path:
    """Call ``write(path)``; if it fails with ``OSError`` (full disk, folder gone, no permission), call
    ``before_fallback`` (e.g. print the result), ``write`` to a fresh file in ``fallback_dir`` (default: the
    temporary folder) and raise a ``ValueError`` naming ``flag``, the reason and that fallback file.

    ``write`` must write the whole file at the path it is given (atomically, as :func:`trf.io.atomic_write_npz`
    and :func:`write_text` do).  Returns ``path`` when the first write succeeds.
    """
    target = Path(path)
    try:
        write(target)
        return target
    except OSError as exc:
        reason = exc.strerror or str(exc)
    if before_fallback is not None:
        before_fallback()
    kept = None
    try:
        fd, name = tempfile.mkstemp(prefix=f"mcsa-{target.stem}-", suffix=target.suffix or ".txt", dir=fallback_dir)
        os.close(fd)
        write(Path(name))
        kept = name
    except OSError:
        pass
    where = f"{what} is kept in {kept}" if kept else "no fallback file could be written either"
    raise ValueError(f"{flag} {str(path)!r}: the write failed ({reason}); {where}")


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(handle)`` on a temporary file in ``path``'s folder, flush it to disk and move it onto ``path``
    with ``os.replace``: readers see the old file or the whole new one, never half a file; on any failure the
    temporary file is removed and the error propagates.  Returns ``path`` as a ``Path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))


def write_text(path, text: str, flag: str, *, fallback_dir: str | os.PathLike | None = None, out=None) -> Path:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then ``os.replace``).

    If the write fails, ``text`` is printed in full on ``out`` (default stdout), written to a fallback file in
    ``fallback_dir`` (default: the temporary folder), and a ``ValueError`` names ``flag``, the reason and the
    fallback file (:func:`write_with_fallback`), so a result computed before the write is never lost.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    def show() -> None:
        stream = sys.stdout if out is None else out
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()

    return write_with_fallback(lambda target: _atomic_write_text(target, text), path, flag,
                               what="the result (printed above)", fallback_dir=fallback_dir, before_fallback=show)
