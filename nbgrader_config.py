"""nbgrader configuration: this repository is the course directory.

``solutions/`` is the source directory (reference solutions and hidden tests),
``exercises/`` the release directory learners open.  An instructor's own
``nbgrader generate_assignment 01_op_logs`` and ``nbgrader autograde`` work
here unchanged.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"
c.Exchange.root = "/tmp/exchange"

# Outputs are never committed; generated exercises stay byte-stable.
c.ClearOutput.enabled = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ExecutePreprocessor.timeout = 600
