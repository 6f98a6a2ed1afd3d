"""Tools that build the course rather than grade it: the benchmark pairs and
the ``bench`` recorder, the roofline probes, the recorded-results files the
book reads, and the release of exercises from solutions."""
