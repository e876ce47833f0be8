"""What minitrain sets up in the process: the environment switches (environment.py), malloc's
thresholds (allocator.py) and the threads a batch's chunks run on beside BLAS's (threads.py)."""
