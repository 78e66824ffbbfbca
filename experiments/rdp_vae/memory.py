"""Memory and time of one ELBO forward + backward step of the structured VAE: FULL vs TOPK vs RDP.

The memory is what autograd holds for the backward pass plus the outputs, counted by
:class:`rdp.memory.TorchMemoryMeter` (on CPU torch has no allocator statistics; on a CUDA device the
meter reports the allocator's peak instead), and the process's peak resident set size after the
step.  The batch is the first ``--batch`` training sentences of the fortunes corpus (or random word
ids with ``--synthetic``, same lengths), N = ``--n-states``, model sizes as in ``run.py``.

    python -m experiments.rdp_vae.memory --n-states 2000 --batch 4 --variants rdp:200:200 topk:400 full full:log
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def parse_variant(text: str):
    """``full``, ``full:log`` (log-space exact DP), ``topk:K`` or ``rdp:K1:K2`` -> :class:`experiments.rdp_vae.model.Variant`."""
    from experiments.rdp_vae.model import Variant

    parts = text.split(":")
    try:
        if parts[0] == "full" and len(parts) <= 2:
            return Variant.full(*parts[1:])
        if parts[0] == "topk" and len(parts) == 2:
            return Variant.topk(int(parts[1]))
        if parts[0] == "rdp" and len(parts) == 3:
            return Variant.rdp(int(parts[1]), int(parts[2]))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--variants: {exc}") from None
    raise argparse.ArgumentTypeError(f"--variants: expected full, full:METHOD, topk:K or rdp:K1:K2, got {text!r}")


def measure_step(model, tokens, lengths, variant, seed: int = 0) -> dict:
    """Autograd-saved bytes (+ outputs) and seconds of one ELBO forward + backward."""
    import torch

    from rdp.memory import TorchMemoryMeter, note_output

    model.zero_grad()
    start = time.perf_counter()
    with TorchMemoryMeter() as meter:
        terms = model.elbo(tokens, lengths, variant, generator=torch.Generator().manual_seed(seed))
        loss = -terms.elbo.mean()
        note_output(loss)
    loss.backward()
    seconds = time.perf_counter() - start
    return {"variant": variant.label, "autograd_bytes": meter.peak_bytes, "seconds": seconds,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-states", type=int, default=2000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--variants", nargs="+", type=parse_variant,
                   default=[parse_variant(v) for v in ("rdp:200:200", "topk:400", "full", "full:log")])
    p.add_argument("--synthetic", action="store_true", help="random word ids instead of the fortunes corpus")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    if args.n_states < 1 or args.batch < 1:
        p.error("--n-states and --batch must be >= 1")
    import torch

    from experiments.rdp_vae.model import StructuredVAE

    torch.set_num_threads(args.threads)
    vocab_size = 10003
    if args.synthetic:
        gen = torch.Generator().manual_seed(0)
        lengths = torch.full((args.batch,), 14, dtype=torch.long)
        tokens = torch.randint(3, vocab_size, (args.batch, 14), generator=gen)
    else:
        from .data import load_corpus

        vocab, data = load_corpus(limits={"train": args.batch, "dev": 1, "test": 1})
        vocab_size = len(vocab)
        tokens, lengths = data["train"].tokens, data["train"].lengths
    torch.manual_seed(0)
    model = StructuredVAE(vocab_size, args.n_states)
    print(f"N = {args.n_states}, batch {args.batch}, words per sentence {lengths.tolist()}")
    print("| variant | autograd saved + outputs (MiB) | forward+backward (s) | process peak RSS so far (MiB) |")
    print("|---|---|---|---|")
    for variant in args.variants:
        r = measure_step(model, tokens, lengths, variant)
        print(f"| {r['variant']} | {r['autograd_bytes'] / 2**20:.1f} | {r['seconds']:.2f} | "
              f"{r['peak_rss_bytes'] / 2**20:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
