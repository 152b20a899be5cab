"""Reads results/*.json and profile/*.csv, derives figures, renders RESULTS.md."""
