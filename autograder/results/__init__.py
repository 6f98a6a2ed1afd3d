"""Results and their outputs: the results of a grade (``results``: Gradescope's shape),
feedback pages (``feedback``), gradebook ``exporters`` (nbgrader, Canvas, Moodle)."""
