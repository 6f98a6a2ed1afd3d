"""Autograder for the TensorFlow-on-the-GPU course.

Checks placement, speedups, gradients, tracing and dtypes in learners'
notebooks; runs notebooks in fresh kernels; grades whole classes.
"""
from __future__ import annotations

__version__ = "0.1.0"
