"""Sentence TRF language models vs Kneser-Ney on the Debian fortunes corpus (Wang, Ou & Tan 2017, Sec. 7-8
analogue): ``benchmark.py`` (the documented 60-minute run) and ``ais_check.py`` (AIS at every length of a
saved model).  No harness suite yet."""
