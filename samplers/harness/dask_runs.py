"""A study's runs on a Dask cluster: submitted to the current ``distributed.Client``, yielded as they finish.

``Study.run(backend="dask")`` (and ``mcsa bench run --dask ADDRESS``) send their runs here rather than
through joblib's Dask backend, which waits forever for a task that the scheduler gave up on: joblib
1.6's backend sets the error on its own future but never calls the completion callback its result
generator waits for, so a run whose worker died more often than ``distributed.scheduler.allowed-failures``
allows hung the study.  Here a worker that dies is the scheduler's business: it reruns the lost
runs on the live workers (up to ``allowed-failures`` deaths per run), and a run it gives up on raises
``distributed.KilledWorker`` from the generator; the study has then stored every run that finished,
and a resume runs the rest.

Each problem and estimator object is sent once, as the result of a task of its own that the runs
depend on: if the worker holding it dies, the scheduler recomputes it (data scattered with
``Client.scatter`` would be lost with its worker).
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, Iterator

_PLAIN = (bool, int, float, str, bytes, tuple, type(None))


def _identity(obj: Any) -> Any:
    return obj


def dask_runs(func: Callable[..., Any], calls: Iterable[tuple], client: Any = None) -> Iterator[Any]:
    """Submit ``func(*args)`` for every ``args`` of ``calls`` to the Dask cluster (at once, so that a missing
    client is reported before anything runs) and return a generator of the results as they finish.

    Parameters
    ----------
    func : callable
        A picklable function (the study's ``_execute``).
    calls : iterable of tuple
        Positional arguments of each call; arguments that are not plain values (problems, estimators)
        are sent to the cluster once per object and shared by the calls.
    client : distributed.Client, optional
        Default: the current client (:func:`distributed.get_client`).

    Returns
    -------
    generator
        The results in completion order.  Closing it (or an error) cancels the runs not yet collected.

    Raises
    ------
    ImportError
        Without dask.distributed.
    ValueError
        Without a running client.
    distributed.KilledWorker
        From the generator, when the scheduler gives up on a run whose workers died.
    """
    try:
        from distributed import as_completed, get_client
    except ImportError:
        raise ImportError("backend='dask' needs dask.distributed: pip install 'mcsa[dask]'") from None
    if client is None:
        try:
            client = get_client()
        except ValueError:
            raise ValueError("backend='dask' needs a running Dask client: create distributed.Client(address) first "
                             "(mcsa bench run --dask ADDRESS does)") from None
    token = uuid.uuid4().hex
    shared: dict[int, tuple[Any, Any]] = {}  # id(object) -> (object, its future); the object keeps the id alive

    def send(arg: Any) -> Any:
        if isinstance(arg, _PLAIN):
            return arg
        if id(arg) not in shared:
            shared[id(arg)] = (arg, client.submit(_identity, arg, key=f"mcsa-object-{len(shared)}-{token}",
                                                  pure=False))
        return shared[id(arg)][1]

    futures = [client.submit(func, *map(send, args), key=f"mcsa-run-{i}-{token}", pure=False)
               for i, args in enumerate(calls)]
    return _collect(client, futures, as_completed, [future for _, future in shared.values()])


def _collect(client: Any, futures: list, as_completed: Callable, held: list) -> Iterator[Any]:
    """Yield the runs' results as they finish; cancel what is left when closed or on an error."""
    try:
        for _, result in as_completed(futures, with_results=True):
            yield result
    finally:
        client.cancel(futures + held)
