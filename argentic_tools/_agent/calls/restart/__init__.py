"""After a restart: the journal's unfinished calls waited for again.

The runner hands them here; they end as any call does (:mod:`..results`).
"""
