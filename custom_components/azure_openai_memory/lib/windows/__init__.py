"""Conversation windows: a conversation's token-bounded messages, pure Python."""
