"""Reader and writer of the UAI inference competition's ``.uai`` model files (MARKOV networks with
unary and pairwise factors) and of its ``.PR`` answer files.

The ``.uai`` format (UAI 2008-2022 competitions): the preamble ``MARKOV``, the number of variables,
their cardinalities, the number of factors, one scope line per factor (``arity v_1 ... v_arity``),
then per factor the number of table entries followed by the entries, **linear-space** values with
the **last** scope variable varying fastest.  A ``.PR`` file holds ``PR`` then ``log10 Z``.

Reading gives a :class:`~samplers.models.PairwiseMRF` (several unary factors on one variable are
multiplied; each pairwise factor becomes one edge) plus the log of the product of constant (arity 0)
factors; factors of arity above two, zero entries (hard constraints, ``log 0``) and ``BAYES``
networks are refused with a clear error.
"""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

import numpy as np

from .mrf import PairwiseMRF


class UAIModel(NamedTuple):
    """A model read from a ``.uai`` file: ``log Z(file) = mrf.log_partition_exact() + log_constant``."""

    mrf: PairwiseMRF
    log_constant: float


def _tokens(text: str) -> list[str]:
    lines = [ln.split("c ", 1)[0] if ln.startswith("c ") else ln for ln in text.splitlines()]
    return " ".join(lines).split()


def parse_uai(text: str, source: str = "<string>") -> UAIModel:
    """Parse the text of a ``.uai`` MARKOV file (see the module docstring).

    Raises
    ------
    ValueError
        Malformed or truncated files, a ``BAYES`` preamble, factors of arity above 2, zero or
        negative or non-finite table entries; the message names ``source`` and the factor.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tok = _tokens(text)
    pos = 0

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tok):
            raise ValueError(f"{source}: file ends early, expected {what}")
        pos += 1
        return tok[pos - 1]

    def take_int(what: str, low: int = 0) -> int:
        t = take(what)
        try:
            v = int(t)
        except ValueError:
            raise ValueError(f"{source}: expected an integer for {what}, got {t!r}") from None
        if v < low:
            raise ValueError(f"{source}: {what} must be >= {low}, got {v}")
        return v

    kind = take("the preamble (MARKOV)").upper()
    if kind != "MARKOV":
        raise ValueError(f"{source}: only MARKOV networks are supported, got preamble {kind!r}")
    n_vars = take_int("the number of variables", 1)
    cards = np.array([take_int(f"the cardinality of variable {i}", 1) for i in range(n_vars)], dtype=np.int64)
    n_factors = take_int("the number of factors")
    scopes = []
    for f in range(n_factors):
        arity = take_int(f"the arity of factor {f}")
        if arity > 2:
            raise ValueError(f"{source}: factor {f} has arity {arity}; only unary and pairwise factors are "
                             "supported (PairwiseMRF)")
        scope = [take_int(f"variable {j} of factor {f}") for j in range(arity)]
        for v in scope:
            if v >= n_vars:
                raise ValueError(f"{source}: factor {f} names variable {v}, but there are {n_vars} variables")
        if arity == 2 and scope[0] == scope[1]:
            raise ValueError(f"{source}: factor {f} has the same variable {scope[0]} twice")
        scopes.append(scope)
    k_max = int(cards.max())
    unary = np.zeros((n_vars, k_max))
    edges, pairwise = [], []
    log_constant = 0.0
    for f, scope in enumerate(scopes):
        n_entries = take_int(f"the number of entries of factor {f}")
        expected = math.prod(int(cards[v]) for v in scope)
        if n_entries != expected:
            raise ValueError(f"{source}: factor {f} over variables {scope} must have {expected} entries, "
                             f"got {n_entries}")
        vals = []
        for j in range(n_entries):
            t = take(f"entry {j} of factor {f}")
            try:
                vals.append(float(t))
            except ValueError:
                raise ValueError(f"{source}: entry {j} of factor {f} is not a number: {t!r}") from None
        table = np.array(vals)
        if not np.all(np.isfinite(table)) or np.any(table <= 0):
            bad = int(np.flatnonzero(~np.isfinite(table) | (table <= 0))[0])
            raise ValueError(f"{source}: entry {bad} of factor {f} is {table[bad]}; PairwiseMRF needs finite "
                             "positive factor entries (zero entries are hard constraints, not supported)")
        logt = np.log(table)
        if len(scope) == 0:
            log_constant += float(logt[0])
        elif len(scope) == 1:
            unary[scope[0], :cards[scope[0]]] += logt
        else:
            u, v = scope
            pot = np.zeros((k_max, k_max))
            pot[:cards[u], :cards[v]] = logt.reshape(cards[u], cards[v])
            edges.append((u, v))
            pairwise.append(pot)
    if pos != len(tok):
        raise ValueError(f"{source}: {len(tok) - pos} unexpected tokens after the last factor table")
    mrf = PairwiseMRF(unary, np.array(edges, dtype=np.int64).reshape(-1, 2),
                      np.array(pairwise).reshape(-1, k_max, k_max), n_states=cards)
    return UAIModel(mrf, log_constant)


def read_uai(path: str | os.PathLike) -> UAIModel:
    """Read a ``.uai`` MARKOV file with unary and pairwise factors (:func:`parse_uai`).

    Examples
    --------
    >>> import tempfile, os
    >>> from samplers.models import ising_grid
    >>> mrf = ising_grid(2, 2, coupling=0.3)
    >>> path = os.path.join(tempfile.mkdtemp(), "ising.uai")
    >>> write_uai(mrf, path)
    >>> back = read_uai(path)
    >>> abs(back.mrf.log_partition_exact() + back.log_constant - mrf.log_partition_exact()) < 1e-12
    True
    """
    with open(path, encoding="utf-8") as fh:
        return parse_uai(fh.read(), source=os.fspath(path))


def format_uai(mrf: PairwiseMRF, log_constant: float = 0.0) -> str:
    """The ``.uai`` text of ``mrf``: one unary factor per variable, one pairwise factor per edge,
    and a constant factor ``exp(log_constant)`` when it is non-zero; entries with 17 significant digits."""
    if not isinstance(mrf, PairwiseMRF):
        raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
    if not np.isfinite(log_constant):
        raise ValueError(f"log_constant must be finite, got {log_constant}")
    cards = mrf.n_states
    lines = ["MARKOV", str(mrf.n_vars), " ".join(str(int(c)) for c in cards)]
    n_factors = mrf.n_vars + mrf.n_edges + (1 if log_constant != 0.0 else 0)
    lines.append(str(n_factors))
    lines += [f"1 {i}" for i in range(mrf.n_vars)]
    lines += [f"2 {int(u)} {int(v)}" for u, v in mrf.edges]
    if log_constant != 0.0:
        lines.append("0")
    lines.append("")

    def table(values: np.ndarray) -> list[str]:
        return [str(values.size), " ".join(f"{x:.17g}" for x in np.exp(values.ravel())), ""]

    for i in range(mrf.n_vars):
        lines += table(mrf.unary[i, :cards[i]])
    for e, (u, v) in enumerate(mrf.edges):
        lines += table(mrf.pairwise[e, :cards[u], :cards[v]])
    if log_constant != 0.0:
        lines += table(np.array([log_constant]))
    return "\n".join(lines)


def write_uai(mrf: PairwiseMRF, path: str | os.PathLike, log_constant: float = 0.0) -> None:
    """Write ``mrf`` as a ``.uai`` MARKOV file (:func:`format_uai`).

    Potentials are written as ``exp(log potential)``, so log potentials above about 709 overflow:
    they raise a ``ValueError`` rather than writing ``inf``.
    """
    if np.max(mrf.unary, initial=0.0) > 700 or np.max(mrf.pairwise, initial=0.0) > 700 or log_constant > 700:
        raise ValueError("mrf has log potentials above 700, whose exp overflows the linear-space .uai format")
    text = format_uai(mrf, log_constant)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_pr(path: str | os.PathLike, log_partition: float) -> None:
    """Write a ``.PR`` answer file: ``PR`` then ``log10 Z`` (the competition's convention)."""
    value = float(log_partition)
    if not np.isfinite(value):
        raise ValueError(f"log_partition must be finite, got {log_partition}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"PR\n{value / math.log(10):.17g}\n")


def read_pr(path: str | os.PathLike) -> float:
    """Read a ``.PR`` answer file and return the natural log ``ln Z`` (the file holds ``log10 Z``).

    Raises
    ------
    ValueError
        When the file does not start with ``PR`` followed by one number.
    """
    with open(path, encoding="utf-8") as fh:
        tok = fh.read().split()
    if len(tok) < 2 or tok[0].upper() != "PR":
        raise ValueError(f"{os.fspath(path)}: a .PR file holds 'PR' then log10 Z, got {' '.join(tok[:3])!r}")
    try:
        value = float(tok[-1])
    except ValueError:
        raise ValueError(f"{os.fspath(path)}: log10 Z must be a number, got {tok[-1]!r}") from None
    return value * math.log(10)


def uai_answer(model: UAIModel, **options: Any) -> float:
    """Exact ``ln Z`` of a model read from a ``.uai`` file (``mrf.log_partition_exact`` + constant)."""
    return model.mrf.log_partition_exact(**options) + model.log_constant
