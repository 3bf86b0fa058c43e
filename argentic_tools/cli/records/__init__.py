"""What calls left behind: `history` (a SqliteRecorder's file) and `tasks` (a call journal)."""
