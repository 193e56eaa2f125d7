"""`python -m tracewh.cli_main`: the CLI without the installed console script."""

from .cli import main

main()
