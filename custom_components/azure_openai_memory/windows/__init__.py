"""Conversation windows: each agent's token-bounded buffer of its conversations, kept per
entry, read and reset by the conversation_stats and conversation_reset services and by the
Memory panel's commands."""
