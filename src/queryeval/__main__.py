"""`python -m queryeval`."""

from queryeval.cli import main

main()
