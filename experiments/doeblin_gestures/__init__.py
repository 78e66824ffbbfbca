"""Doeblin gestures experiment (Steinhardt & Liang 2015, Sec. 5); see README.md."""
