"""The figures plot.py draws, one module per figure, and what they share:
the run and sample readers (runs.py, samples.py, experiment_records.py),
drawing and saving (drawing.py), report tables (tables.py), notes
(notes.py) and each scheme's style (style.py). Nothing here needs root or a
network: everything is read from a results directory."""
import matplotlib

matplotlib.use("Agg")
