"""Time series that automations accumulate, pure Python."""
