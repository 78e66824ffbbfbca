"""Paper experiments of mcsa: one sub-package per experiment, each with a README and a harness suite.

Not part of the ``mcsa`` distribution; ``make install`` installs it (editable) as ``mcsa-experiments``.
"""
