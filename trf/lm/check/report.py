"""A perplexity with checked normalisers, in words: the headline, its interval, the notes and the warnings.

:func:`checked_perplexity` checks the normalisers on a corpus's lengths (:func:`trf.lm.check.check_normalisers`)
and returns a :class:`CheckedPerplexity`, which says what to print (:meth:`CheckedPerplexity.headline`,
:meth:`CheckedPerplexity.notes`, :meth:`CheckedPerplexity.warnings`) and what to keep
(:meth:`CheckedPerplexity.summary`).  A conclusive check reports the shortfalls of its AIS side as one note, since
its checked values do not rest on AIS there; an inconclusive one reports each as a warning.
:func:`check_dev` is the check that follows training (``mcsa trf train --valid``): the dev perplexity, kept in
the model's metadata.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from trf.lm.check.bracket import CONCLUSIVE, NormaliserCheck, headline_perplexity, interval_is_inconclusive
from trf.lm.check.run import check_normalisers
from trf.lm.corpus import EncodedCorpus
from trf.lm.cycles import loops_of
from trf.lm.model import PERPLEXITY_CONVENTION, SentenceTRF, describe_excess

__all__ = ["CheckedPerplexity", "AugSAPerplexity", "augsa_perplexity", "checked_perplexity", "check_dev",
           "scorable"]


class AugSAPerplexity(NamedTuple):
    """The perplexity with AugSA's zeta, the number of sentences with log p > 0 and, if any, why that perplexity is
    no perplexity."""

    perplexity: float
    impossible: int
    why_not: str


def augsa_perplexity(log_probs: np.ndarray, corpus: EncodedCorpus) -> AugSAPerplexity:
    """:class:`AugSAPerplexity` from the sentences' ``log_probs`` under AugSA's zeta."""
    ppl = float(np.exp(-log_probs.sum() / corpus.n_predicted))
    impossible = int(np.count_nonzero(log_probs > 0))
    why_not = (f"{impossible} of {len(corpus)} sentences get a positive log-probability with it (up to "
               f"{log_probs.max():+.2f}): impossible for a discrete sentence, so zeta_j lies below log Z_j / Z_1 at "
               f"length(s) {describe_excess(corpus.lengths, log_probs)}" if impossible else "")
    return AugSAPerplexity(ppl, impossible, why_not)


class CheckedPerplexity(NamedTuple):
    """A corpus's perplexity with checked normalisers (:func:`checked_perplexity`).

    Attributes
    ----------
    check : NormaliserCheck
    perplexities : dict
        :meth:`NormaliserCheck.perplexities` of the corpus.
    headline : float
        The perplexity to report (:func:`headline_perplexity`).
    label : str
        Which value ``headline`` is.
    inconclusive : bool
    augsa : AugSAPerplexity
    sentences : int
    """

    check: NormaliserCheck
    perplexities: dict
    headline: float
    label: str
    inconclusive: bool
    augsa: AugSAPerplexity
    sentences: int

    def summary(self) -> dict:
        """The JSON entries: ``perplexity``, ``perplexity_augsa``, ``perplexity_checked``, ``normaliser_check``."""
        check, ppl = self.check, self.perplexities
        return {"perplexity_augsa": None if self.augsa.impossible else self.augsa.perplexity,
                "perplexity": self.headline, "perplexity_checked": ppl["checked"],
                "normaliser_check": {
                    "which": check.describe(), "headline": self.label, "inconclusive": self.inconclusive,
                    "perplexity_interval": [ppl["low"], ppl["high"]],
                    "unchecked_sentences": ppl["unchecked_sentences"], "excluded_sentences": ppl["excluded_sentences"],
                    "impossible_checked_sentences": ppl["impossible_checked"], "margin": check.margin, "z": check.z,
                    "seconds": check.seconds, "flagged_lengths": check.flagged.tolist(), "per_length": check.rows(),
                    "reverse_failed_lengths": check.reverse_failed.tolist(),
                    "still_rising_lengths": check.still_rising.tolist(),
                    "degenerate_lengths": check.degenerate.tolist(), "ais_missed_lengths": check.ais_missed.tolist(),
                    "smc_unsettled_lengths": check.unsettled.tolist(),
                    "csmc_bracketed_lengths": check.csmc_bracketed.tolist(),
                    "csmc_failed_lengths": check.csmc_failed.tolist(),
                    "known_floor_refuted_lengths": check.refuted.tolist(),
                    "perplexity_extrapolated": ppl["extrapolated"], "notes": list(check.notes),
                    "effort": self.effort()}}

    def effort(self) -> dict:
        """The particles and temperatures the check used."""
        check = self.check
        used = check.temperatures[check.temperatures > 0]
        csmc = check.csmc_particles[check.csmc_particles > 0]
        return {"temperatures": [int(used.min()), int(used.max())] if used.size else None,
                "chains": check.n_chains, "smc_runs": check.smc_replicates, "smc_particles": check.smc_particles,
                "csmc_runs": check.csmc_runs,
                "csmc_particles": [int(csmc.min()), int(csmc.max())] if csmc.size else None}

    def headline_line(self, what: str = "") -> str:
        """The result in one line (``what`` prefixes "perplexity", e.g. "dev ")."""
        ppl = self.perplexities
        unchecked = (f"; {ppl['unchecked_sentences']} sentences of the pooled sub-model keep AugSA's normaliser"
                     if ppl["unchecked_sentences"] else "")
        if ppl["excluded_sentences"]:
            unchecked += (f", {ppl['excluded_sentences']} of them left out (log p > 0 with it: no valid "
                          "probability)")
        augsa = "none (see the warning)" if self.augsa.impossible else f"{self.augsa.perplexity:.3f}"
        return (f"{what}perplexity {self.headline:.3f} ({PERPLEXITY_CONVENTION}), {self.label} "
                f"[{self.check.describe()}]; interval [{ppl['low']:.3f}, {ppl['high']:.3f}], midpoint normalisers "
                f"{ppl['checked']:.3f}; with the AugSA zeta {augsa}; {self.sentences} sentences{unchecked}")

    def _ais_shortfalls(self) -> list[str]:
        check = self.check
        parts = [(check.ais_missed, "missed probability mass (SMC higher)"),
                 (check.still_rising, "still rising with temperatures"),
                 (check.degenerate, "degenerate weights"), (check.reverse_failed, "reverse AIS below forward")]
        return [f"{text} at {check._which(lengths)}" for lengths, text in parts if lengths.size]

    def notes(self) -> list[str]:
        """How the check was made and, when it is conclusive, the shortfalls of its AIS side in one note."""
        check, ppl = self.check, self.perplexities
        out = list(check.notes)
        if ppl["extrapolated"] != ppl["checked"]:
            out.append("with the rise from T/2 to T temperatures added once more where AIS is still rising "
                       "(first-order 1/T extrapolation, an estimate, not a bound): perplexity "
                       f"{ppl['extrapolated']:.3f}")
        shortfalls = self._ais_shortfalls()
        if shortfalls and not self.inconclusive:
            out.append("the AIS side fell short (" + "; ".join(shortfalls) + "); the check is conclusive all the "
                       "same: where AIS fell short the checked values are the settled SMC / conditional SMC estimates, "
                       "and the interval holds both sides (details per length in --json)")
        return out

    def warnings(self, flag: str = "--check-seconds") -> list[str]:
        """What a user must not overlook: AugSA's zeta withheld or outside the interval, sentences left out, SMC
        unsettled, conditional SMC failed or the estimates below the known sentences' bound, and -- only when the check is inconclusive -- the AIS shortfalls and
        why it is inconclusive."""
        check, ppl = self.check, self.perplexities
        out = []
        if self.augsa.impossible:
            out.append(f"AugSA's zeta gives no perplexity: {self.augsa.why_not}")
        if ppl["excluded_sentences"]:
            out.append(f"{ppl['excluded_sentences']} sentences longer than m={check.m_total - 1} get a positive "
                       "log-probability with the pooled sub-model's normaliser (estimated over the sampled lengths "
                       "m+1, m+2 only, Sec. 5.4): they are left out of the checked perplexities")
        if ppl["impossible_checked"]:
            out.append(f"{ppl['impossible_checked']} sentences get a positive log-probability even with the checked "
                       "normalisers: their log Z_j is too low; raise --check-particles")
        kept = [check.warning(), check.unsettled_warning(), check.csmc_warning(), check.floor_warning()]
        if self.inconclusive:
            kept += [check.missed_warning(), check.bracket_warning(), check.rising_warning(),
                     check.degenerate_warning()]
        out += [w for w in kept if w]
        if self.inconclusive:
            wide = interval_is_inconclusive(ppl["low"], ppl["high"])
            why = [f"the perplexity interval [{ppl['low']:.3f}, {ppl['high']:.3f}] is wider than "
                   f"+-{100 * CONCLUSIVE:g}% around its centre"] if wide else []
            if ppl["degenerate_lengths"]:
                why.append(f"{ppl['degenerate_lengths']} test lengths have degenerate AIS weights")
            if ppl["unsettled_lengths"]:
                why.append(f"{ppl['unsettled_lengths']} test lengths have unsettled SMC estimates")
            if ppl["csmc_failed_lengths"]:
                why.append(f"at {ppl['csmc_failed_lengths']} test lengths conditional SMC fell below the lower side")
            if ppl["refuted_lengths"]:
                why.append(f"at {ppl['refuted_lengths']} test lengths the known sentences alone outweigh the estimates")
            out.append(f"the check is inconclusive at this effort: {'; '.join(why)}, so the headline is the "
                       "interval's high end (the conservative value, itself too low where SMC has not settled); "
                       "raise --check-seconds, --check-particles or --check-temperatures (or --check-effort) for a "
                       "conclusive check")
        return out


def scorable(model: SentenceTRF, corpus: EncodedCorpus) -> tuple[EncodedCorpus, int]:
    """The sentences of ``corpus`` the model can score (all when it has a pooled sub-model, else those of at most
    ``m`` words) and the number left out."""
    if model.pooled or corpus.lengths.max(initial=0) <= model.m:
        return corpus, 0
    long = corpus.lengths > model.m
    return type(corpus).from_sentences([x for x, k in zip(corpus, long) if not k]), int(long.sum())


def checked_perplexity(model: SentenceTRF, corpus: EncodedCorpus, *, flag: str = "corpus",
                       log_probs: np.ndarray | None = None, known: Sequence[EncodedCorpus] = (),
                       **check_kw) -> CheckedPerplexity:
    """Check the normalisers on ``corpus``'s lengths (:func:`check_normalisers` with ``check_kw``) and put the
    perplexities together; ``flag`` names the input in the error raised when no sentence can be checked;
    ``log_probs``: the sentences' log-probabilities with AugSA's zeta when already computed.  ``corpus`` itself,
    the ``known`` texts (the training text, say) and the loops of their word cycles (:func:`trf.lm.cycles.loops_of`:
    a model can weigh ``work work work ...`` more with every word, and no sampler proposes it) give the check its
    exact lower bound (:func:`trf.lm.check.estimates.known_floor`), and its SMC runs weigh their sentences
    exactly."""
    lengths = np.unique(corpus.lengths[corpus.lengths <= model.m])
    if lengths.size == 0:
        raise ValueError(f"{flag} holds no sentence of at most m={model.m} words to check; pass --no-check")
    augsa = augsa_perplexity(model.log_prob(corpus, allow_positive=True) if log_probs is None else log_probs,
                             corpus)
    texts = [corpus, *known]
    check = check_normalisers(model, lengths, known=[*texts, loops_of(texts, int(lengths.max()))], **check_kw)
    ppl = check.perplexities(model, corpus)
    headline, label, inconclusive = headline_perplexity(ppl)
    return CheckedPerplexity(check, ppl, headline, label, inconclusive, augsa, len(corpus))


def check_dev(model: SentenceTRF, dev: EncodedCorpus, *, flag: str = "dev", known: Sequence[EncodedCorpus] = (),
              **check_kw) -> tuple[CheckedPerplexity, int]:
    """The check after training: the dev perplexity with checked normalisers on the dev sentences the model can
    score (:func:`scorable`), kept in ``model.meta["dev_check"]``; also the number of dev sentences left out.
    ``flag`` names the dev text in errors."""
    dev, left_out = scorable(model, dev)
    result = checked_perplexity(model, dev, flag=flag, known=known, **check_kw)
    summary = result.summary()
    model.meta["dev_check"] = {"perplexity": summary["perplexity"], "perplexity_augsa": summary["perplexity_augsa"],
                               "perplexity_checked": summary["perplexity_checked"],
                               **{k: summary["normaliser_check"][k] for k in ("which", "headline", "inconclusive",
                                                                              "perplexity_interval", "seconds")}}
    return result, left_out
