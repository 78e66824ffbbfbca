"""Exchange word clustering (Martin, Liermann, Ney 1998) for class features and class-based TransMS.

Maximises the class bigram log-likelihood

    LL = sum_{c,d} N(c,d) log N(c,d)/N(c.) + sum_w N(w) log N(w)/N(.class(w))

over deterministic word-to-class maps, where the counts include the sentence boundary (one
boundary symbol with its own fixed class before and after every sentence).  Each pass visits the
words in order of decreasing frequency and moves each to the class that maximises LL (staying
put on ties), so LL never decreases across passes; classes are never emptied.  The kernel lives
in :mod:`trf.lm._cluster_kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from samplers.rng import as_generator
from samplers.validation import as_int_array, check_int
from trf.lm._cluster_kernels import BigramGraph, exchange_passes
from trf.lm.corpus import EncodedCorpus

__all__ = ["WordClasses", "exchange_clustering", "bigram_graph", "class_bigram_log_likelihood"]


@dataclass
class WordClasses:
    """Result of :func:`exchange_clustering`.

    Attributes
    ----------
    classes : int64 array (vocab_size,)
        Class of every word id.
    n_classes : int
    log_likelihood : float64 array (passes + 1,)
        Class bigram log-likelihood before the first pass and after each pass (non-decreasing).
    """

    classes: np.ndarray
    n_classes: int
    log_likelihood: np.ndarray

    def members(self) -> list[np.ndarray]:
        """Word ids of each class."""
        order = np.argsort(self.classes, kind="stable")
        bounds = np.searchsorted(self.classes[order], np.arange(self.n_classes + 1))
        return [order[bounds[c]:bounds[c + 1]] for c in range(self.n_classes)]


def bigram_graph(corpus: EncodedCorpus, vocab_size: int):
    """Successor and predecessor lists (CSR) of the word bigram counts, boundary symbol = ``vocab_size``.

    Returns ``(succ_ptr, succ_idx, succ_cnt, pred_ptr, pred_idx, pred_cnt)``.
    """
    lengths = corpus.lengths
    n = vocab_size + 1
    seq = np.full(corpus.tokens.size + len(corpus) + 1, vocab_size, dtype=np.int64)
    # layout: B w.. B w.. B ... B  (one boundary between consecutive sentences is both end and start)
    starts = np.cumsum(lengths + 1) - (lengths + 1) + 1
    inner = np.repeat(starts - corpus.offsets[:-1], lengths) + np.arange(corpus.tokens.size)
    seq[inner] = corpus.tokens
    key = seq[:-1] * n + seq[1:]
    uniq, cnt = np.unique(key, return_counts=True)
    prev, nxt = uniq // n, uniq % n
    succ_ptr = np.concatenate(([0], np.cumsum(np.bincount(prev, minlength=n))))
    order = np.lexsort((prev, nxt))
    pred_ptr = np.concatenate(([0], np.cumsum(np.bincount(nxt, minlength=n))))
    return (succ_ptr, nxt, cnt.astype(np.float64), pred_ptr, prev[order], cnt[order].astype(np.float64))


def _word_term(pred_ptr, pred_cnt) -> tuple[np.ndarray, float]:
    right = np.add.reduceat(pred_cnt, pred_ptr[:-1]) * (np.diff(pred_ptr) > 0)
    nz = right[right > 0]
    return right, float(np.sum(nz * np.log(nz)))


def exchange_clustering(corpus: EncodedCorpus, vocab_size: int, n_classes: int, *, seed=None,
                        max_passes: int = 10) -> WordClasses:
    """Cluster words into ``n_classes`` classes by the exchange algorithm.

    Parameters
    ----------
    corpus : EncodedCorpus
        Training sentences (ids in ``[0, vocab_size)``).
    vocab_size : int
        Number of word ids V (ids absent from ``corpus`` still get a class).
    n_classes : int
        Number of classes, ``1 <= n_classes <= vocab_size`` (200 in Sec. 7 of the TRF paper).
    seed : int, Generator or None
        Initial assignment: the ``n_classes`` most frequent words get distinct classes in a seeded
        random order, the others uniformly random classes.  Same seed, same result.
    max_passes : int
        Stop after this many passes or when a pass moves no word.

    Returns
    -------
    WordClasses
    """
    vocab_size = check_int(vocab_size, "vocab_size", low=1)
    n_classes = check_int(n_classes, "n_classes", low=1)
    if n_classes > vocab_size:
        raise ValueError(f"n_classes must be <= vocab_size ({vocab_size}), got {n_classes}")
    max_passes = check_int(max_passes, "max_passes", low=0)
    if not isinstance(corpus, EncodedCorpus):
        raise TypeError(f"corpus must be an EncodedCorpus, got {type(corpus).__name__}")
    as_int_array(corpus.tokens, "corpus.tokens", ndim=1, low=0, high=vocab_size)
    rng = as_generator(seed)
    graph = bigram_graph(corpus, vocab_size)
    succ_ptr, succ_idx, succ_cnt, pred_ptr, pred_idx, pred_cnt = graph
    word_left = np.add.reduceat(succ_cnt, succ_ptr[:-1]) * (np.diff(succ_ptr) > 0)
    word_right, word_term = _word_term(pred_ptr, pred_cnt)
    frequency = np.bincount(corpus.tokens, minlength=vocab_size)
    order = np.lexsort((np.arange(vocab_size), -frequency)).astype(np.int64)
    cls = np.empty(vocab_size + 1, dtype=np.int64)
    cls[order[:n_classes]] = rng.permutation(n_classes)
    cls[order[n_classes:]] = rng.integers(0, n_classes, size=vocab_size - n_classes)
    cls[vocab_size] = n_classes
    history = np.zeros(max_passes + 1)
    bundle = BigramGraph(succ_ptr, succ_idx.astype(np.int64), succ_cnt, pred_ptr, pred_idx.astype(np.int64), pred_cnt,
                         word_left, word_right)
    passes = exchange_passes(cls, n_classes, order, bundle, word_term, max_passes, history)
    return WordClasses(cls[:vocab_size].copy(), n_classes, history[:passes + 1].copy())


def class_bigram_log_likelihood(corpus: EncodedCorpus, vocab_size: int, classes) -> float:
    """The clustering objective for a given class map, computed directly in NumPy (a test oracle)."""
    classes = as_int_array(classes, "classes", ndim=1, low=0)
    n_classes = int(classes.max()) + 1
    cls = np.concatenate((classes, [n_classes]))
    succ_ptr, succ_idx, succ_cnt, _, _, _ = bigram_graph(corpus, vocab_size)
    prev = np.repeat(np.arange(vocab_size + 1), np.diff(succ_ptr))
    counts = np.zeros((n_classes + 1, n_classes + 1))
    np.add.at(counts, (cls[prev], cls[succ_idx]), succ_cnt)
    word_right = np.bincount(succ_idx, weights=succ_cnt, minlength=vocab_size + 1)

    def xlogx(x):
        x = x[x > 0]
        return float(np.sum(x * np.log(x)))

    return (xlogx(counts) - xlogx(counts.sum(axis=1)) - xlogx(counts.sum(axis=0)) + xlogx(word_right))
