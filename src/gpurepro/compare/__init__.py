"""Comparing two runs (`gpurepro compare A B`): every metric both runs measured, the ratio B/A of its
central statistic (the median over a point's processes) with its interval across processes, or from the
between-process spread the project measured where a side has one process (spread.py), graded
faster/slower (higher/lower) where the interval excludes 1, same within noise where it lies inside the
equivalence margin of its kind (margins.py), else unresolved at this spread, or not comparable;
dispersions as differences B - A in their own units; counts as counts (counts.py); the two runs'
verdicts side by side (verdicts.py); and what changed between the runs' provenance.

runs.py reads a results folder, points.py says which columns name a point, samples.py finds a point's
raw reps, spread.py reads the measured between-process spreads, hostbound.py says which figures the host
paces, grade.py grades a ratio or a difference, match.py joins the two runs, changes.py diffs their
provenance, render.py and plot.py write the page and the figure, outputs.py writes them atomically into a
folder destination.py keeps to one pair of runs.
"""
