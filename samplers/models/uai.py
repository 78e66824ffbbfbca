"""The UAI inference competitions' file formats (2008-2022): ``.uai`` models (MARKOV and BAYES),
``.evid`` evidence, ``.PR`` (log10 Z) and ``.MAR`` (marginals) answers -- read and write.

``.uai``
    The preamble ``MARKOV`` or ``BAYES``, the number of variables, their cardinalities, the number
    of factors, one scope line per factor (``arity v_1 ... v_arity``), then per factor the number of
    table entries followed by the entries: **linear-space** values with the **last** scope variable
    varying fastest.  In a BAYES network every factor is a conditional probability table whose child
    is the **last** scope variable (each variable is the child of exactly one table, and the table
    sums to 1 over the child).  Arity-0 factors are constants and are kept.
``.evid``
    The 2014+ single line ``n v_1 s_1 ... v_n s_n``, or the older multi-sample form: the number of
    samples, then per sample ``n`` and the pairs.
``.PR``
    ``PR`` then ``log10 Z`` (of the model with its evidence).
``.MAR``
    ``MAR`` then the number of variables and, per variable, its cardinality and marginal.

Numbers may use exponent notation; lines whose first token is ``c`` are comments; any whitespace
separates tokens.  Older answer files with ``-BEGIN-`` blocks are read from their last block.
Errors name the file, the line and the token; binary files (NUL bytes) and files that are not
UTF-8 are refused naming the file.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .factor_graph import FactorGraph
from .mrf import PairwiseMRF

NETWORKS = ("MARKOV", "BAYES")
#: Tolerance of a BAYES table's sums over its child (printed probabilities are rounded).
CPT_TOLERANCE = 1e-3


class UAIFormatError(ValueError):
    """A file that does not follow the UAI format; the message names file, line and token."""


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """The text of ``path``, refusing directories, binary files and files that are not UTF-8 (naming the file)."""
    name = os.fspath(path)
    if os.path.isdir(name):
        raise UAIFormatError(f"{name}: is a directory, expected a {what}")
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such {what}") from None
    if b"\x00" in data:
        raise UAIFormatError(f"{name}: is a binary file (it holds NUL bytes), expected a {what} in text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UAIFormatError(f"{name}: is not a UTF-8 / ASCII text file (byte {err.start} cannot be decoded), "
                             f"expected a {what}") from None


class _Tokens:
    """Whitespace tokens of a text with their line numbers (comment lines dropped)."""

    def __init__(self, text: str, source: str):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self.source = source
        self.tok: list[str] = []
        self.line: list[int] = []
        for number, ln in enumerate(text.splitlines(), 1):
            parts = ln.split()
            if parts and parts[0] == "c":
                continue
            self.tok += parts
            self.line += [number] * len(parts)
        self.pos = 0

    def error(self, message: str, at: int | None = None) -> UAIFormatError:
        at = self.pos - 1 if at is None else at
        if 0 <= at < len(self.tok):
            return UAIFormatError(f"{self.source}: line {self.line[at]}: {message} (token {self.tok[at]!r})")
        return UAIFormatError(f"{self.source}: {message}")

    def take(self, what: str) -> str:
        if self.pos >= len(self.tok):
            raise UAIFormatError(f"{self.source}: file ends early, expected {what}")
        self.pos += 1
        return self.tok[self.pos - 1]

    def take_int(self, what: str, low: int = 0, high: int | None = None) -> int:
        t = self.take(what)
        try:
            v = int(t)
        except ValueError:
            raise self.error(f"expected an integer for {what}") from None
        if v < low or (high is not None and v > high):
            bound = f">= {low}" if high is None else f"in {low}..{high}"
            raise self.error(f"{what} must be {bound}, got {v}")
        return v

    def take_floats(self, count: int, what: str) -> np.ndarray:
        if self.pos + count > len(self.tok):
            raise UAIFormatError(f"{self.source}: file ends early, expected {count} numbers for {what}")
        chunk = self.tok[self.pos:self.pos + count]
        try:
            values = np.array(chunk, dtype=np.float64)
        except ValueError:
            bad = next(j for j, t in enumerate(chunk) if not _is_float(t))
            raise self.error(f"entry {bad} of {what} is not a number", at=self.pos + bad) from None
        self.pos += count
        return values

    def done(self) -> None:
        if self.pos != len(self.tok):
            raise self.error(f"{len(self.tok) - self.pos} unexpected tokens after the end", at=self.pos)


def _is_float(t: str) -> bool:
    try:
        float(t)
    except ValueError:
        return False
    return True


# -- .uai ------------------------------------------------------------------------------------------
def parse_uai(text: str, source: str = "<string>") -> FactorGraph:
    """Parse the text of a ``.uai`` file (MARKOV or BAYES, see the module docstring).

    Returns
    -------
    FactorGraph
        Log tables (``log 0 = -inf``), constant factors kept; a BAYES network's ``log Z`` is 0.

    Raises
    ------
    UAIFormatError
        Malformed or truncated files, negative / non-finite entries, a BAYES table that is not a
        conditional probability table; the message names ``source``, the line and the token.
    """
    tk = _Tokens(text, source)
    network = tk.take("the preamble (MARKOV or BAYES)").upper()
    if network not in NETWORKS:
        raise tk.error("the preamble must be MARKOV or BAYES")
    n_vars = tk.take_int("the number of variables", 1)
    cards = [tk.take_int(f"the cardinality of variable {i}", 1) for i in range(n_vars)]
    scopes = _take_scopes(tk, n_vars)
    tables = [_take_table(tk, f, scope, cards, bayes=network == "BAYES") for f, scope in enumerate(scopes)]
    tk.done()
    if network == "BAYES":
        children = [sc[-1] for sc in scopes if sc]
        missing = sorted(set(range(n_vars)) - set(children))
        if missing or len(children) != len(set(children)):
            raise UAIFormatError(f"{source}: a BAYES network needs one table per variable (the child is the last "
                                 f"scope variable); variables without a table: {missing[:10]}")
    return FactorGraph(np.array(cards, dtype=np.int64), scopes, tables)


def _take_scopes(tk: _Tokens, n_vars: int) -> list[tuple[int, ...]]:
    """The factor count and each factor's scope (arity, then its distinct variables)."""
    n_factors = tk.take_int("the number of factors")
    scopes = []
    for f in range(n_factors):
        arity = tk.take_int(f"the arity of factor {f}", 0, n_vars)
        scope = tuple(tk.take_int(f"variable {j} of factor {f}", 0, n_vars - 1) for j in range(arity))
        if len(set(scope)) != arity:
            raise tk.error(f"factor {f} names a variable twice: {scope}")
        scopes.append(scope)
    return scopes


def _take_table(tk: _Tokens, f: int, scope: tuple, cards: list, *, bayes: bool) -> np.ndarray:
    """Factor ``f``'s log table (entries finite and >= 0; a BAYES table also a conditional probability table)."""
    expected = math.prod(cards[v] for v in scope)
    n_entries = tk.take_int(f"the number of entries of factor {f}")
    if n_entries != expected:
        raise tk.error(f"factor {f} over variables {scope} must have {expected} entries, got {n_entries}")
    start = tk.pos
    values = tk.take_floats(n_entries, f"factor {f}")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise tk.error(f"entry {j} of factor {f} must be finite and >= 0", at=start + j)
    if bayes:
        _check_cpt(tk, f, scope, cards, values, start)
    with np.errstate(divide="ignore"):
        return np.log(values)


def _check_cpt(tk: _Tokens, f: int, scope: tuple, cards: list, values: np.ndarray, start: int) -> None:
    if not scope:
        raise tk.error(f"factor {f} of a BAYES network has no child (arity 0)", at=start)
    sums = values.reshape(-1, cards[scope[-1]]).sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1.0) > CPT_TOLERANCE)
    if off.size:
        r = int(off[0])
        raise tk.error(f"factor {f} of a BAYES network must sum to 1 over its child (variable {scope[-1]}), but "
                       f"row {r} sums to {sums[r]:.6g}", at=start + r * cards[scope[-1]])


def read_uai(path: str | os.PathLike) -> FactorGraph:
    """Read a ``.uai`` model file (:func:`parse_uai`).

    Examples
    --------
    >>> import tempfile, os
    >>> from samplers.models import FactorGraph, ising_grid
    >>> fg = FactorGraph.from_pairwise(ising_grid(2, 2, coupling=0.3))
    >>> path = os.path.join(tempfile.mkdtemp(), "ising.uai")
    >>> write_uai(fg, path)
    >>> abs(read_uai(path).log_partition_exact() - fg.log_partition_exact()) < 1e-12
    True
    """
    return parse_uai(read_text(path, "UAI model file"), source=os.fspath(path))


def format_uai(graph: FactorGraph | PairwiseMRF, network: str = "MARKOV") -> str:
    """The ``.uai`` text of ``graph`` (entries ``exp(log value)`` with 17 significant digits); a
    :class:`~samplers.models.PairwiseMRF` is written as its factor graph (:meth:`FactorGraph.from_pairwise`).

    Raises
    ------
    ValueError
        Log values above 709 (``exp`` overflows the linear-space format), or ``network="BAYES"`` for a
        graph whose factors are not conditional probability tables with distinct children.
    """
    if isinstance(graph, PairwiseMRF):
        graph = FactorGraph.from_pairwise(graph)
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"graph must be a FactorGraph or PairwiseMRF, got {type(graph).__name__}")
    if network not in NETWORKS:
        raise ValueError(f"network must be one of {NETWORKS}, got {network!r}")
    lines = [network, str(graph.n_vars), " ".join(str(int(c)) for c in graph.cards), str(graph.n_factors)]
    lines += [" ".join(str(x) for x in (len(sc), *sc)) for sc in graph.scopes]
    lines.append("")
    for f, (sc, tab) in enumerate(zip(graph.scopes, graph.log_tables)):
        if np.max(tab, initial=-np.inf) > 709:
            raise ValueError(f"factor {f} has log values above 709, whose exp overflows the linear-space .uai format")
        values = np.exp(tab).reshape(-1, tab.shape[-1] if sc else 1)
        if network == "BAYES" and (not sc or np.any(np.abs(values.sum(axis=1) - 1) > CPT_TOLERANCE)):
            raise ValueError(f"network='BAYES' needs conditional probability tables: factor {f} (scope {sc}) does "
                             "not sum to 1 over its last scope variable")
        lines.append(str(tab.size))
        lines += [" ".join(f"{x:.17g}" for x in row) for row in values]
        lines.append("")
    if network == "BAYES":
        children = [sc[-1] for sc in graph.scopes]
        if sorted(children) != list(range(graph.n_vars)):
            raise ValueError("network='BAYES' needs exactly one table per variable (its child, the last scope "
                             "variable)")
    return "\n".join(lines)


def write_uai(graph: FactorGraph | PairwiseMRF, path: str | os.PathLike, network: str = "MARKOV") -> None:
    """Write ``graph`` as a ``.uai`` file (:func:`format_uai`)."""
    text = format_uai(graph, network)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


# -- .evid -----------------------------------------------------------------------------------------
def parse_evid(text: str, source: str = "<string>") -> list[dict]:
    """Evidence samples of an ``.evid`` text: a list of ``{variable: state}`` dicts (one for the
    2014+ single-line form; an empty file or ``0`` is one empty sample)."""
    tk = _Tokens(text, source)
    if not tk.tok:
        return [{}]
    try:
        first = int(tk.tok[0])
    except ValueError:
        raise tk.error("expected the number of evidence variables (or of samples)", at=0) from None
    single = len(tk.tok) == 1 + 2 * first and len(set(tk.line)) <= 1

    def pairs() -> dict:
        n = tk.take_int("the number of evidence variables")
        ev: dict = {}
        for _ in range(n):
            v = tk.take_int("an evidence variable")
            s = tk.take_int(f"the state of evidence variable {v}")
            if v in ev:
                raise tk.error(f"variable {v} is observed twice")
            ev[v] = s
        return ev

    if single:
        samples = [pairs()]
    else:
        m = tk.take_int("the number of evidence samples")
        samples = [pairs() for _ in range(m)]
    tk.done()
    return samples


def read_evid(path: str | os.PathLike) -> list[dict]:
    """Read an ``.evid`` file (:func:`parse_evid`)."""
    return parse_evid(read_text(path, "UAI evidence file"), source=os.fspath(path))


def check_evidence(graph: FactorGraph, evidence: dict, source: str) -> None:
    """Raise :class:`UAIFormatError` naming ``source`` when ``evidence`` does not fit ``graph``."""
    for v, s in evidence.items():
        if not 0 <= v < graph.n_vars:
            raise UAIFormatError(f"{source}: evidence names variable {v}, but the model has {graph.n_vars} variables")
        if not 0 <= s < graph.cards[v]:
            raise UAIFormatError(f"{source}: evidence sets variable {v} to state {s}, but it has "
                                 f"{int(graph.cards[v])} states")


def write_evid(path: str | os.PathLike, evidence: dict, *, multi_sample: bool = False) -> None:
    """Write one evidence sample: the 2014+ single line, or the older form with a sample count."""
    body = " ".join([str(len(evidence))] + [f"{int(v)} {int(s)}" for v, s in sorted(evidence.items())])
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"1\n{body}\n" if multi_sample else f"{body}\n")


# -- .PR / .MAR ------------------------------------------------------------------------------------
def _answer_tokens(text: str, source: str, header: str) -> _Tokens:
    tk = _Tokens(text, source)
    got = tk.take(f"the header {header}")
    if got.upper() != header:
        raise tk.error(f"a .{header} file starts with {header!r}")
    if "-BEGIN-" in tk.tok:  # older answer files: take the last block
        tk.pos = len(tk.tok) - tk.tok[::-1].index("-BEGIN-")
        if header == "PR" and len(tk.tok) - tk.pos == 2:
            tk.take("the number of evidence samples of the block")
    return tk


def parse_pr(text: str, source: str = "<string>") -> float:
    """``ln Z`` from the text of a ``.PR`` file (which holds ``log10 Z``)."""
    tk = _answer_tokens(text, source, "PR")
    value = tk.take_floats(1, "log10 Z")[0]
    tk.done()
    if np.isnan(value) or value == np.inf:
        raise tk.error("log10 Z must be a number or -inf")
    return float(value) * math.log(10)


def read_pr(path: str | os.PathLike) -> float:
    """Read a ``.PR`` answer file and return the natural log ``ln Z`` (the file holds ``log10 Z``)."""
    return parse_pr(read_text(path, "UAI .PR answer file"), source=os.fspath(path))


def format_pr(log_partition: float) -> str:
    """``.PR`` text of ``ln Z``: ``PR`` then ``log10 Z`` with 17 significant digits."""
    value = float(log_partition)
    if np.isnan(value) or value == np.inf:
        raise ValueError(f"log_partition must be a number or -inf (Z = 0), got {log_partition}")
    return f"PR\n{value / math.log(10):.17g}\n"


def write_pr(path: str | os.PathLike, log_partition: float) -> None:
    """Write a ``.PR`` answer file (:func:`format_pr`)."""
    text = format_pr(log_partition)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def parse_mar(text: str, source: str = "<string>") -> list[np.ndarray]:
    """Marginals of a ``.MAR`` text: ``marginals[v]`` of shape ``(cards[v],)``."""
    tk = _answer_tokens(text, source, "MAR")
    n_vars = tk.take_int("the number of variables", 1)
    out = []
    for v in range(n_vars):
        k = tk.take_int(f"the cardinality of variable {v}", 1)
        start = tk.pos
        p = tk.take_floats(k, f"the marginal of variable {v}")
        if np.any(~np.isfinite(p) | (p < 0)):
            raise tk.error(f"the marginal of variable {v} must hold finite probabilities >= 0", at=start)
        out.append(p)
    tk.done()
    return out


def read_mar(path: str | os.PathLike) -> list[np.ndarray]:
    """Read a ``.MAR`` answer file (:func:`parse_mar`)."""
    return parse_mar(read_text(path, "UAI .MAR answer file"), source=os.fspath(path))


def format_mar(marginals: Any, cards: Any) -> str:
    """``.MAR`` text of marginals ``(n_vars, K)`` (zero-padded rows are cut at ``cards[v]``)."""
    cards = np.asarray(cards, dtype=np.int64)
    parts = ["MAR", str(cards.size)]
    for v, k in enumerate(cards):
        parts.append(" ".join([str(int(k))] + [f"{x:.17g}" for x in np.asarray(marginals[v])[:k]]))
    return parts[0] + "\n" + " ".join(parts[1:]) + "\n"


def write_mar(path: str | os.PathLike, marginals: Any, cards: Any) -> None:
    """Write a ``.MAR`` answer file (:func:`format_mar`)."""
    text = format_mar(marginals, cards)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
