"""The stage that puts runs into the store: measured by running a campaign (run.py, with the thermal
sampler and the soak's health checks beside it) or imported from a peer tool's output (importer.py)."""
