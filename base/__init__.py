"""The base layer: what every other layer may import, and which imports
nothing of the project and nothing outside Python's standard library, so that
`run_mptcp.sh` can check its input on a machine where nothing is installed."""
