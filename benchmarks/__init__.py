"""mcsa's benchmarks: speed and memory against peers and the hardware limit (see ``benchmarks/__main__.py``).

Each ``benchmarks/<name>.py`` is a script printing its own table(s); ``python -m benchmarks`` runs them all.
"""
