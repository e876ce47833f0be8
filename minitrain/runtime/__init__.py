"""What minitrain sets up in the process: the environment switches (environment.py), malloc's
thresholds (allocator.py), numpy's float warnings kept out of minitrain's ops
(float_warnings.py), the threads a batch's chunks run on beside BLAS's (threads.py), numba's
thread pool started with a short OpenMP spin (numba_pool.py), the default dtype and device the
creation functions follow (defaults.py) and the random generators a program makes of its own
(generator.py)."""
