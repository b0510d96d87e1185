"""Measured results: the model (what a point measured) and the SQLite store."""
