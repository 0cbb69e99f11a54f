"""Comparing two runs (`gpurepro compare A B`): every metric both runs measured, the ratio B/A of its
central statistic (the median over a point's processes) with its interval across processes, or from the
between-process spread the project measured where a side has one process (spread.py), graded same
within noise, faster/slower (higher/lower) or not comparable; dispersions as differences B - A in their
own units; and what changed between the runs' provenance.

runs.py reads a results folder, points.py says which columns name a point, samples.py finds a point's
raw reps, spread.py reads the measured between-process spreads, hostbound.py says which figures the host
paces, grade.py grades a ratio or a difference, match.py joins the two runs, changes.py diffs their
provenance, render.py and plot.py write the page and the figure.
"""
