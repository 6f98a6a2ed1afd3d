"""`python -m autograder ...` entry point."""
from autograder.cli import main

raise SystemExit(main())
