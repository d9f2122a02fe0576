"""The thread counts of a run: the default (:func:`threads_for`, by the widest layer) and where a run's threads go,
torch's pool or NumPy's BLAS (:func:`use_threads`). :mod:`canter.algorithms.base` re-exports these names."""
from __future__ import annotations

import torch


#: CPUs from which wide networks get a second thread by default
TWO_THREADS_FROM_CPUS = 4


def threads_for(width: int, cpus: int | None = None) -> int:
    """The default thread count: 2 for layers wider than 128 units on a machine with at least
    :data:`TWO_THREADS_FROM_CPUS` CPUs (``cpus``: this process's, by default), else 1.

    Two threads measured ~6% faster for DQN's 256-unit update when the second core was idle, but a
    two-thread pool waits for its slower thread at every product: with the 2-core host busy
    (load ~3.5-4), 3,000 DQN CartPole steps took 7.8-33.8 s at two threads against 4.4-4.9 at one."""
    from canter.utils import available_cpus

    return 2 if width > 128 and (available_cpus() if cpus is None else cpus) >= TWO_THREADS_FROM_CPUS else 1


def use_threads(threads: int, numpy_products: bool) -> None:
    """Give a run's ``threads`` to torch's intra-op pool, or to NumPy's BLAS where the algorithm's
    updates multiply through NumPy (``numpy_products``, see :attr:`Algorithm.numpy_products`); the
    other pool gets one thread, so the two never spin on the same cores at once
    (:func:`canter.models.linear.set_blas_threads` has the measurements)."""
    from canter.models.linear import blas_limited, blas_threads, set_blas_threads

    blas = numpy_products and threads > 1
    torch.set_num_threads(1 if blas else threads)
    wanted = threads if blas else 1
    # numpy_products at one thread too: OpenBLAS then multiplies every size on the calling thread, so the
    # NumPy paths may take larger products (canter.models.linear._matmul_on_numpy). Otherwise nothing to
    # change unless OpenBLAS has more threads (threadpoolctl's ~10 ms stay off start-up).
    if blas_threads() != wanted or (numpy_products and not blas_limited()):
        set_blas_threads(wanted)
