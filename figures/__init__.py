"""The figures plot.py draws, one module per figure (plus the shared run
and sample readers). Nothing here needs root or a network: everything is
read from a results directory."""
import matplotlib

matplotlib.use("Agg")
