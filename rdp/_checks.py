"""Argument checks for torch inputs (the torch twins of :mod:`samplers.validation`).

Every check raises ``ValueError``/``TypeError`` naming the argument and what was expected, so a bad
potential never turns into a silent NaN inside a dynamic program.
"""

from __future__ import annotations

import math
from typing import Any

from samplers.validation import check_float, check_int

from ._torch import torch


def as_potentials(x: Any, name: str, *, ndim: int | tuple[int, ...]) -> "torch.Tensor":
    """Return ``x`` as a floating torch tensor with the given number of dimensions, all finite.

    Tensors are returned as they are (same device, dtype and autograd graph); array-likes are
    converted to float64 tensors.
    """
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"{name} must be a tensor or array-like of numbers: {exc}") from None
    if not torch.is_floating_point(x):
        x = x.to(torch.get_default_dtype())
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if x.dim() not in dims:
        want = " or ".join(str(d) for d in dims)
        raise ValueError(f"{name} must be {want}-dimensional, got shape {tuple(x.shape)}")
    if any(s == 0 for s in x.shape):
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    with torch.no_grad():
        # one pass without temporaries: min and max are finite iff every entry is (NaN propagates)
        lo, hi = torch.aminmax(x.detach())
        if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
            bad = tuple(int(i) for i in torch.nonzero(~torch.isfinite(x))[0])
            raise ValueError(f"{name} must be finite; found a non-finite value at index {bad}")
    return x


def check_lengths(lengths: Any, batch: int, max_length: int, device) -> "torch.Tensor":
    """Check per-sequence lengths: shape (batch,), integers in [1, max_length]; return a long tensor."""
    if lengths is None:
        return torch.full((batch,), max_length, dtype=torch.long, device=device)
    lengths = torch.as_tensor(lengths, device=device)
    if torch.is_floating_point(lengths):
        if not bool((lengths == lengths.round()).all()):
            raise TypeError("lengths must hold integers")
    elif lengths.dtype == torch.bool or lengths.is_complex():
        raise TypeError(f"lengths must hold integers, got dtype {lengths.dtype}")
    lengths = lengths.long()
    if tuple(lengths.shape) != (batch,):
        raise ValueError(f"lengths must have shape ({batch},) (one per sequence), got {tuple(lengths.shape)}")
    if bool((lengths < 1).any()) or bool((lengths > max_length).any()):
        raise ValueError(f"lengths must lie in [1, {max_length}], got min {int(lengths.min())} "
                         f"and max {int(lengths.max())}")
    return lengths


def check_budget(k1: Any, k2: Any, n_states: int) -> tuple[int, int]:
    """Check the per-step budget: K1 >= 0 top states, K2 >= 0 sampled, 1 <= K1 + K2 <= N."""
    k1 = check_int(k1, "k1", low=0)
    k2 = check_int(k2, "k2", low=0)
    if k1 + k2 == 0:
        raise ValueError("k1 + k2 must be at least 1 (got k1 = k2 = 0)")
    if k1 + k2 > n_states:
        raise ValueError(f"k1 + k2 must be <= the number of states N = {n_states}, got k1={k1}, k2={k2}")
    return k1, k2


def check_generator(generator: Any, device) -> "torch.Generator | None":
    """Check ``generator`` is None or a ``torch.Generator`` on the device of the potentials."""
    if generator is None:
        return None
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if torch.device(generator.device).type != torch.device(device).type:
        raise ValueError(f"generator lives on {generator.device} but the potentials on {device}")
    return generator


def as_generator(seed: int, device="cpu") -> "torch.Generator":
    """A ``torch.Generator`` on ``device`` seeded with the integer ``seed``."""
    gen = torch.Generator(device=device)
    gen.manual_seed(check_int(seed, "seed", low=0))
    return gen


def check_space(space: Any, log_scale: Any = 0.0) -> "tuple[str, float | torch.Tensor]":
    """Check the output space of a randomized partition estimate (``"log"`` or ``"linear"``) and the
    log scale subtracted before exponentiating in linear space (a float or a tensor broadcastable to (B,))."""
    if space not in ("log", "linear"):
        raise ValueError(f"space must be 'log' or 'linear', got {space!r}")
    if not isinstance(log_scale, torch.Tensor):
        log_scale = check_float(log_scale, "log_scale")
    return space, log_scale


def in_space(log_z: "torch.Tensor", space: str, log_scale: "float | torch.Tensor") -> "torch.Tensor":
    """log Z-hat as it is (``"log"``), or ``Z-hat * exp(-log_scale)`` (``"linear"``, unbiased for Z exp(-log_scale))."""
    return log_z if space == "log" else torch.exp(log_z - log_scale)
