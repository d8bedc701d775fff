"""Arrow columns and constants built straight from buffers (no pandas, no per-value Python).

The ground floor beside :mod:`deltalog.errors`: imports nothing else of deltalog.
"""
