"""Checked normalisers of sentence TRF LMs: every ``log Z_j`` estimated from both sides, and the perplexity it gives.

* :mod:`trf.lm.check.estimates` -- the estimators of ``log Z_j`` (exact, forward / reverse AIS, SMC, conditional
  SMC), each returning a :class:`LogZEstimate`;
* :mod:`trf.lm.check.plan` -- the effort: fixed (:class:`CheckEffort`) or a time budget shared out by a cost model
  (with an injectable clock);
* :mod:`trf.lm.check.run` -- :func:`check_normalisers`, which runs them: the plan, the estimates, the bracket and
  the notes on the effort;
* :mod:`trf.lm.check.bracket` -- :class:`NormaliserCheck` (:meth:`NormaliserCheck.bracket` from the estimates): the
  interval per length, the checked value, each estimator's shortfalls, the perplexities; :func:`headline_perplexity`;
* :mod:`trf.lm.check.report` -- :func:`checked_perplexity` and the check after training (:func:`check_dev`) as
  the headline, notes and warnings a user reads;
* :mod:`trf.lm.check.paper_ais` -- the AIS variants of Sec. 7 (separate, smoothed, global) beside AugSA's zeta.

Combining and timing log-probabilities (interpolation, scoring speed) lives in :mod:`trf.lm.rescore`.
"""

from __future__ import annotations

from trf.lm.check.bracket import CONCLUSIVE, NormaliserCheck, headline_perplexity, interval_is_inconclusive
from trf.lm.check.estimates import EXACT_LIMIT, LogZEstimate, ais_log_z, exact_log_z, log_prob_with_log_z
from trf.lm.check.paper_ais import ais_check, ais_global, smooth_log_z
from trf.lm.check.plan import BudgetPlan, CheckEffort
from trf.lm.check.report import CheckedPerplexity, check_dev, checked_perplexity
from trf.lm.check.run import check_normalisers
from trf.lm.model import unigram_base

__all__ = ["check_normalisers", "NormaliserCheck", "LogZEstimate", "CheckEffort", "BudgetPlan", "CONCLUSIVE",
           "headline_perplexity", "interval_is_inconclusive", "CheckedPerplexity", "checked_perplexity", "check_dev",
           "exact_log_z", "ais_log_z", "EXACT_LIMIT", "unigram_base", "log_prob_with_log_z", "smooth_log_z",
           "ais_global", "ais_check"]
