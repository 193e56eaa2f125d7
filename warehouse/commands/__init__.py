"""The CLI's commands, one module each; `warehouse.cli` loads a module only when its command
runs."""
