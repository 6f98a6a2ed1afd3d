"""The judge: hidden tests run here, in a process of the grader's, never in the learner's kernel.

``protocol`` (the typed messages between the grader, the judge and the sandbox
worker), ``process`` (the judge process itself) and ``client`` (the grader's side:
starts a judge and relays its requests to the worker).  The one place a part's
result is decided is :mod:`autograder.sandbox.verdict`; the learner's side of a request is
:mod:`autograder.checks.probe`.
"""
