"""A structured VAE whose inference network is a linear-chain CRF, trained with RDP (Sec. 4, 5.2 of the RDP paper).

Generative model (Sec. 4): latent states x = [x_1 .. x_T] (N states) and words y = [y_1 .. y_T],
``p(x, y) = prod_t p(x_t | x_<t, y_<t) p(y_t | x_t, x_<t, y_<t)`` with one LSTM decoder: the LSTM
reads ``[d(x_{t-1}); w(y_{t-1})]`` (decoder state and word embeddings) and its state h_t gives
``p(x_t | .) = softmax(W_x h_t)`` and ``p(y_t | x_t, .) = softmax(MLP([h_t; d(x_t)]))`` (the paper's
``LSTM(x_1:t, y_<t)`` feeds x_t through one more step; here x_t enters through the MLP).  Every
sentence ends with an end-of-sentence word, so p(y) is a distribution over sentences of all lengths.

Inference network (Eq. 29-31): ``q(x | y)`` is a linear-chain CRF with transition log potentials
``e_{x_{t-1}} . e_{x_t}`` (state embeddings e, Eq. 30) and emissions ``e_{x_t} . r_t`` where
``[r_1 .. r_T] = Enc(y)`` (Eq. 31).  The paper's encoder is a pretrained GPT-2, which cannot be
fetched here; the default is a BiLSTM (:class:`BiLSTMEncoder`) and the encoder is a constructor
argument, so any module mapping (tokens, lengths) to (B, T, D) features (a pretrained transformer
with an ``output_dim`` attribute) can be passed.

Training maximises the ELBO of Eq. 32, ``E_q[log p(x, y)] + H(q)``: the entropy by the exact entropy
DP (``FULL``) or the randomized entropy DP (Alg. 3), the first term through the relaxed Gumbel sample
x~ (Eq. 33) of exact Gumbel-FFBS (``FULL``) or randomized Gumbel backward sampling (Alg. 4).
Variants (:class:`Variant`): ``FULL``; ``TOPK`` (K2 = 0, Top-K summation); ``RDP`` (K1 top states
plus K2 sampled states per step, the paper's K1 = K2 = 10% of N by default).

Evaluation: test NLL by importance sampling with exact posterior samples of q as the proposal
(Kim et al. 2019; Sec. 5.2) with standard errors (:func:`importance_log_likelihood`), and the
aggregated posterior (state frequencies of posterior samples over a corpus, Fig. 2) with the number
of inactive states (:func:`aggregated_posterior`).  Exact posterior samples and log q come from rdp's
exact FFBS (:func:`rdp.chain.chain_sample` via :func:`posterior_samples`: one no-grad, memory-lean forward
pass for all S samples), so they run at N = 2,000 on CPU.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from rdp._torch import torch
from rdp.chain import ChainSamples, chain_entropy, chain_gumbel_sample, chain_sample
from rdp.randomized_chain import randomized_chain_entropy, randomized_chain_gumbel_sample
from samplers.validation import check_float, check_int

nn = torch.nn

PAD, UNK, EOS = "<pad>", "<unk>", "</s>"

__all__ = ["PAD", "UNK", "EOS", "Vocabulary", "SentenceData", "Variant", "BiLSTMEncoder", "StructuredVAE",
           "ElboTerms", "posterior_samples", "ImportanceEstimate", "importance_log_likelihood",
           "exact_log_likelihood", "aggregated_posterior", "TrainConfig", "train_vae", "evaluate_nll"]


# ---------------------------------------------------------------------------------------------- data
class Vocabulary:
    """Word <-> id map with ``<pad>`` = 0, ``<unk>`` = 1 and ``</s>`` = 2, then words by frequency.

    Parameters
    ----------
    words : sequence of str
        The ordinary words (without the three special symbols), most frequent first.
    """

    def __init__(self, words: Sequence[str]):
        self.itos = [PAD, UNK, EOS] + [w for w in words if w not in (PAD, UNK, EOS)]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("words must not contain duplicates")

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], max_size: int = 10000) -> "Vocabulary":
        """The ``max_size`` most frequent words of ``sentences`` (ties by first occurrence) plus the specials."""
        max_size = check_int(max_size, "max_size", low=1)
        counts = Counter(w for s in sentences for w in s)
        if not counts:
            raise ValueError("sentences must contain at least one word to build a vocabulary")
        return cls([w for w, _ in counts.most_common(max_size)])

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentences: Iterable[Sequence[str]]) -> "SentenceData":
        """Encode token lists (unknown words -> ``<unk>``), appending ``</s>``; see :class:`SentenceData`."""
        unk, eos = self.stoi[UNK], self.stoi[EOS]
        rows = [[self.stoi.get(w, unk) for w in s] + [eos] for s in sentences]
        if not rows:
            raise ValueError("sentences is empty: nothing to encode")
        lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
        tokens = torch.zeros((len(rows), int(lengths.max())), dtype=torch.long)
        for i, r in enumerate(rows):
            tokens[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        return SentenceData(tokens, lengths, len(self))


class SentenceData(NamedTuple):
    """A padded corpus: ``tokens`` (M, T) word ids (0 = padding), ``lengths`` (M,), ``vocab_size``."""

    tokens: "torch.Tensor"
    lengths: "torch.Tensor"
    vocab_size: int

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def batch(self, index: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
        """Rows ``index``, trimmed to their longest sentence."""
        lengths = self.lengths[index]
        return self.tokens[index, :int(lengths.max())], lengths

    def subset(self, n: int) -> "SentenceData":
        """The first ``n`` sentences."""
        n = check_int(n, "n", low=1)
        lengths = self.lengths[:n]
        return SentenceData(self.tokens[:n, :int(lengths.max())], lengths, self.vocab_size)


# ------------------------------------------------------------------------------------------ variants
@dataclass(frozen=True)
class Variant:
    """How the ELBO's expectations are computed: ``"full"`` (exact DPs), ``"topk"`` or ``"rdp"`` with K1, K2.

    Use :meth:`full`, :meth:`topk`, :meth:`rdp` or :meth:`from_fractions`.  ``topk`` is RDP with
    ``k2 = 0`` (Sun et al. 2019); ``rdp`` with ``k1 + k2 = N`` reproduces ``full`` exactly.
    """

    kind: str
    k1: int = 0
    k2: int = 0
    proposal: str = "local+global"
    method: str = "auto"

    def __post_init__(self):
        if self.kind not in ("full", "topk", "rdp"):
            raise ValueError(f"variant kind must be 'full', 'topk' or 'rdp', got {self.kind!r}")
        if self.method not in ("auto", "scaled", "log"):
            raise ValueError(f"variant method must be 'auto', 'scaled' or 'log', got {self.method!r}")
        if self.kind != "full":
            k1 = check_int(self.k1, "k1", low=0)
            k2 = check_int(self.k2, "k2", low=0)
            if self.kind == "topk" and (k2 != 0 or k1 < 1):
                raise ValueError(f"a topk variant needs k1 >= 1 and k2 = 0, got k1={k1}, k2={k2}")
            if self.kind == "rdp" and k1 + k2 < 1:
                raise ValueError("an rdp variant needs k1 + k2 >= 1")

    @classmethod
    def full(cls, method: str = "auto") -> "Variant":
        """Exact DPs; ``method`` as in :func:`rdp.chain_entropy` (``"log"``: the textbook log-space DP whose
        autograd memory is O(B T N^2); ``"auto"``/``"scaled"``: the scaled-space DP of :mod:`rdp.fast_chain`)."""
        return cls("full", method=method)

    @classmethod
    def topk(cls, k: int) -> "Variant":
        return cls("topk", k, 0)

    @classmethod
    def rdp(cls, k1: int, k2: int, proposal: str = "local+global") -> "Variant":
        return cls("rdp", k1, k2, proposal)

    @classmethod
    def from_fractions(cls, kind: str, n_states: int, budget: float = 0.2, k1_share: float = 0.5) -> "Variant":
        """A variant for N states with K = round(budget N) split as K1 = round(k1_share K), K2 = K - K1.

        ``kind="rdp", budget=0.2, k1_share=0.5`` is the paper's K1 = K2 = 10% of N; ``kind="topk"``
        keeps all K as top states.
        """
        n_states = check_int(n_states, "n_states", low=1)
        budget = check_float(budget, "budget", low=0.0, high=1.0, low_open=True)
        k1_share = check_float(k1_share, "k1_share", low=0.0, high=1.0)
        if kind == "full":
            return cls.full()
        k = max(1, round(budget * n_states))
        if kind == "topk":
            return cls.topk(k)
        k1 = round(k1_share * k)
        return cls.rdp(k1, k - k1)

    @property
    def label(self) -> str:
        if self.kind == "full":
            return "FULL" if self.method == "auto" else f"FULL({self.method})"
        return f"{self.kind.upper()}(K1={self.k1},K2={self.k2})"

    def check(self, n_states: int) -> None:
        """Raise ``ValueError`` when K1 + K2 exceeds the number of states."""
        if self.kind != "full" and self.k1 + self.k2 > n_states:
            raise ValueError(f"variant {self.label}: k1 + k2 = {self.k1 + self.k2} exceeds the number of "
                             f"states N = {n_states}")


# ----------------------------------------------------------------------------------------- networks
class BiLSTMEncoder(nn.Module):
    """Bidirectional LSTM over word embeddings: (tokens (B, T), lengths (B,)) -> features (B, T, 2 H).

    The stand-in for the paper's pretrained GPT-2 encoder (Sec. 5.2).  Any replacement needs the same
    call signature and an ``output_dim`` attribute (and ``vocab_size`` if it has its own vocabulary).
    """

    def __init__(self, vocab_size: int, embed_dim: int = 64, hidden_size: int = 64):
        super().__init__()
        self.vocab_size = check_int(vocab_size, "vocab_size", low=3)
        self.embed = nn.Embedding(vocab_size, check_int(embed_dim, "embed_dim", low=1), padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, check_int(hidden_size, "hidden_size", low=1), batch_first=True,
                            bidirectional=True)
        self.output_dim = 2 * hidden_size

    def forward(self, tokens: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=tokens.shape[1])
        return out


class ElboTerms(NamedTuple):
    """Per-sentence ELBO (Eq. 32) and its two terms, each (B,): ``elbo = log_joint + entropy``."""

    elbo: "torch.Tensor"
    log_joint: "torch.Tensor"
    entropy: "torch.Tensor"


class StructuredVAE(nn.Module):
    """LSTM decoder p(x, y) and linear-chain CRF inference network q(x | y) (Sec. 4 of the RDP paper).

    Parameters
    ----------
    vocab_size : int
        Number of word ids (including ``<pad>``, ``<unk>``, ``</s>``; see :class:`Vocabulary`).
    n_states : int
        N, the number of latent states.
    state_dim : int
        Dimension of the CRF state embeddings e_i (Eq. 30).
    encoder : nn.Module, optional
        ``encoder(tokens, lengths) -> (B, T, encoder.output_dim)`` (Eq. 31); default
        :class:`BiLSTMEncoder` with ``encoder_hidden`` units per direction.
    word_dim, hidden_size : int
        Decoder word/state embedding size and LSTM width (the paper: 256 hidden units).

    Examples
    --------
    >>> import torch, experiments.rdp_vae.model as V
    >>> vocab = V.Vocabulary(["a", "b"])
    >>> data = vocab.encode([["a", "b"], ["b"]])
    >>> model = V.StructuredVAE(len(vocab), n_states=4, state_dim=8, word_dim=8, hidden_size=8)
    >>> terms = model.elbo(data.tokens, data.lengths, V.Variant.rdp(1, 1), generator=torch.Generator().manual_seed(0))
    >>> terms.elbo.shape
    torch.Size([2])
    """

    def __init__(self, vocab_size: int, n_states: int, *, state_dim: int = 64, encoder: "nn.Module | None" = None,
                 encoder_hidden: int = 64, word_dim: int = 64, hidden_size: int = 128):
        super().__init__()
        self.vocab_size = check_int(vocab_size, "vocab_size", low=3)
        self.n_states = check_int(n_states, "n_states", low=1)
        state_dim = check_int(state_dim, "state_dim", low=1)
        word_dim = check_int(word_dim, "word_dim", low=1)
        hidden_size = check_int(hidden_size, "hidden_size", low=1)
        if encoder is None:
            encoder = BiLSTMEncoder(vocab_size, word_dim, check_int(encoder_hidden, "encoder_hidden", low=1))
        if not isinstance(encoder, nn.Module) or not isinstance(getattr(encoder, "output_dim", None), int):
            raise TypeError("encoder must be a torch.nn.Module with an integer output_dim attribute")
        enc_vocab = getattr(encoder, "vocab_size", None)
        if enc_vocab is not None and enc_vocab != vocab_size:
            raise ValueError(f"vocabulary mismatch: the encoder has vocab_size {enc_vocab} but the model {vocab_size}")
        self.encoder = encoder
        self.config = {"vocab_size": vocab_size, "n_states": n_states, "state_dim": state_dim, "word_dim": word_dim,
                       "hidden_size": hidden_size}
        # inference network (Eq. 29-31)
        self.to_query = nn.Linear(encoder.output_dim, state_dim)
        self.state_embeddings = nn.Parameter(torch.randn(n_states, state_dim) / math.sqrt(state_dim))
        # generative model (Sec. 4)
        self.word_embed = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        self.state_embed = nn.Parameter(torch.randn(n_states, word_dim) / math.sqrt(word_dim))
        self.start = nn.Parameter(torch.zeros(2 * word_dim))
        self.lstm = nn.LSTM(2 * word_dim, hidden_size, batch_first=True)
        self.state_out = nn.Linear(hidden_size, n_states)
        self.word_mlp = nn.Sequential(nn.Linear(hidden_size + word_dim, hidden_size), nn.Tanh(),
                                      nn.Linear(hidden_size, vocab_size))

    # -- input checks
    def check_batch(self, tokens: Any, lengths: Any) -> tuple["torch.Tensor", "torch.Tensor"]:
        """Validate a batch: tokens LongTensor (B, T) with ids < vocab_size, lengths (B,) in [1, T]."""
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
            raise TypeError("tokens must be a LongTensor of shape (batch, length)")
        if tokens.shape[0] == 0 or tokens.shape[1] == 0:
            raise ValueError(f"empty batch: tokens has shape {tuple(tokens.shape)}; need at least one sentence "
                             "of at least one word")
        if not isinstance(lengths, torch.Tensor) or lengths.dtype != torch.long or lengths.shape != tokens.shape[:1]:
            raise TypeError(f"lengths must be a LongTensor of shape ({tokens.shape[0]},)")
        if bool((lengths < 1).any()) or bool((lengths > tokens.shape[1]).any()):
            raise ValueError(f"lengths must lie in [1, {tokens.shape[1]}]")
        hi, lo = int(tokens.max()), int(tokens.min())
        if hi >= self.vocab_size or lo < 0:
            raise ValueError(f"vocabulary mismatch: tokens hold ids in [{lo}, {hi}] but the model's vocabulary "
                             f"has {self.vocab_size} words (ids 0..{self.vocab_size - 1})")
        return tokens, lengths

    # -- inference network
    def emissions(self, tokens: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
        """CRF emission log potentials ``e_x . r_t`` (Eq. 30-31), shape (B, T, N)."""
        r = self.to_query(self.encoder(tokens, lengths))
        return r @ self.state_embeddings.T

    # -- generative model
    def log_joint(self, states: "torch.Tensor", tokens: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
        """``log p(x, y)`` per sentence, (B,), for hard states (B, T) or relaxed one-hot states (B, T, N).

        With relaxed states x~ (Eq. 33) the state embeddings are ``x~ @ D`` and
        ``log p(x~_t | .) = sum_i x~_t(i) log p(x_t = i | .)``, as in Gumbel-CRF training.
        """
        batch, length = tokens.shape
        if states.dim() == 2:
            emb = self.state_embed[states.clamp_min(0)]
            state_lp_of = None
        else:
            emb = states @ self.state_embed
            state_lp_of = states
        prev = torch.cat([emb[:, :-1], self.word_embed(tokens[:, :-1])], dim=-1)
        inputs = torch.cat([self.start.expand(batch, 1, -1), prev], dim=1)
        h, _ = self.lstm(inputs)
        state_lp = torch.log_softmax(self.state_out(h), dim=-1)
        if state_lp_of is None:
            term_x = state_lp.gather(2, states.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        else:
            term_x = (state_lp_of * state_lp).sum(-1)
        word_lp = torch.log_softmax(self.word_mlp(torch.cat([h, emb], dim=-1)), dim=-1)
        term_y = word_lp.gather(2, tokens.unsqueeze(-1)).squeeze(-1)
        mask = torch.arange(length, device=tokens.device)[None, :] < lengths[:, None]
        return ((term_x + term_y) * mask.to(term_y.dtype)).sum(1)

    # -- ELBO
    def elbo(self, tokens: "torch.Tensor", lengths: "torch.Tensor", variant: Variant, *,
             generator: "torch.Generator | None" = None, tau: float = 1.0,
             straight_through: bool = False) -> ElboTerms:
        """Per-sentence ELBO of Eq. 32 with the entropy by Alg. 3 and the first term by Eq. 33 (Alg. 4).

        ``variant`` FULL uses the exact entropy DP and exact Gumbel-FFBS; TOPK/RDP run the randomized
        entropy DP and randomized Gumbel backward sampling with the variant's K1, K2 and proposal
        (each call draws its own index sets).  ``generator`` drives index draws and Gumbel noise.
        """
        tokens, lengths = self.check_batch(tokens, lengths)
        if not isinstance(variant, Variant):
            raise TypeError(f"variant must be a experiments.rdp_vae.model.Variant, got {type(variant).__name__}")
        variant.check(self.n_states)
        em = self.emissions(tokens, lengths)
        emb = self.state_embeddings
        if variant.kind == "full":
            entropy = chain_entropy(em, lengths=lengths, state_embeddings=emb, method=variant.method)
            sample = chain_gumbel_sample(em, lengths=lengths, state_embeddings=emb, tau=tau, generator=generator,
                                         straight_through=straight_through, method=variant.method)
        else:
            kw = dict(state_embeddings=emb, k1=variant.k1, k2=variant.k2, proposal=variant.proposal,
                      generator=generator, lengths=lengths)
            entropy = randomized_chain_entropy(em, **kw)
            sample = randomized_chain_gumbel_sample(em, tau=tau, straight_through=straight_through, **kw)
        log_joint = self.log_joint(sample.relaxed, tokens, lengths)
        return ElboTerms(log_joint + entropy, log_joint, entropy)


# ------------------------------------------------------------------------------- exact CRF sampling
def posterior_samples(model: "StructuredVAE", tokens: "torch.Tensor", lengths: "torch.Tensor", n_samples: int, *,
                      generator: "torch.Generator | None" = None) -> "ChainSamples":
    """``n_samples`` exact posterior paths of q(x | y) per sentence and their ``log q``, from one forward pass.

    rdp's exact FFBS (:func:`rdp.chain.chain_sample`) on the CRF of Eq. 29-31 in float64, without gradient:
    a memory-lean forward (no (B, N, N) tensor), so exact posterior sampling runs at N = 2,000.

    Returns
    -------
    ChainSamples
        ``paths`` (S, B, T), -1 beyond each length; ``log_prob`` (S, B) = ``log q(x | y)``.
    """
    with torch.no_grad():
        em = model.emissions(tokens, lengths).double()
        return chain_sample(em, lengths=lengths, state_embeddings=model.state_embeddings.detach().double(),
                            n_samples=n_samples, generator=generator)


# ------------------------------------------------------------------------------------- evaluation
def _check_data(model: "StructuredVAE", data: "SentenceData", empty: str = "") -> None:
    """ValueError when ``data`` is empty or encoded with another vocabulary than ``model``'s."""
    if len(data) == 0:
        raise ValueError("data is empty" + (f": {empty}" if empty else ""))
    if data.vocab_size != model.vocab_size:
        raise ValueError(f"vocabulary mismatch: data encoded with {data.vocab_size} words, model has "
                         f"{model.vocab_size}")


class ImportanceEstimate(NamedTuple):
    """Importance-sampling estimates per sentence.

    Attributes
    ----------
    log_likelihood : Tensor (B,)
        ``log (1/S sum_s p(x_s, y) / q(x_s | y))``, x_s ~ q(x | y); its exponential is unbiased for p(y).
    log_se : Tensor (B,)
        Delta-method standard error of ``log_likelihood`` (sd of the weights / (sqrt(S) mean)).
    """

    log_likelihood: "torch.Tensor"
    log_se: "torch.Tensor"


def importance_log_likelihood(model: StructuredVAE, tokens: "torch.Tensor", lengths: "torch.Tensor", *,
                              n_samples: int = 100, generator: "torch.Generator | None" = None,
                              sample_chunk: int = 25) -> ImportanceEstimate:
    """Importance-sampled ``log p(y)`` with the inference network as proposal (Sec. 5.2; Kim et al. 2019).

    Samples are exact posterior draws of the CRF (:func:`posterior_samples`, all S from one forward pass), so
    the weight estimate of p(y) is unbiased for any trained q (q > 0 everywhere); the log is biased low by
    O(1/S) (Jensen).  The decoder scores ``sample_chunk`` samples per batch at a time.
    """
    tokens, lengths = model.check_batch(tokens, lengths)
    n_samples = check_int(n_samples, "n_samples", low=1)
    sample_chunk = check_int(sample_chunk, "sample_chunk", low=1)
    with torch.no_grad():
        draws = posterior_samples(model, tokens, lengths, n_samples, generator=generator)
        log_w = []
        batch = tokens.shape[0]
        for s in range(0, n_samples, sample_chunk):
            m = min(sample_chunk, n_samples - s)
            states = draws.paths[s:s + m]
            # m stacked copies of the batch, sample-major like the paths (S, B, T)
            lj = model.log_joint(states.reshape(m * batch, -1), tokens.repeat(m, 1), lengths.repeat(m))
            log_w.append(lj.reshape(m, batch) - draws.log_prob[s:s + m])
        log_w = torch.cat(log_w, dim=0)
        est = torch.logsumexp(log_w, 0) - math.log(n_samples)
        w = torch.exp(log_w - est)  # weights relative to their mean
        se = w.std(0, unbiased=True) / math.sqrt(n_samples) if n_samples > 1 else torch.full_like(est, float("inf"))
    return ImportanceEstimate(est, se)


def exact_log_likelihood(model: StructuredVAE, tokens: "torch.Tensor", lengths: "torch.Tensor") -> "torch.Tensor":
    """``log p(y)`` by enumerating all N^L state sequences (tiny models only: N^T <= 100,000).

    The oracle for :func:`importance_log_likelihood`.
    """
    tokens, lengths = model.check_batch(tokens, lengths)
    n, length = model.n_states, tokens.shape[1]
    if n ** length > 100_000:
        raise ValueError(f"enumeration needs N^T <= 100000 state sequences, got {n}^{length}")
    with torch.no_grad():
        grid = torch.cartesian_prod(*[torch.arange(n)] * length).reshape(-1, length) if length > 1 else \
            torch.arange(n).reshape(-1, 1)
        out = []
        for b in range(tokens.shape[0]):
            L = int(lengths[b])
            seqs = torch.unique(grid[:, :L], dim=0)
            pad = torch.full((seqs.shape[0], length - L), -1, dtype=torch.long)
            states = torch.cat([seqs, pad], dim=1)
            m = states.shape[0]
            lj = model.log_joint(states, tokens[b:b + 1].expand(m, -1), lengths[b:b + 1].expand(m))
            out.append(torch.logsumexp(lj, 0))
    return torch.stack(out)


def evaluate_nll(model: StructuredVAE, data: SentenceData, *, n_samples: int = 100, batch_size: int = 64,
                 seed: int = 0) -> dict[str, float]:
    """Mean per-sentence NLL (nats) of ``data`` by importance sampling, with standard errors.

    Returns ``nll`` (mean over sentences), ``se`` (standard error of that mean over sentences),
    ``is_se`` (the importance-sampling part: sqrt(sum of per-sentence delta-method variances) / M),
    ``per_word`` (total NLL / number of words including ``</s>``), ``sentences`` and
    ``log_likelihoods`` (the per-sentence estimates, for paired comparisons of models).
    """
    _check_data(model, data)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", low=0))
    model.eval()
    lls, ses = [], []
    for s in range(0, len(data), batch_size):
        tok, lens = data.batch(torch.arange(s, min(s + batch_size, len(data))))
        est = importance_log_likelihood(model, tok, lens, n_samples=n_samples, generator=gen)
        lls.append(est.log_likelihood.double())
        ses.append(est.log_se.double())
    ll, se = torch.cat(lls), torch.cat(ses)
    m = ll.shape[0]
    return {"nll": float(-ll.mean()), "se": float(ll.std() / math.sqrt(m)) if m > 1 else float("nan"),
            "is_se": float(torch.sqrt((se ** 2).sum()) / m), "per_word": float(-ll.sum() / data.lengths.sum()),
            "sentences": m, "log_likelihoods": ll.tolist()}


def aggregated_posterior(model: StructuredVAE, data: SentenceData, *, batch_size: int = 64,
                         seed: int = 0) -> "torch.Tensor":
    """State frequencies of the aggregated posterior (Fig. 2; Mathieu et al. 2019): one exact sample of
    q(x | y) per sentence of ``data``, counts of every state over all positions, shape (N,) (long).

    The number of inactive states is ``(counts == 0).sum()``.
    """
    _check_data(model, data)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", low=0))
    counts = torch.zeros(model.n_states, dtype=torch.long)
    model.eval()
    with torch.no_grad():
        for s in range(0, len(data), batch_size):
            tok, lens = data.batch(torch.arange(s, min(s + batch_size, len(data))))
            flat = posterior_samples(model, *model.check_batch(tok, lens), 1, generator=gen).paths.reshape(-1)
            counts += torch.bincount(flat[flat >= 0], minlength=model.n_states)
    return counts


# --------------------------------------------------------------------------------------- training
@dataclass
class TrainConfig:
    """Training settings (AdamW on the negative ELBO per sentence)."""

    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    tau: float = 1.0
    seed: int = 0
    grad_clip: float = 5.0
    checkpoint_every: int = 100
    time_limit_s: float = float("inf")
    history: list = field(default_factory=list)

    def check(self) -> None:
        check_int(self.steps, "steps", low=0)
        check_int(self.batch_size, "batch_size", low=1)
        check_float(self.lr, "lr", low=0.0, low_open=True)
        check_float(self.weight_decay, "weight_decay", low=0.0)
        check_float(self.tau, "tau", low=0.0, low_open=True)
        check_int(self.seed, "seed", low=0)
        check_float(self.grad_clip, "grad_clip", low=0.0, low_open=True)
        check_int(self.checkpoint_every, "checkpoint_every", low=1)


def _batch_order(n: int, batch_size: int, seed: int, epoch: int) -> "torch.Tensor":
    gen = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=gen)


def save_checkpoint(path: "str | Path", state: dict) -> None:
    """Write ``state`` with ``torch.save`` atomically (a temporary file renamed over ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_vae(model: StructuredVAE, data: SentenceData, variant: Variant, config: TrainConfig | None = None, *,
              checkpoint: "str | Path | None" = None, resume: bool = True, progress: bool | None = None) -> list:
    """Train by AdamW on ``-ELBO`` (Eq. 32-33) with the given variant; returns the history of (step, -ELBO).

    Each step uses a batch from a per-epoch permutation of ``data`` (seeded by ``config.seed`` and
    the epoch) and a generator seeded by (seed, step), so a run resumed from a checkpoint reproduces
    the uninterrupted run exactly.  With ``checkpoint``, the model, optimizer, step and history are
    written atomically every ``checkpoint_every`` steps and at the end; with ``resume`` an existing
    checkpoint is loaded first.  ``progress``: a tqdm bar (default: when stderr is a terminal).
    """
    config = config or TrainConfig()
    config.check()
    if not isinstance(variant, Variant):
        raise TypeError(f"variant must be a experiments.rdp_vae.model.Variant, got {type(variant).__name__}")
    variant.check(model.n_states)
    _check_data(model, data, "nothing to train on")
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    step, history = 0, []
    if checkpoint is not None and resume and Path(checkpoint).is_file():
        state = torch.load(checkpoint, weights_only=False)
        if state["model_config"] != model.config or state["variant"] != asdict(variant):
            raise ValueError(f"checkpoint {str(checkpoint)!r} was written for a different model or variant")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, history = state["step"], state["history"]

    def write() -> None:
        if checkpoint is not None:
            save_checkpoint(checkpoint, {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                                         "history": history, "model_config": model.config,
                                         "variant": asdict(variant), "train_config": asdict(config)})

    from tqdm.auto import tqdm

    disable = (not sys.stderr.isatty()) if progress is None else not progress
    bar = tqdm(total=config.steps, initial=step, disable=disable, desc=f"vae {variant.label}", unit="step")
    n = len(data)
    per_epoch = max(1, n // config.batch_size)
    start = time.perf_counter()
    model.train()
    while step < config.steps and time.perf_counter() - start < config.time_limit_s:
        epoch, pos = divmod(step, per_epoch)
        order = _batch_order(n, config.batch_size, config.seed, epoch)
        idx = order[pos * config.batch_size:(pos + 1) * config.batch_size]
        tokens, lengths = data.batch(idx)
        gen = torch.Generator().manual_seed(config.seed * 1_000_003 + step)
        terms = model.elbo(tokens, lengths, variant, generator=gen, tau=config.tau)
        loss = -terms.elbo.mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        step += 1
        history.append((step, float(loss.detach()), float(terms.entropy.mean().detach())))
        bar.update(1)
        bar.set_postfix(neg_elbo=f"{history[-1][1]:.2f}")
        if step % config.checkpoint_every == 0:
            write()
    bar.close()
    write()
    return history
