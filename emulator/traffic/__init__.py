"""Traffic drivers: what sends a run's flows and measures what arrived.
Empty on purpose: flowgen.py runs as its own process and must not pull in
the drivers (drivers.py names them)."""
