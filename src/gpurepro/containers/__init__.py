"""Containers: the project's image (containers/Dockerfile) and the engines GPU jobs run in.

`engine` finds out which engine answers here (Docker through its Python SDK, Apptainer by its binary),
`build` builds the Docker image with streamed progress, and `argv` writes the exact `docker run` and
`apptainer exec` command lines a job runs under. The workflow (workflow/rules/containers.smk) and
`gpurepro container` use them.
"""
