"""The top layer: the command line (cli.py) and the typed configs it builds and passes down (config.py)."""
