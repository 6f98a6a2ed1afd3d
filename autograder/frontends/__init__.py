"""The front ends: the one grading ``pipeline`` and the commands built on it: ``check``
(a learner's notebook), ``grade`` (a class, its workers fed by ``work_queue``),
``gradescope``, ``distributed_grade`` (a Dask cluster) and ``doctor``."""
