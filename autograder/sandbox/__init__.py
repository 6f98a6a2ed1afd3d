"""The sandbox: the grader's host side (``host``: start a worker, converse with it, kill its
tree) and the processes it starts, each a module of its name: the ``worker`` that runs one
submission (its kernel client in ``kernel_client``), the ``kernel`` launcher, their
``isolation``, warm workers (``warm_start`` and the ``zygote``); what runs in the learner's
kernel for the grader (``integrity*``, in-kernel ``scoring``); judged parts and the one
place a part's result is decided (``judged_parts``, ``verdict``); the grader's start-up time,
told apart from the submission's (``startup``)."""
