"""Experiment 1 of Steinhardt & Liang (2015, Sec. 5): word inference from keyboard gestures.

Three parts:

* :func:`make_lexicon` / :func:`generate_gestures` — a seeded synthetic data generator. Words come
  from the ``english-words`` package's ``web2`` list (lower case, letters only). web2 has **no
  counts**, so word frequencies are a Zipf law ``p(rank r) ∝ r^-s`` over a seeded random ranking of
  the chosen vocabulary. A gesture is a time series of noisy 2-D finger positions on a QWERTY layout:
  the finger dwells ``1 + Poisson(dwell)`` steps on each key of the word, moves to the next key along
  the straight segment (``ceil(dist / speed) - 1`` interpolated positions), and each position gets
  N(0, sigma^2 I) noise. The model's input ``x`` is the key under each noisy position (nearest key).
* :class:`GestureModel` — the paper's alignment model: ``z_i`` in {start c, continue c, unaligned};
  the output word ``y`` is the letters of the start states. ``u_theta`` is a linear-chain model with
  the paper's base features (x_i, z_i), (x_i, z_{i-1}, z_i) and (x_i, x_{i-1}, z_i), the last two
  with z described by its type and the relation of its letter to the key x_i (same key / QWERTY
  neighbour / other); it is sampled exactly by forward filtering / backward sampling. ``A_theta`` is
  a systematic-scan Gibbs sweep of a model with the base features plus (x_i, y_j, y_{j-1}) (as
  (relation of y_j to x_i, y_{j-1}, y_j) at the start position i of y_j), dictionary membership, log
  frequency and the number of dictionary prefixes of ``y`` (kernels in
  :mod:`experiments.doeblin_gestures._kernels`, which documents the exact parametrisation).
* :func:`train_gestures` / :func:`evaluate_gestures` — training at a fixed transition budget with
  basic Gibbs, u-Gibbs (smart restarts) or the strong Doeblin chain (eps = 1 / budget). As in the
  paper, the Gibbs methods use the plug-in gradient with edit-distance weights ``exp(-(D + 1))`` and
  the Doeblin chain uses Algorithm 1 with those weights (:func:`doeblin_gradient`); accuracies per
  sample (the paper's measure) and of the decoded word, with standard errors over test examples.

Deviations from the paper, stated once: the x-conditioned indicators are reduced as above (a full
(x_i, z_{i-1}, z_i) table has 26 * 53^2 weights); ``u`` is fitted first (its own plug-in gradient on
exact u draws) and then, by default, kept fixed for every method, so Algorithm 1 trains A's weights
only (``train_gestures(..., train_u=True)`` also uses its dlog u term); ``A`` starts from ``u`` (Assumption 4.3: rich weights 0, so A leaves u invariant).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from doeblin.learning import AdaGrad
from samplers.rng import as_generator, kernel_seed
from samplers.validation import as_float_array, as_int_array, check_float, check_int

from ._kernels import (
    LexiconTables,
    alignment_chain,
    basic_gibbs_samples,
    contrastive_gradient,
    doeblin_chain_samples,
    doeblin_path_gradient,
    doeblin_sampler_samples,
    full_score,
    is_valid,
    layout,
    seeded_sweep,
    u_draws,
)

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
QWERTY_ROW_OFFSETS = (0.0, 0.25, 0.75)
METHODS = ("basic-gibbs", "u-gibbs", "doeblin", "doeblin-restarts")


def qwerty_positions() -> np.ndarray:
    """Key centres (26, 2) in key widths, row r at height r with the usual stagger; index = letter."""
    pos = np.empty((26, 2))
    for r, (row, off) in enumerate(zip(QWERTY_ROWS, QWERTY_ROW_OFFSETS)):
        for c, ch in enumerate(row):
            pos[ALPHABET.index(ch)] = (c + off, r)
    return pos


def qwerty_relation(radius: float = 1.3) -> np.ndarray:
    """Relation ``rel[x, c]`` (26, 26) int64 of letter c to key x: 0 same key, 1 neighbour (centres
    closer than ``radius`` key widths: 2-6 keys around it), 2 other. Used by the reduced
    x-conditioned features (see :mod:`experiments.doeblin_gestures._kernels`)."""
    radius = check_float(radius, "radius", low=0.0, low_open=True)
    pos = qwerty_positions()
    dist = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=2)
    rel = np.where(dist < radius, 1, 2).astype(np.int64)
    np.fill_diagonal(rel, 0)
    return rel


@dataclass
class Lexicon:
    """Vocabulary with Zipf frequencies and its trie (the dictionary features of A)."""

    words: list[str]
    probs: np.ndarray
    child: np.ndarray = field(repr=False)
    word_logfreq: np.ndarray = field(repr=False)

    @classmethod
    def from_words(cls, words: Sequence[str], probs, *, n_letters: int = 26) -> "Lexicon":
        """Build the trie of ``words`` (letters among the first ``n_letters`` of a-z) with
        ``log probs`` at word ends."""
        probs = as_float_array(probs, "probs", ndim=1)
        K = check_int(n_letters, "n_letters", low=1, high=26)
        if len(words) == 0 or len(words) != probs.shape[0]:
            raise ValueError(f"words and probs must be non-empty and equally long, got {len(words)} and {probs.shape[0]}")
        if np.any(probs <= 0):
            raise ValueError("probs must be positive")
        child = [[-1] * K]
        logf = [np.nan]
        for w, p in zip(words, probs):
            node = 0
            for c in encode(w):
                if c >= K:
                    raise ValueError(f"words must use only the first {K} letters, got {w!r}")
                if child[node][c] < 0:
                    child[node][c] = len(child)
                    child.append([-1] * K)
                    logf.append(np.nan)
                node = child[node][c]
            logf[node] = float(np.log(p))
        return cls(list(words), probs, np.array(child, dtype=np.int64), np.array(logf))


def encode(word: str) -> np.ndarray:
    """Letters a-z -> int64 ids 0..25."""
    if not isinstance(word, str) or not word or any(ch not in ALPHABET for ch in word):
        raise ValueError(f"word must be a non-empty string of letters a-z, got {word!r}")
    return np.array([ALPHABET.index(ch) for ch in word], dtype=np.int64)


def decode(ids) -> str:
    """Inverse of :func:`encode`."""
    return "".join(ALPHABET[int(i)] for i in ids)


def make_lexicon(n_words: int = 2000, *, min_len: int = 3, max_len: int = 6, zipf_s: float = 1.0,
                 seed=None) -> Lexicon:
    """Seeded vocabulary: ``n_words`` random web2 words of length in [min_len, max_len] with Zipf
    frequencies ``∝ rank^-zipf_s`` over a random ranking (web2 has no counts). Needs the optional
    ``english-words`` package (extra ``mcsa[data]``)."""
    from english_words import get_english_words_set

    n_words = check_int(n_words, "n_words", low=1)
    min_len = check_int(min_len, "min_len", low=1)
    max_len = check_int(max_len, "max_len", low=min_len)
    zipf_s = check_float(zipf_s, "zipf_s", low=0.0)
    pool = sorted(w for w in get_english_words_set(["web2"], lower=True)
                  if min_len <= len(w) <= max_len and all(ch in ALPHABET for ch in w))
    if n_words > len(pool):
        raise ValueError(f"n_words must be at most {len(pool)} (web2 words of that length), got {n_words}")
    gen = as_generator(seed)
    words = [pool[i] for i in gen.choice(len(pool), size=n_words, replace=False)]
    p = np.arange(1, n_words + 1, dtype=float) ** -zipf_s
    return Lexicon.from_words(words, p / p.sum())


def gesture_path(word: str, *, dwell: float = 1.0, speed: float = 1.5, sigma: float = 0.3,
                 seed=None) -> np.ndarray:
    """Noisy 2-D finger positions (n, 2) for ``word`` (dwell, interpolated moves, Gaussian noise)."""
    ids = encode(word)
    dwell = check_float(dwell, "dwell", low=0.0)
    speed = check_float(speed, "speed", low=0.0, low_open=True)
    sigma = check_float(sigma, "sigma", low=0.0)
    gen = as_generator(seed)
    keys = qwerty_positions()
    pts = []
    for j, c in enumerate(ids):
        pts.extend([keys[c]] * (1 + int(gen.poisson(dwell))))
        if j + 1 < len(ids):
            a, b = keys[c], keys[ids[j + 1]]
            n_move = int(np.ceil(np.linalg.norm(b - a) / speed)) - 1
            pts.extend(a + (b - a) * f for f in np.arange(1, n_move + 1) / (n_move + 1))
    pts = np.array(pts)
    return pts + sigma * gen.standard_normal(pts.shape)


def keys_under(points) -> np.ndarray:
    """Nearest QWERTY key (int64 letter ids) for each 2-D position."""
    points = as_float_array(points, "points", ndim=2)
    d = ((points[:, None, :] - qwerty_positions()[None, :, :]) ** 2).sum(axis=2)
    return d.argmin(axis=1).astype(np.int64)


def generate_gestures(lexicon: Lexicon, n: int, *, seed=None, **path_options) -> list[tuple[np.ndarray, str]]:
    """``n`` examples ``(x, word)``: word ~ Zipf(lexicon), ``x`` = keys under its noisy gesture."""
    n = check_int(n, "n", low=0)
    gen = as_generator(seed)
    idx = gen.choice(len(lexicon.words), size=n, p=lexicon.probs)
    return [(keys_under(gesture_path(lexicon.words[i], seed=gen, **path_options)), lexicon.words[i]) for i in idx]


class GestureModel:
    """Weights of ``u`` (base features) and ``A`` (base + rich features); layout in
    :mod:`experiments.doeblin_gestures._kernels`. ``K`` is the alphabet size (26 for words; tests use less);
    ``relation`` (K, K) ints in {0, 1, 2} says how a letter relates to a key (default: the first K
    rows/columns of :func:`qwerty_relation`)."""

    def __init__(self, lexicon: Lexicon, w_u=None, w_A=None, *, n_letters: int = 26, relation=None):
        self.K = check_int(n_letters, "n_letters", low=1)
        _, _, _, self.n_base, _, _, self.n_full = layout(self.K)
        if lexicon.child.shape[1] != self.K:
            raise ValueError(f"lexicon trie must have {self.K} letters, got {lexicon.child.shape[1]}")
        rel = qwerty_relation()[:self.K, :self.K] if relation is None else relation
        self.relation = np.ascontiguousarray(as_int_array(rel, "relation", ndim=2, low=0, high=3))
        if self.relation.shape != (self.K, self.K):
            raise ValueError(f"relation must have shape ({self.K}, {self.K}), got {self.relation.shape}")
        self.lexicon = lexicon
        self.w_u = np.zeros(self.n_base) if w_u is None else as_float_array(w_u, "w_u", ndim=1).copy()
        self.w_A = np.zeros(self.n_full) if w_A is None else as_float_array(w_A, "w_A", ndim=1).copy()
        if self.w_u.shape[0] != self.n_base:
            raise ValueError(f"w_u must have length {self.n_base}, got {self.w_u.shape[0]}")
        if self.w_A.shape[0] != self.n_full:
            raise ValueError(f"w_A must have length {self.n_full}, got {self.w_A.shape[0]}")

    @property
    def tables(self) -> LexiconTables:
        """The relation and the dictionary trie, bundled for the kernels."""
        return LexiconTables(self.relation, self.lexicon.child, self.lexicon.word_logfreq)

    def chain(self, x) -> tuple:
        """The kernels' bundle for example ``x`` (validated): u's and A's tables, u's forward messages."""
        return alignment_chain(self.check_x(x), self.w_u, self.w_A, self.tables)

    def with_weights(self, w_u, w_A) -> "GestureModel":
        """A model with the same lexicon, alphabet and relation and the given weights (copied)."""
        return GestureModel(self.lexicon, w_u, w_A, n_letters=self.K, relation=self.relation)

    def check_x(self, x) -> np.ndarray:
        """Validate a key sequence: int ids in [0, K), length >= 1."""
        x = np.ascontiguousarray(as_int_array(x, "x", ndim=1, low=0, high=self.K))
        if x.shape[0] < 1:
            raise ValueError("x must hold at least one key")
        return x

    def u_draws(self, x, size: int, *, seed=None) -> np.ndarray:
        """Exact draws (size, l) of alignments from ``u`` (forward filtering, backward sampling)."""
        x = self.check_x(x)
        return u_draws(x, self.w_u, self.K, self.relation, check_int(size, "size", low=0), kernel_seed(seed))

    def log_potential(self, x, z, *, rich: bool = True) -> float:
        """Unnormalised log probability of ``z`` under A's model (``rich``) or u's (base features)."""
        x = self.check_x(x)
        z = np.ascontiguousarray(as_int_array(z, "z", ndim=1, low=0, high=2 * self.K + 1))
        if z.shape != x.shape:
            raise ValueError(f"z must have the length of x ({x.shape[0]}), got {z.shape[0]}")
        w = self.w_A if rich else self.w_u
        return float(full_score(x, z, w, self.tables, rich))

    def gibbs_sweep(self, x, z, *, seed=None) -> np.ndarray:
        """One transition of ``A`` (systematic Gibbs sweep) from ``z``; returns the new alignment."""
        x = self.check_x(x)
        z = np.array(as_int_array(z, "z", ndim=1, low=0, high=2 * self.K + 1), dtype=np.int64)
        if z.shape != x.shape or not is_valid(z, self.K):
            raise ValueError("z must be a valid alignment of the length of x")
        seeded_sweep(x, z, self.w_A, self.tables, kernel_seed(seed))
        return z

    def run_chains(self, x, method: str, n_steps: int, n_chains: int, *, seed=None) -> np.ndarray:
        """Post-burn-in alignments of ``n_chains`` chains of ``n_steps`` transitions (the first half of
        every chain is burn-in), ``method`` in :data:`METHODS`: basic-gibbs (from ``z_i = start x_i``),
        u-gibbs (from a u draw), doeblin (the paper's test-time sampler: a u draw, then Geometric(1 /
        n_steps) sweeps, mean n_steps) and doeblin-restarts (the strong Doeblin chain, eps = 1 / n_steps);
        kernels in :mod:`experiments.doeblin_gestures._kernels`."""
        x = self.check_x(x)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        n_steps = check_int(n_steps, "n_steps", low=2)
        n_chains = check_int(n_chains, "n_chains", low=1)
        chain, seed = self.chain(x), kernel_seed(seed)
        if method == "basic-gibbs":
            return basic_gibbs_samples(chain, n_steps, n_chains, seed)
        if method == "u-gibbs":
            return doeblin_chain_samples(chain, n_steps, 0.0, n_chains, seed)
        if method == "doeblin":
            return doeblin_sampler_samples(chain, 1.0 / n_steps, n_chains, seed)
        return doeblin_chain_samples(chain, n_steps, 1.0 / n_steps, n_chains, seed)

    def output_words(self, samples) -> list[tuple[int, ...]]:
        """Output word (tuple of letter ids) of each alignment row."""
        return [tuple(int(s) for s in row if s < self.K) for row in np.atleast_2d(samples)]


def _sampled_gradient(model: GestureModel, x, target, samples, rich: bool) -> np.ndarray:
    n = model.n_full if rich else model.n_base
    return contrastive_gradient(x, samples, target, model.tables, rich, n)


def _check_data(data, model: GestureModel):
    if len(data) == 0:
        raise ValueError("data must hold at least one (x, word) example")
    return [(model.check_x(x), encode(w) if isinstance(w, str) else as_int_array(w, "word", ndim=1))
            for x, w in data]


def fit_u(model: GestureModel, data, *, n_epochs: int = 3, n_samples: int = 16, lr: float = 0.5,
          seed=None) -> GestureModel:
    """Fit ``u``'s weights by AdaGrad on the sampled gradient over exact u draws; then set ``A``'s
    weights per Assumption 4.3 (base weights = u's, rich weights 0)."""
    data = _check_data(data, model)
    n_epochs = check_int(n_epochs, "n_epochs", low=0)
    n_samples = check_int(n_samples, "n_samples", low=1)
    gen = as_generator(seed)
    opt = AdaGrad(model.n_base, lr=lr)
    w = model.w_u.copy()
    for _ in range(n_epochs):
        for i in gen.permutation(len(data)):
            x, y = data[i]
            model.w_u = w
            w = opt.step(w, _sampled_gradient(model, x, y, model.u_draws(x, n_samples, seed=gen), rich=False))
    w_A = np.zeros(model.n_full)
    w_A[:model.n_base] = w
    return model.with_weights(w, w_A)


GRADIENTS = ("algorithm1", "algorithm1-cv", "contrastive")


def doeblin_gradient(model: GestureModel, x, word, eps: float, n_chains: int, *, control_variate: bool = False,
                     seed=None) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Algorithm 1 with the paper's Sec. 5 weights: ``(g, g_u, Z, transitions)``, the estimates of
    ``d/dw_A`` and ``d/dw_u`` of ``log sum_z pi~(z | x) weight(z)`` being ``g / Z`` and ``g_u / Z``
    (see :func:`experiments.doeblin_gestures._kernels.doeblin_path_gradient`); ``n_chains`` chains of
    Geometric(eps) length (mean 1/eps - 1 transitions). ``control_variate=True`` subtracts, from the
    coefficient of each transition's score ``dlog A(z_s | z_{s-1})`` (and of ``dlog u(z_0)``), the
    weight the rest of the path would collect at the other chains' mean weight (leave-one-out, so it
    needs ``n_chains >= 2``); the expectation of ``g`` is unchanged (the score has conditional mean
    0), its variance is far lower."""
    x = model.check_x(x)
    word = encode(word) if isinstance(word, str) else np.ascontiguousarray(as_int_array(word, "word", ndim=1, low=0, high=model.K))
    eps = check_float(eps, "eps", low=0.0, high=1.0, low_open=True)
    n_chains = check_int(n_chains, "n_chains", low=1)
    return doeblin_path_gradient(model.chain(x), word, eps, n_chains, bool(control_variate), kernel_seed(seed))


def train_gestures(model: GestureModel, data, method: str, n_steps: int, *, n_chains: int = 16,
                   n_epochs: int = 2, lr: float = 0.1, seed=None, doeblin_estimator: str = "algorithm1",
                   train_u: bool = False, on_epoch: Callable[[int, GestureModel], None] | None = None) -> GestureModel:
    """Train the weights with ``method``'s sampler at ``n_steps`` transitions per chain (AdaGrad,
    one step per example, ``n_chains`` chains per example; 16 in the paper).

    basic-gibbs and u-gibbs use the paper's Sec. 5 plug-in gradient ``E_w[phi] - E[phi]`` over the
    post-burn-in samples, ``w = exp(-(D + 1))`` for a wrong word at edit distance D (1 for the right
    word), for A's weights; ``u`` is left as given. doeblin (and doeblin-restarts, which differs only
    at test time) uses, as in the paper, Algorithm 1 with those weights (:func:`doeblin_gradient`,
    eps = 1 / n_steps, so a chain makes n_steps - 1 transitions on average) for A's weights and, if
    ``train_u``, also u's (Algorithm 1's ``dlog u(z_0)`` term; u and A have disjoint weights,
    Assumption 4.3; off by default, so every method keeps the same fitted u); the same with the
    leave-one-out control variate for ``doeblin_estimator="algorithm1-cv"``; or the plug-in gradient
    over its own samples for ``doeblin_estimator="contrastive"`` (an ablation, A only).
    ``on_epoch(epoch, model)`` (if given) is called after each epoch (1-based) with a copy.
    """
    data = _check_data(data, model)
    n_epochs = check_int(n_epochs, "n_epochs", low=0)
    if doeblin_estimator not in GRADIENTS:
        raise ValueError(f"doeblin_estimator must be one of {GRADIENTS}, got {doeblin_estimator!r}")
    path_gradient = method.startswith("doeblin") and doeblin_estimator != "contrastive"
    gen = as_generator(seed)
    opt = AdaGrad(model.n_full, lr=lr)
    opt_u = AdaGrad(model.n_base, lr=lr)
    out = model.with_weights(model.w_u, model.w_A)
    for epoch in range(1, n_epochs + 1):
        for i in gen.permutation(len(data)):
            x, y = data[i]
            if path_gradient:
                g, g_u, Z, _ = doeblin_gradient(out, x, y, 1.0 / n_steps, n_chains, seed=gen,
                                                control_variate=doeblin_estimator == "algorithm1-cv")
                grad = g / Z
                if train_u:
                    out.w_u = opt_u.step(out.w_u, g_u / Z)
            else:
                samples = out.run_chains(x, method, n_steps, n_chains, seed=gen)
                grad = _sampled_gradient(out, x, y, samples, rich=True)
            out.w_A = opt.step(out.w_A, grad)
        if on_epoch is not None:
            on_epoch(epoch, out.with_weights(out.w_u, out.w_A))
    return out


def char_accuracy(output: Sequence[int], truth: Sequence[int]) -> float:
    """Character accuracy of one output word: positions j with ``output[j] == truth[j]`` divided by
    ``max(len(output), len(truth))`` (so extra letters count as errors; 1 iff the words are equal)."""
    n = max(len(output), len(truth))
    return sum(a == b for a, b in zip(output, truth)) / n if n else 1.0


ACCURACIES = ("word_acc", "char_acc", "sample_word_acc", "sample_char_acc")


def per_example_accuracy(model: GestureModel, data, method: str, n_steps: int, *, n_chains: int = 16,
                         seed=None) -> dict[str, np.ndarray]:
    """Accuracies (n_examples,) per test example for ``method`` at ``n_steps`` transitions.

    ``sample_word_acc`` / ``sample_char_acc``: the paper's measures (Sec. 5), the fraction of
    post-burn-in samples (pooled over ``n_chains`` chains) whose word is right, and their mean
    :func:`char_accuracy`. ``word_acc`` / ``char_acc``: the same for the **most frequent output word**
    among those samples (a decoded prediction).
    """
    data = _check_data(data, model)
    gen = as_generator(seed)
    out = {name: np.empty(len(data)) for name in ACCURACIES}
    for e, (x, y) in enumerate(data):
        samples = model.run_chains(x, method, n_steps, n_chains, seed=gen)
        counts = Counter(model.output_words(samples))
        truth = tuple(int(c) for c in y)
        best = counts.most_common(1)[0][0]
        out["word_acc"][e] = best == truth
        out["char_acc"][e] = char_accuracy(best, truth)
        out["sample_word_acc"][e] = counts[truth] / samples.shape[0]
        out["sample_char_acc"][e] = sum(n * char_accuracy(w, truth) for w, n in counts.items()) / samples.shape[0]
    return out


def evaluate_gestures(model: GestureModel, data, method: str, n_steps: int, *, n_chains: int = 16,
                      seed=None) -> dict[str, float]:
    """Mean of each of :func:`per_example_accuracy`'s accuracies and its standard error over the test
    examples (keys ``name`` and ``name_se``; the se is 0 for a single example)."""
    acc = per_example_accuracy(model, data, method, n_steps, n_chains=n_chains, seed=seed)
    out = {}
    for name, v in acc.items():
        out[name] = float(v.mean())
        out[name + "_se"] = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
    return out
