"""Structured distributions in torch-struct's shape over the rdp kernels: chains, tree CRFs and PCFGs.

One object per structure, built from log potentials in torch-struct's layout and optional per-sentence
``lengths`` (ragged batches), with ``.partition``, ``.marginals``, ``.entropy``, ``.max``, ``.argmax``
(cached properties), ``.sample(sample_shape)`` and ``.log_prob(event)``:

* :class:`LinearChainCRF` -- ``log_potentials`` (B, N-1, C, C), ``[b, n, c_next, c_prev]`` scoring state
  ``c_prev`` at position n followed by ``c_next`` at n + 1 (torch-struct's ``LinearChainCRF``); events
  are one-hot edges of the same shape.  Runs :mod:`rdp.chain` with zero emissions and the transposed
  potentials as per-step transitions.
* :class:`TreeCRF` -- span potentials (B, N, N, NT), ``[b, i, j, k]`` label k on span (i, j) (torch-struct's
  ``TreeCRF``); events are one-hot labelled spans (B, N, N, NT).  Runs :mod:`rdp.tree` as it is.
* :class:`SentCFG` -- ``(terms (B, N, T), rules (B, NT, NT+T, NT+T), roots (B, NT))`` (torch-struct's
  ``SentCFG``: NT nonterminals, T preterminals, a rule ``A -> B C`` whose children are nonterminals
  (indices < NT) or preterminals (indices >= NT)); events are the rule counts of a parse
  (:class:`CFGParts`).  Runs :mod:`rdp.pcfg` on the NT + T symbols, the rules a grammar of this shape
  lacks (preterminal parents, nonterminal leaves, preterminal roots) given :func:`log_zero`.

The method is one argument: ``method="exact"`` (default) or ``method=RDP(k1, k2, proposal)``, the
randomized DPs of Fu et al. (ICML 2022) on the same layout -- switching is a one-word change.  Under
``RDP``, ``.partition`` is ``log Z-hat`` (its exp is unbiased for Z, Theorem A.1), ``.entropy`` the
randomized entropy DP (Alg. 3), ``.sample`` the randomized Gumbel sampler (Alg. 4 / top-down on trees),
``.marginals`` the gradient of ``log Z-hat`` (the marginals of the reweighted sparse distribution the
estimate sums, not differentiable twice for trees) and ``.log_prob`` ``score - log Z-hat``; ``.max``
and ``.argmax`` stay exact (RDP defines no randomized max).  Each property draws its own index sets,
once (properties are cached).  The free functions (:func:`rdp.chain_log_partition` ...) are the layer
below and stay as they are.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, NamedTuple

from samplers.validation import check_int

from ._checks import as_potentials, check_budget, check_generator, check_lengths
from ._torch import torch
from .chain import chain_entropy, chain_log_partition, chain_sample, chain_viterbi
from .pcfg import pcfg_entropy, pcfg_gumbel_sample, pcfg_log_partition, pcfg_viterbi
from .randomized_chain import randomized_chain_entropy, randomized_chain_gumbel_sample, randomized_chain_log_partition
from .randomized_pcfg import randomized_pcfg_entropy, randomized_pcfg_gumbel_sample, randomized_pcfg_log_partition
from .randomized_tree import randomized_tree_entropy, randomized_tree_gumbel_sample, randomized_tree_log_partition
from .tree import inside_on_sets, tree_entropy, tree_gumbel_sample, tree_viterbi

EXACT = "exact"


class RDP(NamedTuple):
    """The randomized estimators as a distribution's ``method``: per DP site the top ``k1`` states of the
    proposal plus ``k2`` sampled with replacement (Eq. 5-7), ``1 <= k1 + k2 <=`` the number of states.

    Attributes
    ----------
    k1, k2 : int
        Top and sampled states per site (``k2 = 0``: Top-K; ``k1 + k2 =`` all states: exact).
    proposal : str, Tensor or callable, optional
        As in :mod:`rdp.proposals`; None takes the free function's default (chains ``"local+global"``,
        trees ``"uniform"``) and, for :class:`SentCFG`, the uniform proposal over the symbols a span can
        hold (preterminals on single words, nonterminals above).
    generator : torch.Generator, optional
        Source of the draws (index sets and Gumbel noise), on the potentials' device.
    """

    k1: int
    k2: int
    proposal: Any = None
    generator: "torch.Generator | None" = None


class CFGParts(NamedTuple):
    """A parse of :class:`SentCFG` as rule counts (torch-struct's ``to_parts`` layout), or expected counts.

    Attributes
    ----------
    terms : Tensor (..., B, N, T)
        ``[b, i, t]``: preterminal t emits word i.
    rules : Tensor (..., B, NT, NT+T, NT+T)
        ``[b, A, B, C]``: count of the rule A -> B C.
    roots : Tensor (..., B, NT)
        ``[b, A]``: the root is A.
    """

    terms: "torch.Tensor"
    rules: "torch.Tensor"
    roots: "torch.Tensor"


def log_zero(dtype: "torch.dtype") -> float:
    """A log weight standing for log 0: ``-sqrt(finfo(dtype).max)`` (-1.8e19 in float32, -1.3e154 in float64).

    Its exp is exactly 0 next to any finite score, so sums over structures are exact; unlike ``-inf`` a
    log-sum-exp over masked entries only stays finite and its gradient is 0, not NaN, and sums of up to
    ``sqrt(max)`` such entries cannot overflow.
    """
    return -math.sqrt(torch.finfo(dtype).max)


def identity_precision(tensors: "tuple[torch.Tensor, ...]") -> "tuple[torch.Tensor, ...]":
    """The potentials in float64 when they are in a lower precision (differentiably).

    Tree and PCFG entropies come from the identity ``H = log Z - sum theta . dlogZ/dtheta``
    (:func:`rdp.tree.entropy_from_log_partition`), a difference of two numbers of the size of log Z: in
    float32 at scores of magnitude 1e3 (log Z ~ 1e4) it loses several nats to cancellation, so it is
    evaluated in float64 and the result cast back (chains use the entropy DP, which needs no promotion).
    """
    return tuple(x.double() if torch.finfo(x.dtype).eps > torch.finfo(torch.float64).eps else x for x in tensors)


def check_method(method: Any) -> "RDP | None":
    """``"exact"`` -> None; an :class:`RDP` with integer ``k1, k2 >= 0`` -> itself; anything else: an error
    naming ``method``."""
    if isinstance(method, str) and method == EXACT:
        return None
    if not isinstance(method, RDP):
        raise TypeError(f"method must be 'exact' or rdp.RDP(k1, k2, proposal), got {method!r}")
    check_int(method.k1, "k1", low=0)
    check_int(method.k2, "k2", low=0)
    return method


def _sample_size(sample_shape: Any) -> tuple[tuple[int, ...], int]:
    """``sample_shape`` (an int or a tuple of positive ints) as a tuple and its product; errors name it."""
    if isinstance(sample_shape, int):
        sample_shape = (sample_shape,)
    try:
        shape = tuple(int(s) for s in sample_shape)
    except (TypeError, ValueError):
        raise TypeError(f"sample_shape must be an int or a tuple of ints, got {sample_shape!r}") from None
    if any(s < 1 for s in shape):
        raise ValueError(f"sample_shape must hold positive sizes, got {shape}")
    return shape, math.prod(shape)


def _repeat(x: "torch.Tensor", n: int) -> "torch.Tensor":
    """(B, ...) -> (n * B, ...): n copies of the batch, copy-major (sample s, item b at s * B + b)."""
    return x.unsqueeze(0).expand(n, *x.shape).reshape(n * x.shape[0], *x.shape[1:])


def _one_hot(labels: "torch.Tensor", n: int, dtype: "torch.dtype") -> "torch.Tensor":
    """One-hot rows of ``labels`` over n classes, all-zero rows where ``labels`` is -1."""
    hot = torch.nn.functional.one_hot(labels.clamp_min(0), n).to(dtype)
    return hot * (labels >= 0).unsqueeze(-1).to(dtype)


class StructDistribution:
    """What the three structured distributions share: validation, caching, sampling shape and ``log_prob``.

    A subclass states its structure through ``_tensors`` (the potentials), ``_log_partition(tensors)``,
    ``_entropy``, ``_argmax_event``, ``_draw(n, generator)`` (n events per item, copy-major) and
    ``_score(event)``; marginals are gradients of the log partition with respect to ``_tensors``.
    """

    _tensors: tuple
    _proposal_rank = 4       # a per-site proposal tensor: (B, N, N, states) on trees, (B, N, C) on chains

    def __init__(self, lengths: Any, method: Any, batch: int, max_length: int, n_states: int, device):
        self.lengths = check_lengths(lengths, batch, max_length, device)
        self.method = method
        self._rdp = check_method(method)
        if self._rdp is not None:
            check_budget(self._rdp.k1, self._rdp.k2, n_states)
        self.batch_shape = torch.Size([batch])

    # the public face -------------------------------------------------------------------------------
    @cached_property
    def partition(self) -> "torch.Tensor":
        """log Z (B,) (``log Z-hat`` under :class:`RDP`), differentiable."""
        return self._log_partition(self._tensors)

    @cached_property
    def marginals(self):
        """Gradient of the log partition with respect to the potentials (same layout as the potentials):
        edge marginals for chains, span-label marginals for trees, expected rule counts for PCFGs."""
        create = any(t.requires_grad for t in self._tensors)
        with torch.enable_grad():
            leaves = [t if t.requires_grad else t.detach().requires_grad_(True) for t in self._tensors]
            log_z = self._log_partition(leaves, twice=create)
            grads = torch.autograd.grad(log_z.sum(), leaves, create_graph=create)
        return self._pack(grads)

    @cached_property
    def entropy(self) -> "torch.Tensor":
        """Entropy (B,) in nats (the randomized entropy DP under :class:`RDP`), differentiable (trees and
        PCFGs evaluate it in float64, see :func:`identity_precision`)."""
        return self._entropy()

    @cached_property
    def argmax(self):
        """The highest-scoring structure as an event (always exact)."""
        return self._argmax_event()

    @cached_property
    def max(self) -> "torch.Tensor":
        """Score (B,) of :attr:`argmax` (log potential of the best structure; differentiable)."""
        return self._score(self.argmax)

    def sample(self, sample_shape: Any = (), generator: "torch.Generator | None" = None):
        """Draw structures (exact sampling, or the randomized sampler under :class:`RDP`).

        Parameters
        ----------
        sample_shape : int or tuple of int
            Leading shape of the draws.  Exact chains draw them all from one forward pass
            (:func:`rdp.chain.chain_sample`); trees, PCFGs and the randomized samplers run each draw on its own
            copy of the batch (one batched DP).
        generator : torch.Generator, optional
            Source of the noise (default: the :class:`RDP`'s generator, else torch's global one).

        Returns
        -------
        Events of shape ``(*sample_shape, B, *event_shape)``, detached.
        """
        shape, n = _sample_size(sample_shape)
        if generator is None and self._rdp is not None:
            generator = self._rdp.generator
        generator = check_generator(generator, self.lengths.device)
        with torch.no_grad():
            return self._unflatten(self._draw(n, generator), shape)

    def log_prob(self, value: Any) -> "torch.Tensor":
        """``score(value) - partition``, shape ``(*sample_shape, B)`` for events ``(*sample_shape, B, *event_shape)``."""
        return self._score(value) - self.partition

    def score(self, value: Any) -> "torch.Tensor":
        """Log potential of events ``(*sample_shape, B, *event_shape)``: shape ``(*sample_shape, B)``."""
        return self._score(value)

    # shared helpers --------------------------------------------------------------------------------
    def _budget(self, n: int = 1) -> dict[str, Any]:
        """Keyword arguments of the randomized free functions for n copies of the batch (a per-item proposal
        tensor is repeated with them)."""
        rdp = self._rdp
        out = {"k1": rdp.k1, "k2": rdp.k2, "generator": rdp.generator}
        proposal = self._default_proposal() if rdp.proposal is None else rdp.proposal
        if isinstance(proposal, torch.Tensor) and n > 1 and proposal.dim() == self._proposal_rank \
                and proposal.shape[0] == self.batch_shape[0]:
            proposal = _repeat(proposal, n)
        if proposal is not None:
            out["proposal"] = proposal
        return out

    def _default_proposal(self):
        """The proposal when :class:`RDP` names none (None: the free function's default)."""
        return None

    def _pack(self, grads):
        return grads[0]

    def _score(self, value: Any) -> "torch.Tensor":
        """Events of one-hot parts in the layout of a single potential tensor (chains, trees): sum of products."""
        event = self._check_event(value, tuple(self.event_shape)).to(self.log_potentials.dtype)
        return (event * self.log_potentials).sum((-3, -2, -1))

    def _unflatten(self, events, shape):
        return events.reshape(*shape, *self.batch_shape, *events.shape[1:])

    def _check_event(self, value: Any, event_shape: tuple, name: str = "value") -> "torch.Tensor":
        value = torch.as_tensor(value, device=self.lengths.device)
        want = (*self.batch_shape, *event_shape)
        if value.dim() < len(want) or tuple(value.shape[value.dim() - len(want):]) != want:
            raise ValueError(f"{name} must have shape (*sample_shape, {', '.join(map(str, want))}), "
                             f"got {tuple(value.shape)}")
        return value


class LinearChainCRF(StructDistribution):
    """Linear-chain CRF in torch-struct's layout, over :mod:`rdp.chain` / :mod:`rdp.randomized_chain`.

    Parameters
    ----------
    log_potentials : Tensor (B, N-1, C, C)
        ``[b, n, c_next, c_prev]``: log potential of state ``c_prev`` at position n followed by ``c_next``
        at n + 1 (fold unary scores into the edges, as torch-struct does).
    lengths : LongTensor (B,), optional
        Sequence lengths in [1, N] (default N); item b uses edges 0..L_b - 2.
    method : "exact" or RDP
        Exact forward (scaled space unless the range is too wide, :func:`rdp.chain_log_partition`) or
        the randomized Forward / entropy DP / Gumbel sampling (Alg. 1, 3, 4).

    Events are one-hot edges (..., B, N-1, C, C), zero beyond each length.

    Examples
    --------
    >>> import torch, rdp
    >>> dist = rdp.LinearChainCRF(torch.zeros(2, 3, 2, 2), lengths=torch.tensor([4, 2]))
    >>> dist.partition  # 2^4 and 2^2 paths
    tensor([2.7726, 1.3863])
    """

    _proposal_rank = 3

    def __init__(self, log_potentials: Any, lengths: Any = None, method: Any = EXACT):
        self.log_potentials = as_potentials(log_potentials, "log_potentials", ndim=4)
        batch, edges, c, c2 = self.log_potentials.shape
        if c != c2:
            raise ValueError(f"log_potentials must have shape (B, N-1, C, C), got {tuple(self.log_potentials.shape)}")
        super().__init__(lengths, method, batch, edges + 1, c, self.log_potentials.device)
        self.event_shape = self.log_potentials.shape[1:]
        self._tensors = (self.log_potentials,)

    def _chain(self, potentials: "torch.Tensor", n: int = 1) -> dict[str, Any]:
        """Free-function arguments: zero emissions (B, N, C), transitions ``[b, n, c_prev, c_next]``."""
        trans = potentials.transpose(-1, -2)
        lengths = self.lengths
        if n > 1:
            trans, lengths = _repeat(trans, n), _repeat(lengths, n)
        batch, edges, c, _ = trans.shape
        emissions = trans.new_zeros(batch, edges + 1, c)
        return {"emissions": emissions, "transitions": trans, "lengths": lengths}

    def _log_partition(self, tensors, twice: bool = False) -> "torch.Tensor":
        args = self._chain(tensors[0])
        if self._rdp is None:
            return chain_log_partition(**args, method="log" if twice else "auto")
        return randomized_chain_log_partition(**args, **self._budget())

    def _entropy(self) -> "torch.Tensor":
        args = self._chain(self.log_potentials)
        if self._rdp is None:
            return chain_entropy(**args)
        return randomized_chain_entropy(**args, **self._budget())

    def _event(self, path: "torch.Tensor") -> "torch.Tensor":
        """State paths (M, N) (-1 beyond each length) -> one-hot edges (M, N-1, C, C)."""
        c = self.event_shape[-1]
        prev, nxt = path[:, :-1], path[:, 1:]
        code = torch.where(nxt >= 0, nxt * c + prev.clamp_min(0), torch.full_like(nxt, -1))
        return _one_hot(code, c * c, self.log_potentials.dtype).reshape(path.shape[0], -1, c, c)

    def _argmax_event(self) -> "torch.Tensor":
        _, path = chain_viterbi(**self._chain(self.log_potentials))
        return self._event(path)

    def _draw(self, n: int, generator) -> "torch.Tensor":
        if self._rdp is None:  # one forward pass, n backward passes (copy-major like the batch copies below)
            paths = chain_sample(**self._chain(self.log_potentials.detach()), n_samples=n, generator=generator).paths
            return self._event(paths.reshape(-1, paths.shape[-1]))
        args = self._chain(self.log_potentials.detach(), n)
        budget = {**self._budget(n), "generator": generator}
        return self._event(randomized_chain_gumbel_sample(**args, **budget).hard)


class TreeCRF(StructDistribution):
    """Span-labelled tree CRF (0th-order span parser) in torch-struct's layout, over :mod:`rdp.tree`.

    Parameters
    ----------
    log_potentials : Tensor (B, N, N, NT)
        ``[b, i, j, k]``: log potential of label k on span (i, j), i <= j (the rest is not read).
    lengths : LongTensor (B,), optional
        Sentence lengths in [1, N] (default N); item b is a binary tree over 0..L_b - 1, rooted at the
        span (0, L_b - 1); spans beyond L_b get zero marginals and are never sampled.
    method : "exact" or RDP
        Exact inside (Alg. 2 with all labels) or the randomized Inside on label index sets per span.

    Events are one-hot labelled spans (..., B, N, N, NT), zero off the tree.

    Examples
    --------
    >>> import torch, rdp
    >>> rdp.TreeCRF(torch.zeros(2, 3, 3, 1), lengths=torch.tensor([3, 2])).partition  # 2 trees, 1 tree
    tensor([0.6931, 0.0000])
    """

    def __init__(self, log_potentials: Any, lengths: Any = None, method: Any = EXACT):
        self.log_potentials = as_potentials(log_potentials, "log_potentials", ndim=4)
        batch, n, n2, nt = self.log_potentials.shape
        if n != n2:
            raise ValueError(f"log_potentials must have shape (B, N, N, NT), got {tuple(self.log_potentials.shape)}")
        super().__init__(lengths, method, batch, n, nt, self.log_potentials.device)
        self.event_shape = self.log_potentials.shape[1:]
        self._tensors = (self.log_potentials,)

    def _log_partition(self, tensors, twice: bool = False) -> "torch.Tensor":
        if self._rdp is None:
            return inside_on_sets(tensors[0], double_backward=twice, lengths=self.lengths)
        return randomized_tree_log_partition(tensors[0], lengths=self.lengths, **self._budget())

    def _entropy(self) -> "torch.Tensor":
        (spans,) = identity_precision(self._tensors)
        if self._rdp is None:
            entropy = tree_entropy(spans, self.lengths)
        else:
            entropy = randomized_tree_entropy(spans, lengths=self.lengths, **self._budget())
        return entropy.to(self.log_potentials.dtype)

    def _event(self, hard: "torch.Tensor") -> "torch.Tensor":
        return _one_hot(hard, self.event_shape[-1], self.log_potentials.dtype)

    def _argmax_event(self) -> "torch.Tensor":
        return self._event(tree_viterbi(self.log_potentials.detach(), self.lengths).hard)

    def _draw(self, n: int, generator) -> "torch.Tensor":
        spans, lengths = _repeat(self.log_potentials.detach(), n), _repeat(self.lengths, n)
        if self._rdp is None:
            return self._event(tree_gumbel_sample(spans, lengths, generator=generator).hard)
        budget = {**self._budget(n), "generator": generator}
        return self._event(randomized_tree_gumbel_sample(spans, lengths=lengths, **budget).hard)


class SentCFG(StructDistribution):
    """A CNF grammar over sentences in torch-struct's ``SentCFG`` layout, over :mod:`rdp.pcfg`.

    Parameters
    ----------
    log_potentials : tuple (terms, rules, roots)
        ``terms`` (B, N, T): preterminal t emits word i; ``rules`` (B, NT, NT+T, NT+T) (or (NT, NT+T, NT+T)):
        A -> B C with children indexed nonterminals first, then preterminals; ``roots`` (B, NT) (or (NT,)).
    lengths : LongTensor (B,), optional
        Sentence lengths in [2, N] (default N; a one-word sentence has no parse: the root is a
        nonterminal and only preterminals emit words).
    method : "exact" or RDP
        Exact inside or the randomized Inside (Alg. 2) on symbol index sets per span; the budget
        ``k1 + k2`` counts the NT + T symbols (``k1 >= max(NT, T)`` is exact).

    The grammar runs on the NT + T symbols of :mod:`rdp.pcfg` with :func:`log_zero` for preterminal
    parents, nonterminal leaves and preterminal roots.  Events are :class:`CFGParts` (rule counts);
    :attr:`marginals` are expected counts in the same layout.
    """

    def __init__(self, log_potentials: Any, lengths: Any = None, method: Any = EXACT):
        if not isinstance(log_potentials, (tuple, list)) or len(log_potentials) != 3:
            raise TypeError("log_potentials must be a tuple (terms (B, N, T), rules (B, NT, NT+T, NT+T), "
                            "roots (B, NT))")
        terms = as_potentials(log_potentials[0], "terms", ndim=3)
        batch, n, t = terms.shape
        rules = as_potentials(log_potentials[1], "rules", ndim=(3, 4))
        nt = rules.shape[-3]
        if tuple(rules.shape[-2:]) != (nt + t, nt + t) or (rules.dim() == 4 and rules.shape[0] != batch):
            raise ValueError(f"rules must have shape (B, NT, NT+T, NT+T) with T={t} (from terms), B={batch}; "
                             f"got {tuple(rules.shape)}")
        roots = as_potentials(log_potentials[2], "roots", ndim=(1, 2))
        if roots.shape[-1] != nt or (roots.dim() == 2 and roots.shape[0] != batch):
            raise ValueError(f"roots must have shape (B, NT) with NT={nt}, B={batch}; got {tuple(roots.shape)}")
        rules = rules if rules.dim() == 4 else rules.unsqueeze(0).expand(batch, -1, -1, -1)
        roots = roots if roots.dim() == 2 else roots.unsqueeze(0).expand(batch, -1)
        if n < 2:
            raise ValueError(f"terms must cover N >= 2 words (a one-word sentence has no parse), got N={n}")
        super().__init__(lengths, method, batch, n, nt + t, terms.device)
        if bool((self.lengths < 2).any()):
            raise ValueError(f"lengths must be >= 2 for SentCFG (a one-word sentence has no parse: the root is a "
                             f"nonterminal and only preterminals emit words), got {self.lengths.tolist()}")
        self.log_potentials = CFGParts(terms, rules, roots)
        self.n_nonterminals, self.n_preterminals = nt, t
        self.event_shape = torch.Size([n, n, nt + t])
        self._tensors = (terms, rules, roots)

    def _symbols(self, terms, rules, roots, n: int = 1):
        """The grammar on S = NT + T symbols: rules (B, S, S, S), terminals (B, N, S), roots (B, S)."""
        dtype, nt, t = terms.dtype, self.n_nonterminals, self.n_preterminals
        zero = log_zero(dtype)
        batch, length = terms.shape[:2]
        rules = torch.cat([rules.to(dtype), rules.new_full((batch, t, nt + t, nt + t), zero, dtype=dtype)], dim=1)
        terms = torch.cat([terms.new_full((batch, length, nt), zero), terms], dim=-1)
        roots = torch.cat([roots.to(dtype), roots.new_full((batch, t), zero, dtype=dtype)], dim=-1)
        lengths = self.lengths
        if n > 1:
            rules, terms, roots, lengths = _repeat(rules, n), _repeat(terms, n), _repeat(roots, n), _repeat(lengths, n)
        return rules, terms, roots, lengths

    def _valid_symbols(self) -> "torch.Tensor":
        """The default RDP proposal (B, N, N, S): uniform over preterminals on words, nonterminals above."""
        terms = self.log_potentials.terms
        batch, n, _ = terms.shape
        nt = self.n_nonterminals
        q = terms.new_zeros(batch, n, n, nt + self.n_preterminals)
        q[..., :nt] = 1.0
        diag = torch.arange(n, device=terms.device)
        q[:, diag, diag, :nt] = 0.0
        q[:, diag, diag, nt:] = 1.0
        return q

    def _default_proposal(self) -> "torch.Tensor":
        return self._valid_symbols()

    def _pack(self, grads):
        return CFGParts(*grads)

    def _log_partition(self, tensors, twice: bool = False) -> "torch.Tensor":
        args = self._symbols(*tensors)
        if self._rdp is None:
            return pcfg_log_partition(*args)
        rules, terms, roots, lengths = args
        return randomized_pcfg_log_partition(rules, terms, roots, lengths=lengths, **self._budget())

    def _entropy(self) -> "torch.Tensor":
        rules, terms, roots, lengths = self._symbols(*identity_precision(self._tensors))
        if self._rdp is None:
            entropy = pcfg_entropy(rules, terms, roots, lengths)
        else:
            entropy = randomized_pcfg_entropy(rules, terms, roots, lengths=lengths, **self._budget())
        return entropy.to(self.log_potentials.terms.dtype)

    def _event(self, labels: "torch.Tensor", lengths: "torch.Tensor") -> CFGParts:
        """Span labels (M, N, N) over the S symbols (-1 off the tree) -> rule counts (:class:`CFGParts`).

        The left child of a wide span (i, j) of a binary bracketing is the longest span (i, m), m < j, in
        the tree; the right child is (m + 1, j).
        """
        batch, n, _ = labels.shape
        nt, t = self.n_nonterminals, self.n_preterminals
        dtype, device = self.log_potentials.terms.dtype, labels.device
        on = labels >= 0
        pos = torch.arange(n, device=device)
        ends = torch.where(on, pos.view(1, 1, n), torch.full_like(labels, -1)).cummax(dim=2).values
        left_end = torch.cat([torch.full_like(ends[:, :, :1], -1), ends[:, :, :-1]], dim=2)   # max m < j
        b, i, j = torch.nonzero(on & (pos.view(1, 1, n) > pos.view(1, n, 1)), as_tuple=True)
        m = left_end[b, i, j]
        rules = torch.zeros(batch, nt + t, nt + t, nt + t, dtype=dtype, device=device)
        rules.index_put_((b, labels[b, i, j], labels[b, i, m], labels[b, m + 1, j]),
                         torch.ones(b.shape[0], dtype=dtype, device=device), accumulate=True)
        leaves = torch.diagonal(labels, dim1=1, dim2=2)                                       # (M, N)
        terms = _one_hot(torch.where(leaves >= 0, leaves - nt, leaves), t, dtype)
        roots = _one_hot(labels[torch.arange(batch, device=device), 0, lengths - 1], nt, dtype)
        return CFGParts(terms, rules[:, :nt], roots)

    def _argmax_event(self) -> CFGParts:
        args = self._symbols(*(x.detach() for x in self._tensors))
        return self._event(pcfg_viterbi(*args).hard, self.lengths)

    def _draw(self, n: int, generator) -> CFGParts:
        rules, terms, roots, lengths = self._symbols(*(x.detach() for x in self._tensors), n=n)
        if self._rdp is None:
            labels = pcfg_gumbel_sample(rules, terms, roots, lengths, generator=generator)
        else:
            budget = {**self._budget(n), "generator": generator}
            labels = randomized_pcfg_gumbel_sample(rules, terms, roots, lengths=lengths, **budget)
        return self._event(labels, lengths)

    def _unflatten(self, events: CFGParts, shape) -> CFGParts:
        return CFGParts(*(x.reshape(*shape, *self.batch_shape, *x.shape[1:]) for x in events))

    def _score(self, value: Any) -> "torch.Tensor":
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            raise TypeError("value must be CFGParts (terms, rules, roots) counts, e.g. from .sample or .argmax")
        pots = self.log_potentials
        dims = (2, 3, 1)
        total = 0
        for name, part, pot, d in zip(CFGParts._fields, value, pots, dims):
            part = self._check_event(part, tuple(pot.shape[1:]), name=f"value.{name}").to(pot.dtype)
            total = total + (part * pot).sum(tuple(range(-d, 0)))
        return total
