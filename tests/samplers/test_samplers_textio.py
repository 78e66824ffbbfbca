"""The input layer (samplers.textio): line splitting, encodings, binary and empty input, late-write fallbacks."""

import io
import os

import pytest

from samplers.argtypes import flags_for
from samplers.textio import check_encoding, iter_lines, read_lines, split_lines, write_text, write_with_fallback

ODD_SEPARATORS = "one\u2028two\u2029three\x0cfour\x0bfive\x1csix\x85seven"


def test_lines_split_at_newline_only_and_crlf_is_one_line_end():
    assert split_lines(ODD_SEPARATORS + "\nnext\n") == [ODD_SEPARATORS, "next"]
    assert ODD_SEPARATORS.splitlines() != [ODD_SEPARATORS]  # what str.splitlines would have done
    assert read_lines(io.BytesIO(b"a b\r\nc\r\n\nd")) == ["a b", "c", "", "d"]
    assert read_lines(io.BytesIO((ODD_SEPARATORS + "\n").encode())) == [ODD_SEPARATORS]
    assert read_lines(io.StringIO("x\u2028y\n")) == ["x\u2028y"]
    assert read_lines(io.BytesIO(b"")) == []


def test_other_encodings_round_trip(tmp_path):
    text = "caf\u00e9 na\u00efve\n\u00fcber\n"
    for encoding in ("latin-1", "utf-16", "utf-8-sig", "cp1252"):
        path = tmp_path / f"{encoding}.txt"
        path.write_bytes(text.encode(encoding))
        assert [line for _, line in iter_lines(path, encoding=encoding)] == ["caf\u00e9 na\u00efve", "\u00fcber"]


@pytest.mark.parametrize("name", ["bogus-enc", "", "rot13"])
def test_an_unknown_encoding_is_refused_naming_the_flag(name):
    with pytest.raises(ValueError, match="--encoding"):
        check_encoding(name)


def test_bad_files_are_refused_naming_the_file_and_line(tmp_path):
    nul = tmp_path / "nul.bin"
    nul.write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match=r"'.*nul.bin' line 1 holds a NUL character: it is binary data"):
        list(iter_lines(nul, what="--train"))
    for name, head in (("model.npz", b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\x9a"), ("a.out", b"\x7fELF\x02\x01\x01\x00\xff")):
        binary = tmp_path / name  # a zip (a saved model) or a program: binary, not a text in another encoding
        binary.write_bytes(head + b"\n")
        with pytest.raises(ValueError, match=rf"--test '.*{name}' line 1 holds a NUL byte and bytes that are not valid "
                                             "utf-8: it is binary data, not text"):
            list(iter_lines(binary, what="--test"))
    utf16 = tmp_path / "u16.txt"
    utf16.write_bytes("hello world\n".encode("utf-16-le"))
    with pytest.raises(ValueError, match="--encoding utf-16"):
        list(iter_lines(utf16))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"fine\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"--test '.*latin.txt' line 2 is not valid utf-8 text .*--encoding"):
        list(iter_lines(latin, what="--test"))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="is empty"):
        list(iter_lines(empty))
    with pytest.raises(ValueError, match="is a directory"):
        list(iter_lines(tmp_path))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(iter_lines(tmp_path / "missing.txt"))


def test_a_failed_late_write_prints_the_result_and_names_a_fallback(tmp_path):
    printed = io.StringIO()
    full = tmp_path / "gone" / "result.json"  # its folder does not exist: the write fails
    with pytest.raises(ValueError, match=r"--json '.*result.json': the write failed .* kept in (\S+)") as info:
        write_text(full, '{"perplexity": 12.5}', "--json", fallback_dir=tmp_path, out=printed)
    assert printed.getvalue() == '{"perplexity": 12.5}\n'
    fallback = str(info.value).rsplit("kept in ", 1)[1]
    assert os.path.dirname(fallback) == str(tmp_path)
    with open(fallback) as handle:
        assert handle.read() == '{"perplexity": 12.5}'
    assert write_text(tmp_path / "ok.json", "{}", "--json") == tmp_path / "ok.json"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_keeps_the_model_in_the_fallback_file(tmp_path):
    def save(path):
        # the first write goes to a full device; the fallback is an ordinary file
        with open("/dev/full" if path.name == "model.npz" else path, "wb") as handle:
            handle.write(b"model bytes")
            handle.flush()

    with pytest.raises(ValueError, match=r"--out '.*model.npz': the write failed \(No space left on device\); "
                                         r"the model is kept in "):
        write_with_fallback(save, tmp_path / "model.npz", "--out", what="the model", fallback_dir=tmp_path)


def test_library_errors_are_reported_with_the_flag():
    with pytest.raises(ValueError, match=r"^--classes must be <= the vocabulary size"):
        with flags_for({"classes": "--classes"}):
            raise ValueError("classes must be <= the vocabulary size (5), got 200")
    with pytest.raises(ValueError, match=r"^other problem"):
        with flags_for({"classes": "--classes"}):
            raise ValueError("other problem")


def test_an_unreadable_file_is_a_clear_error(tmp_path, monkeypatch):
    import samplers.textio

    locked = tmp_path / "locked.txt"
    locked.write_text("words\n")

    def refuse(path, mode="r"):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(samplers.textio, "open", refuse, raising=False)  # as for a file without read permission
    with pytest.raises(ValueError, match=r"--train '.*locked.txt' cannot be read \(Permission denied\)"):
        list(iter_lines(locked, what="--train"))
