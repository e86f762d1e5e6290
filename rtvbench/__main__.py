"""`python -m rtvbench` is the `rtvbench` command."""

from rtvbench.cli import main

main()
