"""The grading engine: load a notebook, restore its locked cells, run it in a
sandbox, score its test cells and write the result (``check``, ``grade`` and
Gradescope share one pipeline).  Nothing here runs inside a learner's kernel
except the integrity snapshot."""
