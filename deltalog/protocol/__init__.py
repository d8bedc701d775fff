"""What the Delta protocol says: actions, schema, features, properties, paths, deletion vectors.

Pure definitions and codecs, no I/O. Imports only :mod:`deltalog.errors` and
:mod:`deltalog.arrow` (and pyarrow/orjson).
"""
