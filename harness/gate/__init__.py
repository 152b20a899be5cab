"""The gate: the supervisor, its stages and child processes, the sanitizer cases, course-scale gating."""
