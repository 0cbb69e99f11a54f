"""The words a judged claim ends in, how far each supports its claim, and what the judgement rests on.

They are the verdict's vocabulary: the judge (evaluate.py, judging.py) picks a result, the outcome
(outcome.py) carries it with its grade, and the report and the per-paper summary (render.py,
summary.py) count and show them. Kept apart so that each of those reads the same words from one place.

A magnitude reads *consistent* (its interval inside the accepted range), *inconsistent* (outside) or
*inconclusive* (the interval straddles an end; the outcome adds "at n processes"); against a range the
paper states across its models and GPUs, a figure wholly above the range reads *above the paper's range*.
An inconclusive reading neither holds nor partly holds: it waits for more processes. *Partly held* means
the direction holds and the magnitude is inconsistent, or above the paper's range. A direction whose
magnitude is not testable here is shown but not counted: it tests no figure the paper found. A magnitude
resting on a host-paced figure whose interval over machines does not resolve it is *host-dependent*: its
direction is judged, its magnitude shown and not counted (it measures the host as much as the GPU).
"""

from __future__ import annotations

# The result of one claim.
WITHIN = "consistent"
OUTSIDE = "inconsistent"
DIRECTION_WITHIN = "direction holds, magnitude consistent"
DIRECTION_OUTSIDE = "direction holds, magnitude inconsistent"
DIRECTION_UNTESTED = "direction holds, magnitude not testable here"
DIRECTION_UNRESOLVED = "direction holds, magnitude inconclusive"
# a magnitude resting on a host-paced figure, unresolved over machines: more processes would not settle it
DIRECTION_HOST = "direction holds, magnitude host-dependent"
HOST_DEPENDENT = "host-dependent"
# a range the paper states across its models and GPUs, exceeded: news a reviewer must see, not a match
DIRECTION_ABOVE_RANGE = "direction holds, magnitude above the paper's range"
ABOVE_RANGE = "above the paper's range"
DIRECTION_FAILS = "direction does not hold"
ORDER_HOLDS = "order holds"
ORDER_FAILS = "order does not hold"
NOT_RESOLVED = "inconclusive"
NOT_TESTABLE = "not testable here"
NOT_COMPARABLE = "not comparable"
SHOWN = "informational"
NOT_MEASURED = "not measured"
# a claim the quick plan left untested (too few sizes swept): the plan's doing, not the GPU's
NOT_MEASURED_QUICK = "not measured (quick plan)"

# The results above a range the paper states: the paper's headline line counts them.
ABOVE_RESULTS = (DIRECTION_ABOVE_RANGE, ABOVE_RANGE)

# The results that wait for more processes: the outcome says at how many processes they stand.
INCONCLUSIVE_RESULTS = (NOT_RESOLVED, DIRECTION_UNRESOLVED)

# How far each result supports its claim, for the per-paper summary. Only the first three are testable.
HELD, PARTLY, NOT_HELD = "held", "partly held", "not held"
UNRESOLVED, UNTESTABLE, INFO, UNMEASURED = "inconclusive", "not testable", "informational", "not measured"
TESTABLE = (HELD, PARTLY, NOT_HELD)
GRADES = (HELD, PARTLY, NOT_HELD, UNRESOLVED, UNTESTABLE, INFO, UNMEASURED)  # in the order shown
GRADE_OF = {
    WITHIN: HELD,
    DIRECTION_WITHIN: HELD,
    # a direction alone tests no magnitude the paper found: shown, not counted toward "reproduced"
    DIRECTION_UNTESTED: UNTESTABLE,
    # the host sets the magnitude: shown beside the host's pace, not counted
    DIRECTION_HOST: UNTESTABLE,
    HOST_DEPENDENT: UNTESTABLE,
    ORDER_HOLDS: HELD,
    DIRECTION_OUTSIDE: PARTLY,
    DIRECTION_ABOVE_RANGE: PARTLY,
    ABOVE_RANGE: PARTLY,
    OUTSIDE: NOT_HELD,
    DIRECTION_FAILS: NOT_HELD,
    ORDER_FAILS: NOT_HELD,
    NOT_RESOLVED: UNRESOLVED,
    DIRECTION_UNRESOLVED: UNRESOLVED,
    NOT_TESTABLE: UNTESTABLE,
    NOT_COMPARABLE: UNTESTABLE,
    SHOWN: INFO,
    NOT_MEASURED: UNMEASURED,
    NOT_MEASURED_QUICK: UNMEASURED,
}

# What a judgement rests on, beside a relative claim's own kind (claims.RELATIVE): the paper's GPU, a
# scaling through measured reference rates, a figure carried over unscaled, or none (off the paper's GPU).
EXACT, SCALED, TRANSFERRED, OFF_PAPER = "exact", "scaled", "unscaled", "off the paper's GPU"
