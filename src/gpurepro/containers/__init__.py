"""Containers: the project's image (containers/Dockerfile) and the engines GPU jobs run in.

`engine` finds out which engine answers here (Docker through its Python SDK, Apptainer by its binary)
and `detect` reports it; `image` builds the project's image (`build` through the Docker SDK with
streamed progress, the CA bundle pip trusts from `ca_bundle`, or an Apptainer SIF); `argv` writes the
exact `docker run` and `apptainer exec` command lines a job runs under and `job` runs a job's command
with them; `plan` is what the workflow (workflow/rules/containers.smk) hands its rules. `gpurepro
container` only parses its options and calls these.
"""
