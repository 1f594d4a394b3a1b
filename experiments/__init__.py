"""The experiments, each one file on the contract of runner.py (the FatTree
sweep, DHFT, WiFi + 3G, the congestion-control comparisons), and what they
share: the long-flow records (longflows.py), the start-up record
(startup.py), the capacity guard (capacity/) and the staging of run
folders (staging.py)."""
