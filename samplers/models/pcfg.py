"""Weighted context-free grammars in Chomsky normal form, with log rule weights (the PCFG model).

A :class:`Grammar` holds binary rules ``A -> B C`` and lexical rules ``A -> 'w'`` with log weights
(rule probabilities for a PCFG, any positive weights otherwise: a *weighted* grammar;
:meth:`Grammar.unnormalised_nonterminals` tells the two apart).  Textbook grammars with unary rules
``A -> B``, mixed rules ``A -> 'a' B`` and long rules ``A -> B C D`` are converted to an equivalent
CNF grammar: long and mixed right-hand sides are binarised with weight-one helper symbols, and unary
chains are removed by the unary closure ``U = (I - W_unary)^{-1}`` (summing over all unary chains),
which preserves every sentence's total weight (:func:`samplers.models.chart.log_inside`) exactly, and
keeps a PCFG's rule probabilities normalised.

This is the grammar side of Bouchard-Cote, Petrov & Klein (2009), Sec. 2.1: the model whose
expected rule counts the (pruned) inside-outside algorithm computes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..rng import as_generator
from ..validation import check_float, check_int

_RULE_RE = re.compile(r"^\s*(?P<lhs>\S+)\s*->\s*(?P<rhs>.*?)\s*\[(?P<w>[^\]]*)\]\s*$")
_TOKEN_RE = re.compile(r"'([^']*)'|\"([^\"]*)\"|(\S+)")
#: Finite stand-in for an absent rule in dense score arrays (rdp needs finite scores; exp(-1e4) = 0 in float64).
MISSING_LOG_WEIGHT = -1e4
#: Largest |sum of a nonterminal's rule weights - 1| of a PCFG (conversions and projections keep sums to ~1e-12).
NORMALISATION_TOL = 1e-6


@dataclass(frozen=True)
class Grammar:
    """A weighted CNF grammar with log rule weights.

    Parameters
    ----------
    nonterminals : sequence of str
        Nonterminal names; index ``i`` of every array below refers to ``nonterminals[i]``.
    terminals : sequence of str
        The vocabulary.
    binary_rules : ndarray of int64, shape (R, 3)
        Rows ``(A, B, C)`` for rules ``A -> B C``, sorted by ``A``.
    binary_log_weights : ndarray of float64, shape (R,)
        Log weight of each binary rule (finite).
    lexical_log_weights : ndarray of float64, shape (N, V)
        ``log w(A -> terminal)``; ``-inf`` where there is no rule.
    start : int
        Index of the start symbol.

    Use :meth:`from_string`, :meth:`from_rules` or :meth:`random` rather than this constructor.
    """

    nonterminals: tuple
    terminals: tuple
    binary_rules: np.ndarray
    binary_log_weights: np.ndarray
    lexical_log_weights: np.ndarray
    start: int
    coarse_mapping: tuple | None = None
    # derived in __post_init__: rules of parent A are binary_rules[rule_offsets[A]:rule_offsets[A + 1]]
    rule_offsets: np.ndarray = field(init=False, repr=False, compare=False)
    _terminal_index: dict[str, int] = field(init=False, repr=False, compare=False)  # terminal -> column

    # -- construction ------------------------------------------------------------------------
    def __post_init__(self) -> None:
        rules = np.asarray(self.binary_rules, dtype=np.int64).reshape(-1, 3)
        logw = np.asarray(self.binary_log_weights, dtype=np.float64).reshape(-1)
        lex = np.asarray(self.lexical_log_weights, dtype=np.float64)
        n_nt = len(self.nonterminals)
        if n_nt == 0:
            raise ValueError("nonterminals must not be empty")
        if len(set(self.nonterminals)) != n_nt:
            raise ValueError("nonterminals must be unique")
        if len(set(self.terminals)) != len(self.terminals):
            raise ValueError("terminals must be unique")
        if rules.shape[0] != logw.shape[0]:
            raise ValueError(f"binary_log_weights must have one entry per binary rule ({rules.shape[0]}), "
                             f"got {logw.shape[0]}")
        if rules.size and (rules.min() < 0 or rules.max() >= n_nt):
            raise ValueError(f"binary_rules must index nonterminals in [0, {n_nt})")
        if not np.all(np.isfinite(logw)):
            raise ValueError("binary_log_weights must be finite (log of positive weights)")
        if lex.shape != (n_nt, len(self.terminals)):
            raise ValueError(f"lexical_log_weights must have shape {(n_nt, len(self.terminals))}, got {lex.shape}")
        if np.any(np.isnan(lex)) or np.any(lex == np.inf):
            raise ValueError("lexical_log_weights must be finite or -inf (no rule)")
        check_int(self.start, "start", low=0, high=n_nt - 1)
        order = np.argsort(rules[:, 0], kind="stable")
        object.__setattr__(self, "nonterminals", tuple(self.nonterminals))
        object.__setattr__(self, "terminals", tuple(self.terminals))
        object.__setattr__(self, "binary_rules", np.ascontiguousarray(rules[order]))
        object.__setattr__(self, "binary_log_weights", np.ascontiguousarray(logw[order]))
        object.__setattr__(self, "lexical_log_weights", np.ascontiguousarray(lex))
        object.__setattr__(self, "start", int(self.start))
        offsets = np.searchsorted(self.binary_rules[:, 0], np.arange(n_nt + 1)).astype(np.int64)
        object.__setattr__(self, "rule_offsets", offsets)
        object.__setattr__(self, "_terminal_index", {w: i for i, w in enumerate(self.terminals)})

    @classmethod
    def from_rules(cls, rules: Iterable[tuple[str, Sequence[str], float]], *, start: str = "S",
                   terminals: Iterable[str] | None = None) -> "Grammar":
        """Build a CNF grammar from ``(lhs, rhs, weight)`` triples, converting non-CNF rules.

        ``rhs`` items are nonterminal names or terminals written as ``"'word'"`` (quoted).  Rules
        with unary, mixed or long right-hand sides are converted (see the module docstring).

        Raises
        ------
        ValueError
            Negative or non-finite weights, an empty right-hand side, an unknown start symbol,
            or unary cycles whose total weight diverges (no equivalent CNF grammar exists).
        """
        return _convert([(lhs, tuple(rhs), w) for lhs, rhs, w in rules], start=start, terminals=terminals)

    @classmethod
    def from_string(cls, text: str, *, start: str = "S") -> "Grammar":
        """Read a grammar in the plain-text format ``A -> B C [0.3]`` / ``A -> 'word' [0.1]``.

        One rule per line; ``#`` starts a comment; quoted tokens are terminals, other tokens are
        nonterminals; the bracket holds the rule's (linear, non-negative) weight.  Non-CNF rules
        (unary ``A -> B [p]``, mixed ``A -> 'to' VP [p]``, long ``A -> B C D [p]``) are converted.

        Examples
        --------
        >>> g = Grammar.from_string('''
        ... S -> NP VP [1.0]
        ... NP -> 'she' [0.6]
        ... NP -> 'fish' [0.4]
        ... VP -> 'eats' NP [1.0]
        ... ''')
        >>> from samplers.models.chart import log_probability
        >>> round(float(np.exp(log_probability(g, "she eats fish"))), 3)
        0.24
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        rules = []
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = _RULE_RE.match(line)
            if m is None:
                raise ValueError(f"grammar line {lineno}: expected \"A -> B C [weight]\" or "
                                 f"\"A -> 'word' [weight]\", got {raw.strip()!r}")
            try:
                weight = float(m.group("w"))
            except ValueError:
                raise ValueError(f"grammar line {lineno}: weight must be a number, got {m.group('w')!r}") from None
            rhs = []
            for q1, q2, bare in _TOKEN_RE.findall(m.group("rhs")):
                rhs.append(f"'{q1 or q2}'" if bare == "" else bare)
            rules.append((m.group("lhs"), tuple(rhs), weight, lineno))
        if not rules:
            raise ValueError("text holds no grammar rules")
        return _convert(rules, start=start, terminals=None)

    @classmethod
    def random(cls, n_nonterminals: int, n_terminals: int, *, rule_density: float = 1.0,
               concentration: float = 1.0, lexical_share: float = 0.3, seed=None) -> "Grammar":
        """A seeded random PCFG (rule probabilities of each parent sum to one).

        Parameters
        ----------
        n_nonterminals, n_terminals : int
            Sizes; nonterminal 0 (``"S"``) is the start symbol.
        rule_density : float in (0, 1]
            Fraction of the ``N^3`` binary rules present (each parent keeps at least one).
        concentration : float > 0
            Dirichlet concentration of the rule probabilities: small values give peaked rules
            (low ambiguity), large values flat ones (high ambiguity).
        lexical_share : float in (0, 1)
            Total probability of each parent's lexical rules.
        seed : int, Generator or None
            Randomness of the rule set and weights (SPEC 7: a ``np.random.Generator``, an int or None).
        """
        n = check_int(n_nonterminals, "n_nonterminals", low=1)
        v = check_int(n_terminals, "n_terminals", low=1)
        density = check_float(rule_density, "rule_density", low=0.0, high=1.0, low_open=True)
        alpha = check_float(concentration, "concentration", low=0.0, low_open=True)
        share = check_float(lexical_share, "lexical_share", low=0.0, high=1.0, low_open=True, high_open=True)
        rng = as_generator(seed)
        triples = np.array([(a, b, c) for a in range(n) for b in range(n) for c in range(n)], dtype=np.int64)
        keep = rng.random(len(triples)) < density
        for a in range(n):
            rows = np.flatnonzero(triples[:, 0] == a)
            if not keep[rows].any():
                keep[rng.choice(rows)] = True
        triples = triples[keep]
        logw = np.empty(len(triples))
        lex = np.empty((n, v))
        tiny = 1e-300
        for a in range(n):
            rows = np.flatnonzero(triples[:, 0] == a)
            logw[rows] = np.log(np.maximum(rng.dirichlet(np.full(len(rows), alpha)), tiny) * (1.0 - share))
            lex[a] = np.log(np.maximum(rng.dirichlet(np.full(v, alpha)), tiny) * share)
        names = ["S"] + [f"N{i}" for i in range(1, n)]
        return cls(tuple(names), tuple(f"w{i}" for i in range(v)), triples, logw, lex, 0)

    @classmethod
    def random_split(cls, n_coarse: int, n_splits: int, n_terminals: int, *, noise: float = 1.0,
                     concentration: float = 0.05, lexical_share: float = 0.4, rule_density: float = 0.5,
                     seed=None) -> "Grammar":
        """A latent-annotation style PCFG: each symbol of a random coarse PCFG split into ``n_splits``.

        Fine rule weights are the coarse ones times ``exp(noise * z)`` (z standard normal),
        renormalised per parent.  ``coarse_mapping`` records fine -> coarse symbol, so the coarse
        grammar (``project(coarse_mapping)``) is a good cheap model for M' and fixed masks, as in
        coarse-to-fine parsing.  ``concentration`` controls the ambiguity of the coarse grammar.
        """
        base = cls.random(n_coarse, n_terminals, rule_density=rule_density, concentration=concentration,
                          lexical_share=lexical_share, seed=seed)
        s = check_int(n_splits, "n_splits", low=1)
        noise = check_float(noise, "noise", low=0.0)
        rng = as_generator(seed if isinstance(seed, np.random.Generator) else
                           None if seed is None else np.random.SeedSequence([int(seed), 1]))
        n = n_coarse * s
        fine_of = np.arange(n) // s
        r = base.binary_rules
        rule_list, weight_list = [], []
        for a in range(n):
            for t in range(base.rule_offsets[fine_of[a]], base.rule_offsets[fine_of[a] + 1]):
                for b in range(s):
                    for c in range(s):
                        rule_list.append((a, r[t, 1] * s + b, r[t, 2] * s + c))
                        weight_list.append(base.binary_log_weights[t] - 2 * np.log(s) + noise * rng.normal())
        rows, logw = np.array(rule_list, dtype=np.int64), np.array(weight_list)
        lex = base.lexical_log_weights[fine_of] + noise * rng.normal(size=(n, n_terminals))
        for a in range(n):  # renormalise each parent to the coarse parent's total probability (1)
            sel = rows[:, 0] == a
            total = np.logaddexp(np.logaddexp.reduce(logw[sel]), np.logaddexp.reduce(lex[a]))
            logw[sel] -= total
            lex[a] -= total
        names = ["S"] + [f"N{fine_of[i]}_{i % s}" for i in range(1, n)]
        return cls(tuple(names), base.terminals, rows, logw, lex, 0, tuple(int(x) for x in fine_of))

    # -- queries ------------------------------------------------------------------------------
    @property
    def n_nonterminals(self) -> int:
        """Number of nonterminals."""
        return len(self.nonterminals)

    @property
    def n_binary(self) -> int:
        """Number of binary rules."""
        return int(self.binary_rules.shape[0])

    def encode(self, words: str | Sequence[str] | np.ndarray) -> np.ndarray:
        """Map a sentence (a whitespace-separated str or a sequence of str) to terminal ids.

        Raises
        ------
        ValueError
            If the sentence is empty or holds a word the grammar cannot generate (named).
        """
        if isinstance(words, str):
            tokens = words.split()
        elif isinstance(words, np.ndarray) and np.issubdtype(words.dtype, np.integer):
            ids = words.astype(np.int64).reshape(-1)
            if ids.size == 0:
                raise ValueError("words must not be empty")
            if ids.min() < 0 or ids.max() >= len(self.terminals):
                raise ValueError(f"words holds terminal ids outside [0, {len(self.terminals)})")
            return ids
        else:
            tokens = list(words)
        if len(tokens) == 0:
            raise ValueError("words must not be empty (an empty sentence has no CNF parse)")
        ids = np.empty(len(tokens), dtype=np.int64)
        for i, tok in enumerate(tokens):
            if not isinstance(tok, str):
                raise TypeError(f"words must hold str tokens, got {type(tok).__name__} at position {i}")
            idx = self._terminal_index.get(tok)
            if idx is None or not np.any(np.isfinite(self.lexical_log_weights[:, idx])):
                raise ValueError(f"word {tok!r} (position {i}) cannot be generated by the grammar")
            ids[i] = idx
        return ids

    def rule_totals(self) -> np.ndarray:
        """Total weight of each nonterminal's rules (binary and lexical), shape (N,); 1 for a PCFG."""
        totals = np.exp(self.lexical_log_weights).sum(axis=1)
        np.add.at(totals, self.binary_rules[:, 0], np.exp(self.binary_log_weights))
        return totals

    def unnormalised_nonterminals(self, tol: float = NORMALISATION_TOL) -> list[str]:
        """Names of the nonterminals whose rule weights do not sum to one (within ``tol``).

        Nonterminals without any rule (they derive nothing) are not listed.  An empty list means the
        grammar is a PCFG, so :func:`samplers.models.chart.log_probability` is a log probability;
        otherwise only the weighted total :func:`samplers.models.chart.log_inside` is meaningful.
        """
        tol = check_float(tol, "tol", low=0.0)
        totals = self.rule_totals()
        bad = (totals > 0) & (np.abs(totals - 1.0) > tol)
        return [self.nonterminals[a] for a in np.flatnonzero(bad)]

    def project(self, mapping: Sequence[int] | np.ndarray) -> "Grammar":
        """A coarse grammar over merged nonterminals (coarse-to-fine projection, uniform weights).

        ``mapping[A]`` is the coarse symbol of fine nonterminal ``A``.  Coarse rule weights are the
        averages over the merged parents of the summed fine weights, so every fine tree has a
        coarse image of positive weight.
        """
        mapping = np.asarray(mapping, dtype=np.int64)
        if mapping.shape != (self.n_nonterminals,):
            raise ValueError(f"mapping must have one entry per nonterminal ({self.n_nonterminals}), got {mapping.shape}")
        if mapping.min() < 0:
            raise ValueError("mapping must be non-negative")
        k = int(mapping.max()) + 1
        sizes = np.bincount(mapping, minlength=k).astype(float)
        if np.any(sizes == 0):
            raise ValueError("mapping must use every coarse symbol 0..max(mapping)")
        bw = np.zeros((k, k, k))
        r = self.binary_rules
        np.add.at(bw, (mapping[r[:, 0]], mapping[r[:, 1]], mapping[r[:, 2]]), np.exp(self.binary_log_weights))
        bw /= sizes[:, None, None]
        lex = np.zeros((k, len(self.terminals)))
        np.add.at(lex, mapping, np.exp(self.lexical_log_weights))
        lex /= sizes[:, None]
        idx = np.argwhere(bw > 0)
        with np.errstate(divide="ignore"):
            names = tuple("S" if c == mapping[self.start] else f"C{c}" for c in range(k))
            return Grammar(names, self.terminals, idx, np.log(bw[tuple(idx.T)]), np.log(lex),
                           int(mapping[self.start]))


    # -- dense score arrays (the rdp side: rdp.pcfg_log_partition and friends) ---------------------
    def dense_rule_scores(self, missing: float = MISSING_LOG_WEIGHT) -> np.ndarray:
        """Binary rule log weights as a dense array ``[A, B, C]`` of shape (NT, NT, NT).

        Absent rules get the finite stand-in ``missing`` (default ``-1e4``: rdp needs finite scores,
        and ``exp(-1e4)`` underflows to 0 in float64, so log P is unchanged to machine precision).
        """
        out = np.full((self.n_nonterminals,) * 3, -np.inf)
        r = self.binary_rules
        np.logaddexp.at(out, (r[:, 0], r[:, 1], r[:, 2]), self.binary_log_weights)  # duplicates are summed
        out[np.isneginf(out)] = float(missing)
        return out

    def dense_lexical_scores(self, missing: float = MISSING_LOG_WEIGHT) -> np.ndarray:
        """Lexical log weights ``[A, w]`` (NT, V), absent rules replaced by ``missing``."""
        lex = self.lexical_log_weights.copy()
        lex[~np.isfinite(lex)] = float(missing)
        return lex

    def terminal_scores(self, words: str | Sequence[str], missing: float = MISSING_LOG_WEIGHT) -> np.ndarray:
        """Preterminal log scores ``[i, A] = log w(A -> words[i])`` (T, NT): rdp's ``terminal_scores[0]``."""
        return np.ascontiguousarray(self.dense_lexical_scores(missing)[:, self.encode(words)].T)

    def root_scores(self, missing: float = MISSING_LOG_WEIGHT) -> np.ndarray:
        """Root log scores (NT,): 0 for the start symbol, ``missing`` elsewhere."""
        out = np.full(self.n_nonterminals, float(missing))
        out[self.start] = 0.0
        return out

    @classmethod
    def from_dense(cls, rule_scores, lexical_scores, root_scores, *, nonterminals: Sequence[str] | None = None,
                   terminals: Sequence[str] | None = None,
                   missing_below: float = MISSING_LOG_WEIGHT / 2) -> "Grammar":
        """A grammar from dense log scores (the layout of :func:`rdp.pcfg_log_partition`).

        Parameters
        ----------
        rule_scores : array_like (NT, NT, NT)
            ``[A, B, C]``: log weight of ``A -> B C``.
        lexical_scores : array_like (NT, V)
            ``[A, w]``: log weight of ``A -> w``.
        root_scores : array_like (NT,)
            Log weight of the root being A.  When it is 0 at one symbol and absent elsewhere that
            symbol is the start; otherwise a new start symbol ``"ROOT"`` gets the rules
            ``ROOT -> B C`` and ``ROOT -> w`` with weights ``logsumexp_A root[A] + rule[A, ...]``, so
            every sentence keeps its total weight.
        nonterminals, terminals : sequence of str, optional
            Names (default ``N0..``, ``w0..``).
        missing_below : float
            Scores at or below this (or ``-inf``) are absent rules (default ``-5e3``).
        """
        rules = np.asarray(rule_scores, dtype=np.float64)
        lex = np.asarray(lexical_scores, dtype=np.float64)
        root = np.asarray(root_scores, dtype=np.float64)
        if rules.ndim != 3 or rules.shape[0] != rules.shape[1] or rules.shape[1] != rules.shape[2]:
            raise ValueError(f"rule_scores must have shape (NT, NT, NT), got {rules.shape}")
        nt = rules.shape[0]
        if lex.ndim != 2 or lex.shape[0] != nt:
            raise ValueError(f"lexical_scores must have shape (NT, V) with NT = {nt}, got {lex.shape}")
        if root.shape != (nt,):
            raise ValueError(f"root_scores must have shape (NT,) = ({nt},), got {root.shape}")
        for name, arr in (("rule_scores", rules), ("lexical_scores", lex), ("root_scores", root)):
            if np.any(np.isnan(arr)) or np.any(arr == np.inf):
                raise ValueError(f"{name} must be finite or -inf (no rule)")
        names = list(nonterminals) if nonterminals is not None else [f"N{i}" for i in range(nt)]
        vocab = list(terminals) if terminals is not None else [f"w{i}" for i in range(lex.shape[1])]
        if len(names) != nt or len(vocab) != lex.shape[1]:
            raise ValueError(f"nonterminals and terminals must have {nt} and {lex.shape[1]} names")
        present = root > missing_below
        rules = np.where(rules > missing_below, rules, -np.inf)
        lex = np.where(lex > missing_below, lex, -np.inf)
        if not present.any():
            raise ValueError("root_scores holds no root symbol (every score is absent)")
        if present.sum() == 1 and root[present][0] == 0.0:
            start = int(np.flatnonzero(present)[0])
        else:
            if "ROOT" in names:
                raise ValueError("a nonterminal is already named 'ROOT'; rename it to build a new start symbol")
            rroot = np.where(present, root, -np.inf)
            with np.errstate(divide="ignore", invalid="ignore"):
                top = np.logaddexp.reduce(rroot[:, None, None] + rules, axis=0)
                top_lex = np.logaddexp.reduce(rroot[:, None] + lex, axis=0)
            pad = np.full((nt + 1, nt + 1, nt + 1), -np.inf)
            pad[:nt, :nt, :nt] = rules
            pad[nt, :nt, :nt] = top
            rules = pad
            lex = np.vstack([lex, top_lex])
            names = names + ["ROOT"]
            start = nt
        idx = np.argwhere(np.isfinite(rules))
        return cls(tuple(names), tuple(vocab), idx, rules[tuple(idx.T)], lex, start)


def _symbol_is_terminal(sym: str) -> bool:
    return len(sym) >= 2 and sym[0] == "'" and sym[-1] == "'"


def _convert(rules: list, *, start: str, terminals: Iterable[str] | None) -> Grammar:
    """Binarise, lift terminals out of mixed rules, take the unary closure; return a CNF Grammar."""
    binary: dict[tuple[str, str, str], float] = {}
    lexical: dict[tuple[str, str], float] = {}
    unary: dict[tuple[str, str], float] = {}
    for rule in rules:
        w = _rule_weight(rule)
        if w == 0.0:
            continue
        lhs, rhs = rule[0], list(rule[1])
        if len(rhs) == 1:
            if _symbol_is_terminal(rhs[0]):
                _add(lexical, (lhs, rhs[0][1:-1]), w)
            else:
                _add(unary, (lhs, rhs[0]), w)
        else:
            _binarise(lhs, rhs, w, binary, lexical)
    return _cnf_grammar(binary, lexical, unary, start=start, terminals=terminals)


def _add(table: dict, key: tuple, w: float) -> None:
    table[key] = table.get(key, 0.0) + w


def _rule_weight(rule: tuple) -> float:
    """The checked weight of ``rule`` = ``(lhs, rhs, weight[, line])`` (the line, if any, goes in the message)."""
    lhs, rhs, w = rule[0], rule[1], rule[2]
    where = f" (line {rule[3]})" if len(rule) > 3 else ""
    if not isinstance(lhs, str) or not lhs or _symbol_is_terminal(lhs):
        raise ValueError(f"rule left-hand side must be a nonterminal name, got {lhs!r}{where}")
    try:
        w = float(w)
    except (TypeError, ValueError):
        raise ValueError(f"rule weight must be a number, got {w!r} for {lhs} -> {' '.join(rhs)}{where}") from None
    if not np.isfinite(w) or w < 0:
        raise ValueError(f"rule weights must be finite and non-negative; {lhs} -> {' '.join(rhs)} "
                         f"has weight {w}{where}")
    if len(rhs) == 0:
        raise ValueError(f"rule {lhs} -> (empty) is an epsilon rule, which cannot be converted to CNF{where}")
    return w


def _binarise(lhs: str, rhs: list[str], w: float, binary: dict, lexical: dict) -> None:
    """Add the rule ``lhs -> rhs`` (two or more symbols) to ``binary``: terminals lifted to preterminals
    ``<word>``, longer right-hand sides binarised to the right with weight-one helper nonterminals."""
    for i, sym in enumerate(rhs):  # lift terminals out of mixed / long rules
        if _symbol_is_terminal(sym):
            pre = f"<{sym[1:-1]}>"
            lexical[(pre, sym[1:-1])] = 1.0
            rhs[i] = pre
    parent = lhs
    while len(rhs) > 2:  # right-branching binarisation with weight-one helpers
        helper = f"{lhs}|{'_'.join(rhs[1:])}"
        if parent == lhs:
            _add(binary, (parent, rhs[0], helper), w)
        else:
            binary[(parent, rhs[0], helper)] = 1.0
        parent, rhs = helper, rhs[1:]
    if parent == lhs:
        _add(binary, (parent, rhs[0], rhs[1]), w)
    else:
        binary[(parent, rhs[0], rhs[1])] = 1.0


def _cnf_grammar(binary: dict, lexical: dict, unary: dict, *, start: str,
                 terminals: Iterable[str] | None) -> Grammar:
    """The CNF Grammar of collected binary / lexical / unary weights (unary chains folded in by their closure)."""
    names: list[str] = []
    for table in (binary, lexical, unary):
        for key in table:
            for sym in (key if table is not lexical else key[:1]):
                if sym not in names:
                    names.append(sym)
    if start not in names:
        raise ValueError(f"start symbol {start!r} does not appear in the grammar")
    index = {s: i for i, s in enumerate(names)}
    n = len(names)
    vocab = list(dict.fromkeys(list(terminals or []) + [t for _, t in lexical]))
    vindex = {t: i for i, t in enumerate(vocab)}

    closure: np.ndarray = np.eye(n)
    if unary:
        wu = np.zeros((n, n))
        for (a, b), w in unary.items():
            wu[index[a], index[b]] += w
        radius = float(np.max(np.abs(np.linalg.eigvals(wu)))) if n else 0.0
        if radius >= 1.0 - 1e-12:
            raise ValueError(f"unary rules form cycles with total weight >= 1 (spectral radius {radius:.3g}); "
                             "the unary closure diverges, so the grammar has no equivalent CNF form")
        closure = np.linalg.inv(np.eye(n) - wu)  # U = sum_k W_u^k, all unary chains A ->* B
    bw = np.zeros((n, n, n))
    for (a, b, c), w in binary.items():
        bw[index[a], index[b], index[c]] += w
    lw = np.zeros((n, len(vocab)))
    for (a, t), w in lexical.items():
        lw[index[a], vindex[t]] += w
    bw = np.einsum("ax,xbc->abc", closure, bw)
    lw = closure @ lw
    bw[np.abs(bw) < 1e-300] = 0.0
    idx = np.argwhere(bw > 0)
    with np.errstate(divide="ignore"):
        return Grammar(tuple(names), tuple(vocab), idx, np.log(bw[tuple(idx.T)]), np.log(np.maximum(lw, 0.0)),
                       index[start])
