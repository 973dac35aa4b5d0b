"""Unit tests of memory/: plain Python, no Home Assistant."""
