"""Import guard: ``rdp`` needs torch, which is an optional extra of mcsa."""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(
        'rdp needs torch, which is not installed. Install the extra with pip install "mcsa[rdp]" '
        "(or pip install torch)."
    ) from exc

__all__ = ["torch"]
