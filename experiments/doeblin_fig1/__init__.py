"""Doeblin Fig. 1 (Steinhardt & Liang 2015); see README.md."""
