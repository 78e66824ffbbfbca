"""The sentence corpus of the structured-VAE experiment: English fortunes installed by Debian packages.

The same source as the TRF LM benchmark (``benchmarks/trf_lm.py``): the text files of the packages
``fortunes``, ``fortunes-min`` and ``fortune-anarchism`` (``apt-get install fortunes fortunes-min
fortune-anarchism``; nothing is fetched at run time, no corpus is committed).  Fortunes are split
90/5/5 into train/dev/test by index, lower-cased, split into sentences at ``.!?`` and tokenised into
words (numbers -> ``N``); sentences of 5-25 words are kept (the paper's MSCOCO captions are of that
size); the vocabulary is the 10,000 most frequent training words (:class:`experiments.rdp_vae.model.Vocabulary`).
"""

from __future__ import annotations

import re

from experiments.fortunes import FORTUNE_PACKAGES, SKIP_FILES, fortune_files  # noqa: F401  (re-exported)


def sentences_of(text: str, min_len: int = 5, max_len: int = 25) -> list[list[str]]:
    """Lower-cased word lists of the sentences of ``text`` with ``min_len <= words <= max_len``."""
    text = re.sub(r".\x08", "", text).lower()
    out = []
    for chunk in re.split(r"[.!?]+(?:\s|$)", text):
        words = ["N" if w.isdigit() else w for w in re.findall(r"[a-z]+(?:'[a-z]+)?|\d+", chunk)]
        if min_len <= len(words) <= max_len:
            out.append(words)
    return out


def fortune_sentences(min_len: int = 5, max_len: int = 25) -> dict[str, list[list[str]]]:
    """``{"train", "dev", "test"}`` sentence lists (fortune index mod 20: 0 -> test, 1 -> dev, else train)."""
    splits: dict[str, list[list[str]]] = {"train": [], "dev": [], "test": []}
    index = 0
    for path in fortune_files():
        text = path.read_bytes().decode("utf-8", errors="replace")
        for fortune in re.split(r"^%\s*$", text, flags=re.M):
            split = "test" if index % 20 == 0 else "dev" if index % 20 == 1 else "train"
            splits[split].extend(sentences_of(fortune, min_len, max_len))
            index += 1
    return splits


def load_corpus(vocab_size: int = 10000, min_len: int = 5, max_len: int = 25, limits: dict | None = None):
    """Vocabulary (top ``vocab_size`` training words) and encoded splits (``limits``: max sentences per split).

    Returns
    -------
    (experiments.rdp_vae.model.Vocabulary, dict[str, experiments.rdp_vae.model.SentenceData])
    """
    from experiments.rdp_vae.model import Vocabulary

    splits = fortune_sentences(min_len, max_len)
    vocab = Vocabulary.build(splits["train"], max_size=vocab_size)
    limits = limits or {}
    data = {k: vocab.encode(v[:limits.get(k, len(v))]) for k, v in splits.items()}
    return vocab, data
