"""The fleet from the command line: `list`, `describe`, `watch`, `stats`, `top`, `dashboard`."""
