"""python3 -m guest: see guest/README.md and guest/cli.py."""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
