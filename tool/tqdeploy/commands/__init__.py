"""One module per CLI command; each exposes ``register(app)`` and has a line in cli.COMMANDS (name, summary)."""
