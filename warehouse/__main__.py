"""`python -m tracewh`: the CLI without the installed console script."""

from .entry import main

main()
