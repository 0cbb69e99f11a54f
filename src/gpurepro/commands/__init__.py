"""One module per `gpurepro` subcommand; each exposes register(subparsers)."""
