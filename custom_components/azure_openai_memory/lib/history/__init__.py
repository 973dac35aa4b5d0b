"""The history: the audit trail of what the agents did, in SQLite, pure Python."""
