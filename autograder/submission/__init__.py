"""What a source notebook or a submission *is*: notebooks and their nbgrader cells
(``notebook``), the one :class:`~autograder.submission.assignment.Assignment` with every
fact read from the source once (``assignment``), where submissions sit in nbgrader's
layout (``folders``), the restore step (``restore``) and the limits a course sets
(``limits``).  Nothing here runs a notebook."""
