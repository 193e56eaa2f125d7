"""`python -m tracewh`: the CLI without the installed console script."""

from .cli import main

main()
