"""Doeblin DNF / CEGAR experiment (Steinhardt & Liang 2015, Sec. 5, Table 1); see README.md."""
