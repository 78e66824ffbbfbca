"""The word-morphology experiment of Wang, Ou & Tan (2017), Sec. 6 / Fig. 3: AugSA vs IIS, quasi-Newton
and WB3 with exact likelihoods (``benchmark.py``: the full table; ``suite.py``: harness suites)."""
