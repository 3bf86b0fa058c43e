"""`call`: one call from the terminal, its progress, content, questions and log records."""
