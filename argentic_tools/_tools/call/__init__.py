"""One running call as the tool sees it.

Its context, its controls (cancellation, progress, chunks, stream credit), its line to
the caller (questions, log records), and what it returns.
"""
