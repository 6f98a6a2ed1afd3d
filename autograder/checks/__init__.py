"""What exercise and test cells import: the checks a grade is made of.

Placement logs, relative speed, gradients, tracing and compilation, dtypes,
replicas, SavedModels and servers, profiler traces, hardware profiles and the
thresholds they judge against.  Every module here is protected from a
learner's patches while tests run (``autograder.sandbox.integrity``).
"""
