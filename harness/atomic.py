"""Re-exports of spec/files.py's atomic writes (temp file then rename). New code imports spec."""
from __future__ import annotations

from spec.files import write_all, write_bytes, write_json, write_text  # noqa: F401
