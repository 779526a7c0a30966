"""One module per pass, named after its command-line name (`fuse-ops` -> `fuse_ops.py`).

Modules are imported on demand by `irtool.transform.get_pass`, so start-up stays fast."""
