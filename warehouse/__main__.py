"""`python -m tracewh`: the CLI without the installed console script."""

from .command import main

main()
