"""The reproduction verdict: published and reference claims (config/expected/*.yaml) checked against the
tables of a run, each ending within tolerance, outside tolerance, not applicable on this GPU, or not
measured."""
