"""Reading the log into a Snapshot: storage, listing, commit parsing, replay, history, checksums.

May import :mod:`deltalog.stats`, :mod:`deltalog.protocol` and below (and the
``checkpoints``/``logstores`` packages); never writers or maintenance.
"""
