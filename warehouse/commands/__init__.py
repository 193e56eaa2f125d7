"""The CLI's commands, one module each; `tracewh.cli` loads a module only when its command
runs."""
