"""A torch memory meter for the harness: bytes autograd saves plus outputs on CPU, allocator peak on CUDA.

On CPU, torch has no allocator statistics, so :class:`TorchMemoryMeter` counts what makes the
autograd graph expensive: every tensor saved for backward during the block (through
``torch.autograd.graph.saved_tensors_hooks``; each storage counted once), plus the bytes of outputs
reported with :func:`note_output`.  On a CUDA device it reports ``torch.cuda.max_memory_allocated``
above the level at entry (everything the run allocated, including temporaries).
"""

from __future__ import annotations

from typing import Any, Callable

from samplers.harness.memory import MemoryMeter

from ._torch import torch

_ACTIVE: list["TorchMemoryMeter"] = []


def _storage_key(t: "torch.Tensor") -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def note_output(*tensors: "torch.Tensor | None") -> None:
    """Count the bytes of these output tensors in every active :class:`TorchMemoryMeter` (None is skipped)."""
    for meter in _ACTIVE:
        for t in tensors:
            if isinstance(t, torch.Tensor):
                meter._add(t)


class TorchMemoryMeter(MemoryMeter):
    """Peak memory of one torch run (harness meter; subclass of :class:`samplers.harness.memory.MemoryMeter`).

    Parameters
    ----------
    device : str or torch.device, optional
        ``"cuda..."`` measures the CUDA allocator's peak; anything else counts autograd-saved bytes.

    Examples
    --------
    >>> import torch
    >>> from rdp.memory import TorchMemoryMeter
    >>> x = torch.randn(100, requires_grad=True)
    >>> with TorchMemoryMeter() as m:
    ...     y = (x.exp() * 2).sum()
    >>> m.peak_bytes  # exp saves its output (100 float32)
    400
    """

    def __init__(self, device: Any = None) -> None:
        super().__init__()
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.kind = "cuda-peak" if self.device.type == "cuda" else "autograd-saved+outputs"
        self._seen: set[tuple[int, int]] = set()

    def _add(self, t: "torch.Tensor") -> None:
        if t.device.type == "meta":
            return
        key = _storage_key(t)
        if key not in self._seen:
            self._seen.add(key)
            if self.device.type != "cuda":
                self.peak_bytes += key[1]

    def _pack(self, t: "torch.Tensor") -> "torch.Tensor":
        self._add(t)
        # returning ``t`` itself would make a saved output hold its own grad_fn (a reference cycle
        # through C++ that the garbage collector cannot free); a detached alias shares the storage.
        # Consequence: no double backward (create_graph) through graphs built under the meter.
        return t.detach()

    def __enter__(self) -> "TorchMemoryMeter":
        self.peak_bytes = 0
        self._seen = set()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self._base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)
        self._hooks.__exit__(*exc)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = max(0, int(torch.cuda.max_memory_allocated(self.device) - self._base))
        return None


def measure(fn: Callable[[], Any], device: Any = None) -> tuple[Any, int]:
    """Run ``fn()`` under a :class:`TorchMemoryMeter`; return (its result, bytes), counting the result."""
    with TorchMemoryMeter(device) as meter:
        out = fn()
        note_output(*(out if isinstance(out, (tuple, list)) else (out,)))
    return out, meter.peak_bytes
