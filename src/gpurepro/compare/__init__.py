"""Comparing two runs (`gpurepro compare A B`): every metric both runs measured, the ratio B/A of its
central statistic with an interval over the raw reps where they exist, graded same within noise,
faster/slower (higher/lower) or not comparable; and what changed between the runs' provenance.

runs.py reads a results folder, points.py says which columns name a point, samples.py finds a point's
raw reps, grade.py grades a ratio, match.py joins the two runs, changes.py diffs their provenance,
render.py and plot.py write the page and the figure.
"""
