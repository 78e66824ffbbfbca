"""``mcsa uai solve MODEL.uai``: exact answers in the UAI competitions' format.

Reads the model (and its evidence: ``--evid FILE``, or ``MODEL.uai.evid`` beside the model when
present), conditions on the evidence, and writes ``DIR/MODEL.uai.PR`` (``log10 Z`` of the model
with its evidence; task PR) or ``DIR/MODEL.uai.MAR`` (all single-variable marginals given the
evidence, from one calibrated junction tree; task MAR).  Too-wide models are refused before any
table is built, naming the induced width and the memory needed; the output folder is checked
before the work starts.
"""

from __future__ import annotations

import argparse
import os
import re
import time

UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
         "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40, "TIB": 2**40}


def parse_memory(text: str) -> int:
    """Bytes from ``"512M"``, ``"8G"``, ``"1.5GiB"`` or a plain number of bytes (argparse type)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 512M, 8G or 1.5GiB, got {text!r}")
    value = int(float(match.group(1)) * UNITS[match.group(2).upper()])
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


def register(subparsers) -> None:
    """Add the ``mcsa uai`` command group (``solve``, ``scores``) to ``subparsers`` (the ``mcsa.commands`` hook)."""
    parser = subparsers.add_parser("uai", help="UAI competition models: exact answers")
    sub = parser.add_subparsers(dest="uai_command", metavar="UAI_COMMAND")
    solve = sub.add_parser("solve", help="exact log Z (PR) or marginals (MAR) of a .uai model, written in the "
                                         "competition's format",
                           description=__doc__.split("\n\n")[1].replace("\n", " "))
    solve.add_argument("model", metavar="MODEL.uai", help="the model file (MARKOV or BAYES)")
    solve.add_argument("--evid", metavar="FILE", default=None,
                       help="evidence file (default: MODEL.uai.evid when it exists, else no evidence)")
    solve.add_argument("--task", choices=("PR", "MAR"), default="PR",
                       help="PR: log10 Z of the model with its evidence; MAR: all marginals given the evidence")
    solve.add_argument("--out", metavar="DIR", default=".", help="folder of the answer file DIR/MODEL.uai.TASK")
    solve.add_argument("--memory-cap", metavar="SIZE", type=parse_memory, default=None,
                       help="memory the elimination may use, e.g. 8G (default: a quarter of this machine's memory)")
    solve.add_argument("--force", action="store_true", help="overwrite an existing answer file")
    solve.set_defaults(func=run_solve)
    from .uai_scores import add_command  # `mcsa uai scores`: the competition's scores of a study

    add_command(sub)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _answer_path(args: argparse.Namespace) -> str:
    """The answer file's path, checked before any work: the folder is writable, or can be created (it
    is created when the answer is written), and the file is new (or ``--force``)."""
    out_dir = args.out
    if not os.path.exists(out_dir):
        parent = os.path.dirname(os.path.abspath(out_dir))
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            raise ValueError(f"--out {out_dir}: does not exist and cannot be created ({parent} is not a writable "
                             "folder)")
        return os.path.join(out_dir, os.path.basename(args.model) + "." + args.task)
    if not os.path.isdir(out_dir):
        raise ValueError(f"--out {out_dir}: is not a folder")
    if not os.access(out_dir, os.W_OK):
        raise ValueError(f"--out {out_dir}: folder is not writable")
    path = os.path.join(out_dir, os.path.basename(args.model) + "." + args.task)
    if os.path.exists(path) and not args.force:
        raise ValueError(f"--out: {path} exists (pass --force to overwrite it)")
    return path


def run_solve(args: argparse.Namespace) -> int:
    """``mcsa uai solve``: check the paths, read the model (and evidence), write the exact PR or MAR answer.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags of ``mcsa uai solve``.

    Returns
    -------
    int
        The exit status (0: written; a refusal raises a ValueError naming the flag or the width).
    """
    from .models.elimination import ZeroPartitionError, default_memory_cap
    from .models.uai import check_evidence, read_evid, read_uai, write_mar, write_pr

    if not os.path.exists(args.model):
        raise FileNotFoundError(f"MODEL.uai {args.model}: no such file")
    path = _answer_path(args)
    evid = args.evid
    if evid is None and os.path.isfile(args.model + ".evid"):
        evid = args.model + ".evid"
    if evid is not None and not os.path.exists(evid):
        raise FileNotFoundError(f"--evid {evid}: no such file")
    cap = default_memory_cap() if args.memory_cap is None else args.memory_cap
    start = time.perf_counter()
    graph = read_uai(args.model)
    evidence: dict = {}
    if evid is not None:
        samples = read_evid(evid)
        if len(samples) != 1:
            raise ValueError(f"--evid {evid}: holds {len(samples)} evidence samples; mcsa uai solve takes one")
        evidence = samples[0]
        check_evidence(graph, evidence, evid)
    cond = graph.condition(evidence)
    plan = cond.graph.elimination_plan
    if args.task == "PR":
        log_z = cond.graph.log_partition_exact(memory_cap=cap)
        if log_z == -float("inf"):
            why = ("it has constant (arity-0) factors of value 0" if graph.log_constant == -float("inf") else
                   "the evidence has probability zero" if evidence else "every configuration has a zero factor")
            raise ZeroPartitionError(f"{args.model}: Z = 0 ({why})")
        os.makedirs(args.out, exist_ok=True)
        write_pr(path, log_z)
        summary = f"log10 Z = {log_z / 2.302585092994046:.10g}"
    else:
        _, marg = cond.graph.solve(memory_cap=cap)
        os.makedirs(args.out, exist_ok=True)
        write_mar(path, cond.expand_marginals(marg, graph.max_states), graph.cards)
        summary = f"{graph.n_vars} marginals"
    print(f"{path}: {summary} (exact: junction tree, {plan.heuristic} order, induced width {plan.width}, "
          f"{plan.total_table_entries} table entries; {len(evidence)} evidence variables; "
          f"{time.perf_counter() - start:.2f} s)")
    return 0
