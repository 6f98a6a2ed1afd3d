"""Results and their outputs: the results of a grade (``results``: Gradescope's shape),
feedback pages (``feedback``), gradebook ``exporters`` (nbgrader, Canvas, Moodle) and an
nbgrader course's own gradebook (``gradebook``: its students, due dates and late penalty)."""
