"""End to end: a real Home Assistant process, driven over its REST API."""
