"""Summaries of past talk (daily, weekly, monthly, era), pure Python."""
